"""The source's own H.264 passed on (issue 39, DESIGN.md "The source's own encoding"):
a 1080p25 camera-like H.264 file composed here (scene1080: scikit-image's photos, no
B-frames, as IP cameras send) is served as a file source. An H.264 /ws viewer must get
the file's own pictures, bit for bit (decoded with FFmpeg, compared with the file's own
decoding: a re-encoded picture would differ), each access unit carrying its own frame's
SEI; nothing is encoded on the server. A joiner on a stream whose keyframes are 8 s
apart gets the newest keyframe at once and the units since (a catch-up notice first).
A stream with B-frames cannot be passed on: it is encoded here as before."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time

import pytest

from conftest import HOST
from h264 import H264Log, decode_all, nal_units, receive_h264, sightline_json, sightline_seis
import scene1080
from test_clips import video  # noqa: F401  (the comings-and-goings MJPEG video and its template, a fixture)

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True

av = pytest.importorskip("av", reason="PyAV not installed (pip install av, Tests/requirements.txt)")
np = pytest.importorskip("numpy")

FRAMES = 50  # 2 s of the scene, looped by the file source


def luma_hash(picture) -> str:
    plane = picture.planes[0]
    rows = np.frombuffer(plane, np.uint8).reshape(picture.height, plane.line_size)[:, :picture.width]
    return hashlib.sha1(rows.tobytes()).hexdigest()


def without_sightline_sei(access_unit: bytes) -> bytes:
    """The access unit with the Sightline SEI unit taken out (start code included)."""
    for kind, unit in nal_units(access_unit):
        if kind == 6 and sightline_json(unit) is not None:
            at = access_unit.index(unit)
            start = at - 4 if access_unit[at - 4:at] == b"\x00\x00\x00\x01" else at - 3
            return access_unit[:start] + access_unit[at + len(unit):]
    return access_unit


@pytest.fixture(scope="module")
def camera_video(tmp_path_factory):
    """The scene as a camera sends it (no B-frames, a keyframe every second), and the
    luma hash of each of its pictures as FFmpeg decodes the file itself."""
    path = scene1080.write_video(tmp_path_factory.mktemp("passthrough") / "camera.mp4", frames=FRAMES,
                                 keyint=25, bframes=0)
    with av.open(str(path)) as container:
        hashes = [luma_hash(picture) for picture in container.decode(video=0)]
    assert len(hashes) == FRAMES
    return path, hashes


def wait_passing_on(server, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = server.state()
        if state["source"]["state"] == "live" and state["video"]["renditions"][0].get("passedOnUnits", 0) > 0:
            return state
        time.sleep(0.1)
    pytest.fail(f"the server never passed a unit on: {json.dumps(server.state()['source'])}\n{server.describe()}")


def test_h264_viewers_get_the_cameras_own_pictures_each_with_its_sei(sightline, camera_video):
    path, reference = camera_video
    server = sightline(source=f"file:{path}")
    state = wait_passing_on(server)
    assert state["source"]["passedOn"] == "h264"
    with server.ws("/ws?video=h264") as ws:
        log = receive_h264(ws, H264Log(), frames=3 * FRAMES)
    assert not log.errors, log.errors[:5]
    metas = [meta for meta, _, _ in log.frames]
    units = [unit for _, unit, _ in log.frames]
    assert metas[0]["video"]["key"], "a stream starts on a keyframe"
    seqs = [meta["seq"] for meta in metas]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "every access unit goes out, in order"

    # Each unit carries exactly one Sightline SEI, before its first slice, naming its own frame
    # (or, for a frame not analysed, saying whose boxes it carries), and the same boxes as its JSON.
    for meta, unit in zip(metas, units):
        seis, first_slice = sightline_seis(unit)
        assert len(seis) == 1 and seis[0][0] < first_slice, meta["seq"]
        sei = seis[0][1]
        assert sei["seq"] == meta["seq"] and sei["width"] == 1920 and sei["height"] == 1080
        assert sei["detections"] == meta["detections"]
        assert sei.get("boxesFrom") == meta.get("boxesFrom")
        if "boxesFrom" in meta:
            assert meta["boxesFrom"] < meta["seq"]

    # The pictures are the file's own: frame seq N is the file's picture (N - 1) mod FRAMES, bit for bit.
    pictures, problems = decode_all(units)
    assert not problems, problems[:5]
    assert len(pictures) == len(units)
    for meta, picture in zip(metas, pictures):
        assert luma_hash(picture) == reference[(meta["seq"] - 1) % FRAMES], f"seq {meta['seq']} was not the camera's picture"

    # Nothing encoded: the units are the file's bytes plus the SEI.
    video = server.state()["video"]
    main = video["renditions"][0]
    assert main["passedOn"] is True and main["encodeMs"]["count"] == 0, main
    assert main["passedOnUnits"] >= len(units)
    from test_h264_stream import metric, metrics
    text = metrics(server)
    passed = metric(text, "sightline_video_passed_on_total", '{rendition="main",analysed="true"}') \
        + metric(text, "sightline_video_passed_on_total", '{rendition="main",analysed="false"}')
    assert passed >= len(units)
    unanalysed = [meta for meta in metas if "boxesFrom" in meta]
    print(f"\n{len(units)} units passed on, {len(unanalysed)} of frames not analysed (their boxes named by boxesFrom)")
    with av.open(str(path)) as container:
        sizes = [packet.size for packet in container.demux(video=0) if packet.size]
    stripped = [len(without_sightline_sei(unit)) for unit in units]
    # Annex B start codes replace 4-byte lengths one for one; keyframes get SPS and PPS.
    deltas = [(meta["seq"] - 1) % FRAMES for meta in metas if not meta["video"]["key"]]
    for meta, size in zip(metas, stripped):
        if not meta["video"]["key"]:
            assert size == sizes[(meta["seq"] - 1) % FRAMES], meta["seq"]
    assert deltas


def test_a_joiner_starts_at_an_old_keyframe_and_catches_up(sightline, tmp_path):
    """Keyframes 8 s apart (a 12 s file: keyframes at 0 and 8 s): a viewer joining 3-7 s
    after one gets it at once, with every unit since, and then the live stream."""
    path = tmp_path / "sparse.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-t", "12",
                    "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-bf", "0", "-g", "200",
                    "-keyint_min", "200", "-sc_threshold", "0", "-pix_fmt", "yuv420p", str(path)],
                   check=True, timeout=120)
    server = sightline(source=f"file:{path}")
    wait_passing_on(server)
    # Join 3 s or more after the file's first keyframe (captured counts frames since start).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        captured = server.state()["frames"]["captured"]
        if 75 <= captured % 300 < 150:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the file source never reached 3 s into its loop")
    opened = time.monotonic()
    with server.ws("/ws?video=h264") as ws:
        notice = json.loads(ws.recv(timeout=10))
        first_key = time.monotonic()
        assert notice["type"] == "catchUp", notice
        log = receive_h264(ws, H264Log(), frames=notice["frames"] + 25)
    assert not log.errors, log.errors[:5]
    metas = [meta for meta, _, _ in log.frames]
    assert metas[0]["seq"] == notice["seq"] and metas[0]["video"]["key"]
    assert (metas[0]["seq"] - 1) % 300 in (0, 200), "the newest keyframe the camera sent"
    assert notice["frames"] >= 70, notice
    key_at = log.frames[0][2] - opened
    print(f"catch-up of {notice['frames']} frames; notice after {first_key - opened:.3f} s, keyframe after {key_at:.3f} s")
    seqs = [meta["seq"] for meta in metas]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "the catch-up and the live frames after it, none skipped"
    assert seqs[-1] > notice["through"], "live frames follow the catch-up"
    pictures, problems = decode_all([unit for _, unit, _ in log.frames])
    assert not problems and len(pictures) == len(metas), problems[:5]


def test_a_stream_with_b_frames_is_encoded_here(sightline, tmp_path):
    """B-frames reorder pictures, so a unit cannot go out beside its own picture: encoded as before."""
    path = scene1080.write_video(tmp_path / "bframes.mp4", frames=25, keyint=25, bframes=3)
    server = sightline(source=f"file:{path}")
    server.wait_live()
    assert "passedOn" not in server.state()["source"]
    with server.ws("/ws?video=h264") as ws:
        log = receive_h264(ws, H264Log(), frames=20)
    assert not log.errors
    pictures, problems = decode_all([unit for _, unit, _ in log.frames])
    assert not problems and len(pictures) == 20
    main = server.state()["video"]["renditions"][0]
    assert main["passedOn"] is False and main["encodeMs"]["count"] >= 20, main


def picture_index(picture) -> int:
    from PIL import Image
    gray = picture.to_ndarray(format="gray")
    return scene1080.read_index(Image.fromarray(gray))


def test_an_rtsp_cameras_own_video_reaches_viewers_clips_and_a_relay(sightline, tmp_path, camera_video):
    """gst-rtsp-server hands the file's H.264 out as a camera does (no re-encoding). The
    viewer, an event's clip (capped at 5 s, so complete) and an nginx-rtmp relay all get
    the camera's own pictures, bit for bit, 1920x1080, with the SEI."""
    from rtsp_server import RtspServer
    from relay import NginxRTMP
    from clipfile import read_clip

    path, reference = camera_video
    pictures_dir = scene1080.write_pictures(tmp_path / "pictures")
    config = tmp_path / "sightline.yaml"
    config.write_text("events:\n  minSeconds: 0.5\n  clips: true\n  preCaptureSeconds: 1\n  maxClipSeconds: 5\n")
    relay = NginxRTMP(tmp_path / "nginx").start()
    try:
        with RtspServer("copy", tmp_path / "rtsp", name="cam", video=path) as camera:
            server = sightline("--config", config, "--template", f"{pictures_dir['template']}=coffee",
                               "--publish", relay.url(), source=camera.url)
            state = wait_passing_on(server)
            assert state["source"]["passedOn"] == "h264" and state["source"]["width"] == 1920

            with server.ws("/ws?video=h264") as ws:
                log = receive_h264(ws, H264Log(), frames=60)
            assert not log.errors, log.errors[:5]
            pictures, problems = decode_all([unit for _, unit, _ in log.frames])
            assert not problems and len(pictures) == 60, problems[:5]
            for picture in pictures:
                assert luma_hash(picture) == reference[picture_index(picture)], "a viewer's picture was not the camera's"
            boxed = [meta for meta, _, _ in log.frames if any(d.get("label") == "coffee" for d in meta["detections"])]
            assert len(boxed) >= 50, "the template is boxed on the frames"

            # The relay: its readers get the camera's pictures with the SEI.
            container = av.open(relay.url(), timeout=10)
            relayed, with_sei = 0, 0
            from h264 import length_prefixed_units
            for packet in container.demux(container.streams.video[0]):
                if not packet.size:
                    continue
                if any(kind == 6 and sightline_json(unit) is not None for kind, unit in length_prefixed_units(bytes(packet))):
                    with_sei += 1
                for picture in packet.decode():
                    assert (picture.width, picture.height) == (1920, 1080)
                    assert luma_hash(picture) == reference[picture_index(picture)], "a relayed picture was not the camera's"
                    relayed += 1
                if relayed >= 40:
                    break
            container.close()
            assert relayed >= 40 and with_sei >= relayed

            # The event's clip: capped at 5 s, so complete while the template stays in view.
            deadline = time.monotonic() + 30
            clip_event = None
            while time.monotonic() < deadline and clip_event is None:
                events = json.loads(server.get("/api/events")[2])["events"]
                clip_event = next((e for e in events if (e.get("clip") or {}).get("complete")), None)
                time.sleep(0.2)
            assert clip_event, f"no complete clip: {events}"
            frames = read_clip(server.data_dir / "events" / f"{clip_event['id']}.mp4")
            assert frames and frames[0].keyframe and len(frames) >= 100
            assert all(isinstance(frame.sei, dict) for frame in frames), "every clip frame has exactly one Sightline SEI"
            seqs = [frame.sei["seq"] for frame in frames]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "every unit of the camera's, in order"
            with av.open(str(server.data_dir / "events" / f"{clip_event['id']}.mp4")) as clip:
                decoded = list(clip.decode(video=0))
            assert len(decoded) == len(frames)
            for picture in decoded:
                assert (picture.width, picture.height) == (1920, 1080)
                assert luma_hash(picture) == reference[picture_index(picture)], "a clip's picture was not the camera's"
            main = server.state()["video"]["renditions"][0]
            assert main["encodeMs"]["count"] == 0, "nothing was encoded"
    finally:
        relay.stop()


def test_frames_the_pipeline_did_not_analyse_still_go_out_with_boxes_named_by_their_frame(sightline, camera_video):
    """A pipeline slowed to 100 ms a frame (a test hook) takes about one frame in three at 25 fps:
    the others are superseded in its mailbox. Every access unit still goes out, in order, and
    decodes; a frame not analysed carries the boxes of the newest analysed one before it,
    which it names (`boxesFrom`), in its JSON and its SEI."""
    path, reference = camera_video
    server = sightline("--debug-stage-delay-ms", "100", source=f"file:{path}")
    wait_passing_on(server)
    with server.ws("/ws?video=h264") as ws:
        log = receive_h264(ws, H264Log(), frames=75)
    assert not log.errors, log.errors[:5]
    metas = [meta for meta, _, _ in log.frames]
    seqs = [meta["seq"] for meta in metas]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "every unit, analysed or not, in order"
    analysed = {meta["seq"]: meta for meta in metas if "boxesFrom" not in meta}
    carried = [meta for meta in metas if "boxesFrom" in meta]
    assert len(carried) >= 25 and len(analysed) >= 10, (len(carried), len(analysed))
    for meta in carried:
        assert meta["boxesFrom"] < meta["seq"]
        source = analysed.get(meta["boxesFrom"])
        if source is not None:
            assert meta["detections"] == source["detections"], "the boxes are those of the frame named"
        sei = sightline_json(next(u for kind, u in nal_units(log.frames[seqs.index(meta["seq"])][1])
                                  if kind == 6 and sightline_json(u) is not None))
        assert sei["boxesFrom"] == meta["boxesFrom"] and sei["seq"] == meta["seq"]
    pictures, problems = decode_all([unit for _, unit, _ in log.frames])
    assert not problems and len(pictures) == len(metas), problems[:5]
    for meta, picture in zip(metas, pictures):
        assert luma_hash(picture) == reference[(meta["seq"] - 1) % FRAMES]
    drops = server.state()["drops"]
    print(f"\n{len(carried)} of {len(metas)} frames not analysed; drops {drops}")


def test_an_mjpeg_sources_own_jpegs_reach_jpeg_viewers_and_the_mjpeg_stream_unchanged(sightline, tmp_path):
    """An MJPEG file (as a UVC camera's MJPEG, or an MJPEG stream): the JPEG of frame seq N
    that /ws and /stream.mjpg send is the file's own frame (N - 1) mod its length, byte for
    byte, and the server encodes no JPEG at all."""
    from conftest import read_mjpeg_parts
    path = tmp_path / "camera.avi"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-frames:v", "40",
                    "-c:v", "mjpeg", "-q:v", "4", str(path)], check=True, timeout=120)
    with av.open(str(path)) as container:
        own = [bytes(packet) for packet in container.demux(video=0) if packet.size]
    assert len(own) == 40
    server = sightline(source=f"file:{path}")
    server.wait_live()
    assert server.state()["source"]["passedOn"] == "mjpeg"
    from conftest import FrameLog, receive_frames
    with server.ws("/ws") as ws:
        log = receive_frames(ws, FrameLog(), pairs=50)
    assert len(log.pairs) >= 50
    for meta, jpeg, _, _ in log.pairs:
        assert jpeg == own[(meta["seq"] - 1) % 40], f"seq {meta['seq']}: not the source's own JPEG"
        assert (meta["width"], meta["height"]) == (1280, 720)
    status, _, _, parts = read_mjpeg_parts(server.port, "/stream.mjpg", nparts=10)
    assert status == 200 and len(parts) == 10
    assert all(jpeg in own for _, jpeg in parts), "an MJPEG part was not the source's own JPEG"
    assert server.state()["stages"]["encode"]["count"] == 0, "no JPEG was encoded"


@pytest.mark.parametrize("codec", ["mjpeg", "mpeg4"])
def test_clips_of_an_mjpeg_source_cost_no_encoder_between_events(sightline, tmp_path, video, testdata, codec):
    """Between events the H.264 sink keeps an MJPEG source's own JPEGs instead of encoding
    them (mpeg4: a source with no encoding to pass on, whose frames it keeps as JPEGs it
    makes); an event's clip still starts its pre-capture (3 s) before the event, from an IDR,
    with every frame's SEI: the kept JPEGs are encoded once the clip wants them."""
    from test_clips import listed, make_video, server_args, wait_for
    from clipfile import read_clip
    # The comings-and-goings video with 5 s before the template comes (not 1.5): the look before
    # any event has 3.5 s to be taken in however slowly the machine answers (a 0.5 s window
    # once failed), and the first event has its whole pre-capture before it.
    source, _ = make_video(tmp_path, testdata, name="late-template.avi", head_seconds=5.0)
    if codec != "mjpeg":
        made = tmp_path / f"late-template-{codec}.avi"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-c:v", codec, "-q:v", "2", str(made)],
                       check=True, timeout=120)
        source = made
    server = sightline(*server_args(tmp_path, video), source=f"file:{source}")
    server.wait_live()
    assert server.state()["source"].get("passedOn") == ("mjpeg" if codec == "mjpeg" else None), server.state()["source"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server.state()["frames"]["captured"] < 10:
        time.sleep(0.05)
    early = server.state()
    assert 10 <= early["frames"]["captured"] < 45 and not listed(server), "too late to look before the first event"
    assert early["video"]["renditions"][0]["encodeMs"]["count"] == 0, "nothing encoded before any event"
    # The template's event has 5 s of the stream before it to pre-capture.
    first = wait_for(lambda: next((e for e in listed(server) if e["label"] == "logo"
                                   and (e.get("clip") or {}).get("complete")), None),
                     40, "a complete clip of the template's event", poll=0.25)
    clip = first["clip"]
    assert clip["start"] <= first["startTime"] - 3.0 + 0.11, (clip["start"], first["startTime"])
    frames = read_clip(server.data_dir / "events" / f"{first['id']}.mp4")
    assert frames[0].idr and all(isinstance(f.sei, dict) for f in frames)
    seqs = [f.sei["seq"] for f in frames]
    # Every frame the pipeline processed is in the clip: the H.264 sink lost none (its mailbox
    # rides out the stall of encoding the kept JPEGs). A frame the pipeline itself dropped
    # (late, on a busy machine) never reached a sink, so it may be missing.
    state = server.state()
    dropped = sum(state.get("drops", {}).get(k, 0) for k in ("late", "superseded", "error"))
    missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs))
    assert seqs == sorted(set(seqs)), "in order, none twice"
    assert len(missing) <= dropped, ("the pre-capture and the event: frames lost", missing, state.get("drops"))
    assert state["sinks"]["h264"]["skipped"] == 0, state["sinks"]["h264"]
    print(f"clip {len(seqs)} frames, {len(missing)} missing, pipeline drops {dropped}")
    with av.open(str(server.data_dir / "events" / f"{first['id']}.mp4")) as container:
        assert len(list(container.decode(video=0))) == len(frames)
