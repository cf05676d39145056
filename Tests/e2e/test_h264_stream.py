"""/ws?video=h264 (DESIGN.md) against the real server: each frame's JSON then
its access unit, decoded in order by FFmpeg (PyAV) with no error, the SEI in
each equal to the frame's JSON detections; the query checked before the
upgrade; a viewer joining mid-stream starts on a forced keyframe; a viewer on
a slow link (a throttling proxy on loopback) keeps clean pictures at a usable
rate; a stalled viewer slows no one; the encoder runs only while watched."""

import json
import time
from pathlib import Path

import pytest

from conftest import HOST, http_get, metric, ws_connect, ws_handshake_raw
from h264 import H264Log, decode_all, receive_h264, sightline_seis
from throttle import ThrottledProxy

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True

av = pytest.importorskip("av", reason="PyAV not installed (pip install av, Tests/requirements.txt)")


def video_config(tmp_path: Path, **video) -> str:
    path = tmp_path / "video.yaml"
    path.write_text("video:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in video.items()))
    return str(path)


def state(server) -> dict:
    status, _, body = http_get(server.port, "/api/state")
    assert status == 200
    return json.loads(body)


def wait_state(server, ready, what: str, timeout: float = 15.0) -> dict:
    """The first /api/state for which `ready(state)` holds (polled, bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        current = state(server)
        if ready(current):
            return current
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s; last state {current}"
        time.sleep(0.1)


def metrics(server) -> str:
    status, _, body = http_get(server.port, "/metrics")
    assert status == 200
    return body.decode()


def upgrade_status(port: int, path: str) -> tuple[int, bytes]:
    """The status and body a WebSocket handshake for `path` gets."""
    import socket, base64, os
    s = socket.create_connection((HOST, port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    if status != 101:
        s.settimeout(2)
        try:
            while chunk := s.recv(4096):
                body += chunk
        except OSError:
            pass
    s.close()
    return status, body


def check_frames(log: H264Log):
    """The wire contract on every frame received."""
    assert not log.errors, log.errors[:5]
    frames = log.frames
    assert frames, "no frames"
    assert frames[0][0]["video"]["key"], "the stream must start on a keyframe"
    seqs = [meta["seq"] for meta, _, _ in frames]
    assert seqs == sorted(set(seqs)), "seq must only increase"
    for meta, unit, _ in frames:
        assert "jpegBytes" not in meta
        video = meta["video"]
        assert video["format"] == "h264" and video["bytes"] == len(unit)
        if video["key"]:
            assert video["codec"].startswith("avc1.")
        else:
            assert "codec" not in video
        found, first_slice = sightline_seis(unit)
        assert len(found) == 1, f"seq {meta['seq']}: {len(found)} Sightline SEIs"
        index, boxes = found[0]
        assert index < first_slice
        assert (boxes["seq"], boxes["capturedAt"], boxes["width"], boxes["height"]) == \
            (meta["seq"], meta["capturedAt"], meta["width"], meta["height"])
        assert boxes["detections"] == meta["detections"], f"seq {meta['seq']}: SEI boxes differ from the JSON"


@pytest.mark.parametrize("source,count", [("demo", 150), ("vtest", 100)])
def test_frames_decode_in_order_with_their_boxes(sightline, testdata, source, count):
    """150 frames of the demo (about 6 s), 100 of vtest.avi (10 fps): each access unit decoded in
    order, its SEI boxes the frame's JSON detections."""
    spec = "demo" if source == "demo" else f"file:{testdata / 'video' / 'vtest.avi'}"
    server = sightline(source=spec)
    with ws_connect(server.port, "/ws?video=h264") as ws:
        started = time.monotonic()
        log = receive_h264(ws, H264Log(), frames=count, timeout=10)
    print(f"{source}: {len(log.frames)} access units in {time.monotonic() - started:.1f} s")
    check_frames(log)
    pictures, problems = decode_all([unit for _, unit, _ in log.frames])
    assert problems == []
    assert len(pictures) == len(log.frames)
    width, height = log.frames[0][0]["width"], log.frames[0][0]["height"]
    assert {(p.width, p.height) for p in pictures} == {(width & ~1, height & ~1)}
    if source == "demo":
        # The demo's template and face: the boxes compared above are real ones.
        assert sum(1 for meta, _, _ in log.frames if meta["detections"]) > len(log.frames) * 0.8
    assert len(log.frames) >= count, f"{len(log.frames)} frames"


def test_video_parameter_is_checked_before_the_upgrade(sightline, tmp_path):
    server = sightline()
    for path in ("/ws?video=vp9", "/ws?video=H264", "/ws?video=h264&rendition=huge", "/ws?video="):
        status, body = upgrade_status(server.port, path)
        assert status == 400, path
        assert b"video" in body or b"rendition" in body
    assert upgrade_status(server.port, "/ws?video=h264")[0] == 101
    assert upgrade_status(server.port, "/ws?video=h264&rendition=low")[0] == 101
    with ws_connect(server.port, "/ws?video=jpeg") as ws:
        meta = json.loads(ws.recv(timeout=10))
        assert len(ws.recv(timeout=10)) == meta["jpegBytes"] and "video" not in meta
    off = sightline("--config", video_config(tmp_path, h264=False))
    status, body = upgrade_status(off.port, "/ws?video=h264")
    assert status == 400 and b"off" in body


def test_a_viewer_joining_mid_stream_starts_on_a_forced_keyframe(sightline, tmp_path):
    # Keyframes every 10 s: a joiner that waited for a scheduled one would wait seconds.
    server = sightline("--config", video_config(tmp_path, keyframeSeconds=10))
    with ws_connect(server.port, "/ws?video=h264") as first:
        receive_h264(first, H264Log(), seconds=2)
        waits = []
        for _ in range(5):
            started = time.monotonic()
            with ws_connect(server.port, "/ws?video=h264") as joiner:
                log = receive_h264(joiner, H264Log(), frames=10)
            waits.append(log.frames[0][2] - started)
            check_frames(log)
            assert decode_all([u for _, u, _ in log.frames])[1] == []
            receive_h264(first, H264Log(), seconds=0.5)
        video = state(server)["video"]
    print(f"first access unit after connecting: {', '.join(f'{w * 1000:.0f} ms' for w in waits)}")
    # Not the next scheduled keyframe, up to 10 s away: each joiner asked for one (the count below) and
    # got it within half the interval, a bound no noisy machine comes near (the figure, 0.5 s,
    # is measured in the note).
    assert max(waits) < 5.0, waits
    assert video["keyframes"]["requested"] >= 5
    assert video["viewers"]["h264"] == 1


def run_behind_proxy(server, bits_per_second, warmup, seconds):
    """Everything a viewer behind a throttled link got from its first frame, the
    index where the measured window starts, and its entry in /api/state."""
    from websockets.sync.client import connect
    import socket
    proxy = ThrottledProxy(server.port, bits_per_second)
    try:
        sock = socket.create_connection((HOST, proxy.port))
        # The Host header names the server, as it would behind a transparent link.
        with connect(f"ws://{HOST}:{server.port}/ws?video=h264", sock=sock, max_size=2**24, compression=None,
                     open_timeout=10, close_timeout=2) as ws:
            log = receive_h264(ws, H264Log(), seconds=warmup)
            window = len(log.frames)
            receive_h264(ws, log, seconds=seconds)
            viewers = state(server)["video"]["h264Viewers"]
        return log, window, viewers
    finally:
        proxy.close()


def clean_rate(log, window):
    """Every access unit since the first decodes without a problem; the pictures a
    second in the window, and the kbit/s the link carried there."""
    check_frames(log)
    pictures, problems = decode_all([unit for _, unit, _ in log.frames])
    assert problems == [], problems[:5]
    assert len(pictures) == len(log.frames)
    measured = log.frames[window:]
    span = measured[-1][2] - log.frames[window - 1][2]
    return len(measured) / span, sum(len(u) + 200 for _, u, _ in measured) * 8 / 1000 / span, pictures[window:]


def test_a_viewer_on_a_1_mbit_link_is_moved_ahead_then_to_the_low_rendition(sightline):
    """Behaviour on a link too slow for the main rendition: the server skips the viewer ahead to a
    keyframe, then moves it to the low one; every picture it got decodes clean, at 320x240 since.
    Waits for that in /api/state instead of watching for a fixed time; the rate is printed (the
    `perf` test below asserts it)."""
    from websockets.sync.client import connect
    import socket
    server = sightline()
    proxy = ThrottledProxy(server.port, 1_000_000)
    try:
        sock = socket.create_connection((HOST, proxy.port))
        with connect(f"ws://{HOST}:{server.port}/ws?video=h264", sock=sock, max_size=2**24, compression=None,
                     open_timeout=10, close_timeout=2) as ws:
            log = H264Log()
            deadline = time.monotonic() + 40
            viewers = []
            while time.monotonic() < deadline:
                receive_h264(ws, log, seconds=0.5)
                viewers = state(server)["video"]["h264Viewers"]
                if viewers and viewers[0]["skipsToKeyframe"] >= 1 and viewers[0]["rendition"] == "low":
                    break
            (viewer,) = viewers
            assert viewer["skipsToKeyframe"] >= 1 and viewer["rendition"] == "low", viewer
            # From some picture on, every one is the low rendition's: at least 30 of them.
            until = time.monotonic() + 30
            while True:
                pictures, _ = decode_all([unit for _, unit, _ in log.frames])
                sizes = [(p.width, p.height) for p in pictures]
                window = len(sizes)
                while window > 0 and sizes[window - 1] == (320, 240):
                    window -= 1
                if len(sizes) - window >= 30 or time.monotonic() > until:
                    break
                receive_h264(ws, log, frames=len(log.frames) + 15, timeout=10)
    finally:
        proxy.close()
    assert 0 < window <= len(log.frames) - 30, \
        f"not 30 pictures of the low rendition in a row after the move: sizes {sizes[-40:]}"
    fps, kbit, pictures = clean_rate(log, window)
    print(f"1 Mbit/s link: {fps:.1f} fps, {kbit:.0f} kbit/s, viewer {viewer}")
    assert {(p.width, p.height) for p in pictures} == {(320, 240)}
    text = metrics(server)
    assert metric(text, "sightline_video_skips_to_keyframe_total") >= 1
    assert metric(text, "sightline_video_frames_encoded_total", '{rendition="low"}') > 0


@pytest.mark.perf
@pytest.mark.parametrize("bits_per_second", [2_000_000, 1_000_000], ids=["2mbit", "1mbit"])
def test_perf_a_viewer_on_a_slow_link_keeps_clean_pictures_at_12_fps(sightline, bits_per_second):
    """The rate on a throttled link, over a window after a warm-up (`pytest -m perf`; make test leaves
    it out: a shared machine's rate says as much about its other work)."""
    server = sightline()
    log, window, viewers = run_behind_proxy(server, bits_per_second, warmup=8, seconds=10)
    fps, kbit, _ = clean_rate(log, window)
    print(f"{bits_per_second / 1e6:.0f} Mbit/s link: {fps:.1f} fps of clean pictures, {kbit:.0f} kbit/s, "
          f"viewers {viewers}")
    assert fps >= 12


def test_a_stalled_h264_viewer_slows_neither_jpeg_viewers_nor_the_pipeline(sightline):
    server = sightline()
    begun = state(server)["frames"]["processed"]
    stalled = ws_handshake_raw(server.port, "/ws?video=h264", rcvbuf=4096)
    try:
        # Its socket fills: the server has sent it something and then fallen 30 frames behind
        # the pipeline with it (the viewer's own frame count in /api/state stops).
        def behind(current):
            viewers = current["video"].get("h264Viewers") or []
            return (len(viewers) == 1 and viewers[0]["bytes"] > 0
                    and current["frames"]["processed"] - begun - viewers[0]["frames"] >= 30)

        before = wait_state(server, behind, "the stalled H.264 viewer 30 frames behind (its socket full)")
        with ws_connect(server.port, "/ws") as jpeg, ws_connect(server.port, "/ws?video=h264") as h264:
            started = time.monotonic()
            jpeg_frames, h264_log = 0, H264Log()
            while time.monotonic() - started < 5:
                meta = json.loads(jpeg.recv(timeout=5))
                jpeg.recv(timeout=5)
                jpeg_frames += 1
                receive_h264(h264, h264_log, frames=len(h264_log.frames) + 1)
        after = state(server)
    finally:
        stalled.close()
    processed = after["frames"]["processed"] - before["frames"]["processed"]
    captured = after["frames"]["captured"] - before["frames"]["captured"]
    print(f"5 s beside a stalled viewer: captured {captured}, processed {processed}, JPEG viewer {jpeg_frames}, "
          f"H.264 viewer {len(h264_log.frames)}")
    assert processed >= captured * 0.9
    assert jpeg_frames >= processed * 0.8
    assert len(h264_log.frames) >= processed * 0.8
    check_frames(h264_log)
    assert decode_all([u for _, u, _ in h264_log.frames])[1] == []


def test_the_encoder_runs_only_while_someone_watches_h264(sightline):
    server = sightline("--no-clips")  # clips keep the encoder on for their pre-capture
    with ws_connect(server.port, "/ws") as jpeg:
        for _ in range(20):
            jpeg.recv(timeout=5)
        idle = state(server)
    assert idle["video"]["renditions"][0]["frames"] == 0 and not idle["video"]["renditions"][0]["encoding"]
    assert idle["sinks"]["h264"]["delivered"] == 0
    assert idle["video"]["bytesPerFrame"]["jpeg"] > 0
    with ws_connect(server.port, "/ws?video=h264") as ws:
        receive_h264(ws, H264Log(), frames=30)
        watched = state(server)
    main = watched["video"]["renditions"][0]
    assert main["name"] == "main" and main["encoding"] and main["frames"] >= 30
    assert main["width"] == 640 and main["height"] == 480
    assert watched["video"]["encodeMs"]["p50"] > 0
    assert watched["video"]["bytesPerFrame"]["h264"] < watched["video"]["bytesPerFrame"]["jpeg"]
    # The viewer gone, the encoder stops: then, while the pipeline processes 15 more frames, it
    # encodes none (counted by the server, not timed).
    left = wait_state(server, lambda st: not st["video"]["renditions"][0]["encoding"], "the encoder stopped")
    later = wait_state(server, lambda st: st["frames"]["processed"] >= left["frames"]["processed"] + 15,
                       "15 more frames processed")
    assert not later["video"]["renditions"][0]["encoding"]
    assert later["video"]["renditions"][0]["frames"] == left["video"]["renditions"][0]["frames"]
    assert later["video"]["viewers"]["h264"] == 0
    text = metrics(server)
    assert metric(text, "sightline_video_encode_seconds_count", '{rendition="main"}') >= 0
    assert metric(text, "sightline_video_keyframes_total", '{rendition="main",reason="requested"}') >= 1
