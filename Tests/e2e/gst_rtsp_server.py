"""A GStreamer RTSP server (gst-rtsp-server) on 127.0.0.1 for the end-to-end tests.

Run by Debian's /usr/bin/python3 (the one that imports Debian's `gi`), never by
pytest's own interpreter; Tests/e2e/rtsp_server.py starts it and reads its stdout.

  play:    serves FILE (decoded by decodebin) as H.264 (x264enc, zerolatency) at
           rtsp://127.0.0.1:PORT/NAME; each client session plays the file once from
           its start, at its own rate.
  record:  accepts ANNOUNCE/RECORD of H.264 at rtsp://127.0.0.1:PORT/NAME and appends
           the received access units, Annex B, to OUT (every session to the same file).

stdout, one line each, flushed: `READY <port>` once listening, then `EVENT <what>`
(client-connected, media-configure, media-unprepared). Exits on SIGTERM/SIGINT, or
when its parent dies.

  /usr/bin/python3 gst_rtsp_server.py play --port 0 --name cam --file video.avi
  /usr/bin/python3 gst_rtsp_server.py record --port 0 --name in --out received.h264
"""

import argparse
import ctypes
import signal
import sys


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["play", "record"])
    parser.add_argument("--port", type=int, default=0, help="0: a free port, reported on READY")
    parser.add_argument("--name", default="stream")
    parser.add_argument("--file", help="play: the video to serve")
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
