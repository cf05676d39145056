"""A GStreamer RTSP server (gst-rtsp-server) on 127.0.0.1 for the end-to-end tests.

Run by Debian's /usr/bin/python3 (the one that imports Debian's `gi`), never by
pytest's own interpreter; Tests/e2e/rtsp_server.py starts it and reads its stdout.

  play:    serves FILE (decoded by decodebin) as H.264 (x264enc, zerolatency) at
           rtsp://127.0.0.1:PORT/NAME; each client session plays the file once from
           its start, at its own rate.
  copy:    serves the H.264 track of FILE (MP4 or MKV) as it is, without decoding or
           re-encoding it, as an IP camera hands out its encoder's stream: in real time
           and without end. At start the file is demuxed once (qtdemux or
           matroskademux, then h264parse to Annex B access units with SPS/PPS before
           every keyframe) into memory; each client session gets its own pipeline
           `appsrc ! h264parse ! rtph264pay`, fed those access units from the
           file's start over and over, their timestamps carried on across each
           loop (so the RTP clock only ever grows) and paced by the pipeline clock.
           The file must start on a keyframe; one whose motion wraps
           (scripts/make-camera-video.py) loops without a visible seam. The track is
           held in memory (30 s at 4 Mbit/s: 15 MB).
  record:  accepts ANNOUNCE/RECORD of H.264 at rtsp://127.0.0.1:PORT/NAME and appends
           the received access units, Annex B, to OUT (every session to the same file).

stdout, one line each, flushed: `READY <port>` once listening, then `EVENT <what>`
(client-connected, media-configure, media-unprepared). Exits on SIGTERM/SIGINT, or
when its parent dies.

  /usr/bin/python3 gst_rtsp_server.py play --port 0 --name cam --file video.avi
  /usr/bin/python3 gst_rtsp_server.py copy --port 0 --name cam --file camera.mp4
  /usr/bin/python3 gst_rtsp_server.py record --port 0 --name in --out received.h264
"""

import argparse
import ctypes
import signal
import sys


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def load_access_units(Gst, path, quote):
    """The H.264 track of the MP4 or MKV at `path` as Annex B access units in memory:
    ([(bytes, pts, dts, duration, is_delta)], caps, loop length in ns), timestamps
    counted from the file's first one."""
    demux = "matroskademux" if path.lower().endswith((".mkv", ".webm", ".mka")) else "qtdemux"
    pipeline = Gst.parse_launch(
        f"filesrc location={quote(path)} ! {demux} ! h264parse config-interval=-1"
        " ! video/x-h264,stream-format=byte-stream,alignment=au ! appsink name=sink sync=false")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    raw, caps = [], None
    try:
        while True:
            sample = sink.emit("try-pull-sample", 10 * Gst.SECOND)
            if sample is None:
                break
            if caps is None:
                caps = sample.get_caps()
            buffer = sample.get_buffer()
            raw.append((buffer.extract_dup(0, buffer.get_size()), buffer.pts, buffer.dts, buffer.duration,
                        bool(buffer.get_flags() & Gst.BufferFlags.DELTA_UNIT)))
        message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
        if message is not None:
            raise RuntimeError(f"cannot read {path}: {message.parse_error()[0].message}")
        if not sink.get_property("eos"):
            raise RuntimeError(f"cannot read {path}: no end of stream after 10 s without data")
    finally:
        pipeline.set_state(Gst.State.NULL)
    if not raw:
        raise RuntimeError(f"cannot read {path}: no H.264 access units")
    if raw[0][4]:
        raise RuntimeError(f"cannot serve {path}: it does not start on a keyframe")
    structure = caps.get_structure(0)
    ok, num, den = structure.get_fraction("framerate")
    frame_ns = Gst.util_uint64_scale(Gst.SECOND, den, num) if ok and num > 0 else 0
    known = [t for unit in raw for t in unit[1:3] if t != Gst.CLOCK_TIME_NONE]
    start = min(known) if known else 0
    units = []
    for index, (data, pts, dts, duration, delta) in enumerate(raw):
        if duration == Gst.CLOCK_TIME_NONE:
            duration = frame_ns
        if pts == Gst.CLOCK_TIME_NONE and dts == Gst.CLOCK_TIME_NONE:
            pts = dts = start + index * frame_ns
        units.append((data, pts - start if pts != Gst.CLOCK_TIME_NONE else pts,
                      dts - start if dts != Gst.CLOCK_TIME_NONE else dts, duration, delta))
    none = Gst.CLOCK_TIME_NONE
    end = max((max(t for t in u[1:3] if t != none) + u[3] for u in units), default=0)
    loop_ns = max(end, len(units) * frame_ns)
    if loop_ns <= 0:
        raise RuntimeError(f"cannot serve {path}: no timestamps and no frame rate")
    sys.stderr.write(f"copy: {len(units)} access units, {loop_ns / 1e9:.3f} s a loop, "
                     f"{sum(len(u[0]) for u in units) * 8e6 / loop_ns:.0f} kbit/s, caps {caps.to_string()}\n")
    return units, caps, loop_ns


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["play", "copy", "record"])
    parser.add_argument("--port", type=int, default=0, help="0: a free port, reported on READY")
    parser.add_argument("--name", default="stream")
    parser.add_argument("--file", help="play, copy: the video to serve")
    parser.add_argument("--key-int", type=int, default=10, help="play: frames between keyframes")
    parser.add_argument("--out", help="record: the Annex B file to append to")
    args = parser.parse_args()

    # Dies with the test process, so no server outlives a crashed test run.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass

    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import GLib, Gst, GstRtspServer

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    factory = GstRtspServer.RTSPMediaFactory()

    def quote(path):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'

    if args.mode == "play":
        if not args.file:
            parser.error("play needs --file")
        # x264's zerolatency cuts each picture into slices (one per thread), and x264
        # repeats SPS/PPS before every keyframe in the byte stream. rtph264pay's
        # config-interval=-1 would add SPS/PPS before *each* IDR slice, which ends the
        # access unit after the first slice: FFmpeg then decodes every keyframe as two
        # pictures (one a half-updated copy of the frame before).
        factory.set_launch(
            f"( filesrc location={quote(args.file)} ! decodebin ! videoconvert ! video/x-raw,format=I420"
            f" ! x264enc tune=zerolatency speed-preset=ultrafast bframes=0 key-int-max={args.key_int}"
            f" ! video/x-h264,stream-format=byte-stream,profile=constrained-baseline"
            f" ! rtph264pay name=pay0 pt=96 config-interval=0 )")
        factory.set_shared(False)
    elif args.mode == "copy":
        if not args.file:
            parser.error("copy needs --file")
        try:
            units, caps, loop_ns = load_access_units(Gst, args.file, quote)
        except RuntimeError as error:
            say(f"ERROR {error}")
            return 2
        # SPS/PPS are already in the stream before every keyframe (h264parse put them
        # there on loading), so rtph264pay adds none: its config-interval=-1 would add
        # them before each IDR *slice*, which breaks a camera's multi-slice keyframes
        # for FFmpeg (as in play mode above).
        factory.set_launch(
            "( appsrc name=camera is-live=false format=time stream-type=stream"
            " ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=0 )")
        factory.set_shared(False)

        def feed(media):
            appsrc = media.get_element().get_by_name("camera")
            appsrc.set_property("caps", caps)
            state = {"next": 0}

            def need_data(src, _length):
                # Called on appsrc's streaming thread while its queue runs low; the
                # sinks' clock sync, not this, sets the pace.
                for _ in range(8):
                    index = state["next"]
                    state["next"] += 1
                    loop, at = divmod(index, len(units))
                    data, pts, dts, duration, delta = units[at]
                    buffer = Gst.Buffer.new_wrapped(data)
                    offset = loop * loop_ns
                    buffer.pts = pts + offset if pts != Gst.CLOCK_TIME_NONE else pts
                    buffer.dts = dts + offset if dts != Gst.CLOCK_TIME_NONE else dts
                    buffer.duration = duration
                    if delta:
                        buffer.set_flags(Gst.BufferFlags.DELTA_UNIT)
                    if src.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
                        return

            appsrc.connect("need-data", need_data)

        factory.connect("media-configure", lambda _factory, media: feed(media))
    else:
        if not args.out:
            parser.error("record needs --out")
        factory.set_transport_mode(GstRtspServer.RTSPTransportMode.RECORD)
        # depay0 is what gst-rtsp-server feeds the announced stream into; h264parse
        # aligns to whole access units and keeps every NAL unit (SEI included).
        factory.set_launch(
            "( rtph264depay name=depay0 ! h264parse"
            " ! video/x-h264,stream-format=byte-stream,alignment=au"
            f" ! filesink location={quote(args.out)} append=true buffer-mode=unbuffered sync=false async=false )")
        factory.set_latency(50)

    def on_configure(_factory, media):
        say("EVENT media-configure")
        media.connect("unprepared", lambda *_: say("EVENT media-unprepared"))

    factory.connect("media-configure", on_configure)
    server.get_mount_points().add_factory("/" + args.name, factory)
    server.connect("client-connected", lambda *_: say("EVENT client-connected"))
    if server.attach(None) == 0:
        say(f"ERROR cannot listen on 127.0.0.1:{args.port}")
        return 2

    loop = GLib.MainLoop()
    for number in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, number, loop.quit)
    say(f"READY {server.get_bound_port()}")
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
