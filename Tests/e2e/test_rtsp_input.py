"""rtsp:// sources against a real RTSP server (GStreamer's gst-rtsp-server, from Debian;
rtsp_server.py), and that server's record mode, which the publisher tests rely on.

The video is made here: a textured background, the OpenCV logo (the template) moving
along a known path, and each frame's number written in a strip of black and white
blocks along the bottom, which survives H.264, the server's JPEG and resizing. So every
frame Sightline sends over /ws says which frame of the file it is, and the boxes read
from `rtsp://` are compared with the boxes read from `file:` frame for frame.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageStat

from conftest import (DEFAULT_TEST_DATA, REPO, FrameLog, best_detection, check_frame_pairs, iou,
                      receive_frames, server_binary, wait_until)
from h264 import nal_units, sightline_json
from rtsp_server import RtspServer, access_units, require_gst
from scenes import jpeg_bytes, textured_background, write_mjpeg_avi

WIDTH, HEIGHT, FPS = 640, 480, 15
FRAMES = 450                       # 30 s: every session in these tests ends well before
CODE_BITS = 10                     # frame number, then one even-parity bit
BLOCK_W, BLOCK_H, CODE_Y = 48, 20, HEIGHT - 26
LOGO_W = 110
MIN_IOU = 0.5                      # a box against the truth drawn into the frame
MAX_MATCH_PX = 2.0                 # the rtsp box against the file box of the same frame
MIN_HIT_RATE = 0.90
MIN_CODE_RATE = 0.95               # frames whose number reads back (parity checked)
RATE_TOLERANCE = 0.2               # frames flow at the file's rate within this share
NO_SIGNAL_BOUND_S = 15.0           # OpenCV's read timeout is 5 s; an ended TCP session is seen at once
RECONNECT_BOUND_S = 25.0           # backoff 1, 2, 4, 8 s, plus opening the stream


def logo_position(n: int) -> tuple[int, int]:
    """Where frame n shows the logo: an ellipse over the upper part of the frame, clear
    of the code strip, at 3 to 7 px a frame (so a box one frame late is 3 px off)."""
    t = 2 * math.pi * n / 160
    return int(250 + 170 * math.cos(t)), int(150 + 90 * math.sin(t))


def draw_code(image: Image.Image, n: int) -> None:
    bits = [(n >> i) & 1 for i in range(CODE_BITS)]
    bits.append(sum(bits) % 2)
    draw = ImageDraw.Draw(image)
    x0 = (WIDTH - BLOCK_W * len(bits)) // 2
    draw.rectangle((x0 - 6, CODE_Y - 4, x0 + BLOCK_W * len(bits) + 5, CODE_Y + BLOCK_H + 3), fill=(128, 128, 128))
    for i, bit in enumerate(bits):
        x = x0 + i * BLOCK_W
        draw.rectangle((x, CODE_Y, x + BLOCK_W - 1, CODE_Y + BLOCK_H - 1), fill=(255, 255, 255) if bit else (0, 0, 0))


def read_code(image: Image.Image) -> int | None:
    """The frame number in a decoded frame (any size), or None if it does not read."""
    gray = image.convert("L").resize((WIDTH, HEIGHT))
    count = CODE_BITS + 1
    x0 = (WIDTH - BLOCK_W * count) // 2
    bits = []
    for i in range(count):
        x = x0 + i * BLOCK_W
        inner = gray.crop((x + 10, CODE_Y + 5, x + BLOCK_W - 10, CODE_Y + BLOCK_H - 5))
        mean = ImageStat.Stat(inner).mean[0]
        if 70 < mean < 185:
            return None            # neither black nor white: not a code block
        bits.append(1 if mean >= 128 else 0)
    if sum(bits[:CODE_BITS]) % 2 != bits[CODE_BITS]:
        return None
    return sum(bit << i for i, bit in enumerate(bits[:CODE_BITS]))


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """(video path, template path, truth box per frame number: normalized x, y, w, h)."""
    data = Path(os.environ.get("SIGHTLINE_TEST_DATA", str(DEFAULT_TEST_DATA)))
    logo_file = data / "templates" / "opencv-logo.png"
    if not logo_file.is_file():
        pytest.skip(f"{logo_file} not found; set SIGHTLINE_TEST_DATA")
    folder = tmp_path_factory.mktemp("rtsp-scene")
    logo = Image.open(logo_file).convert("RGB")
    logo = logo.resize((LOGO_W, int(LOGO_W * logo.height / logo.width)))
    template = folder / "logo.png"
    logo.save(template)
    background = textured_background(WIDTH, HEIGHT)
    jpegs, truth = [], []
    for n in range(FRAMES):
        image = background.copy()
        x, y = logo_position(n)
        image.paste(logo, (x, y))
        draw_code(image, n)
        jpegs.append(jpeg_bytes(image, quality=80))
        truth.append({"x": x / WIDTH, "y": y / HEIGHT, "w": logo.width / WIDTH, "h": logo.height / HEIGHT})
    video = folder / "moving-logo.avi"
    write_mjpeg_avi(video, jpegs, WIDTH, HEIGHT, FPS)
    return video, template, truth


def frames_by_code(server, *, until_code: int, timeout: float, at_least: int = 30):
    """Reads /ws until a frame numbered `until_code` or later (or `timeout`). Returns
    the log and [(code or None, meta, receive time)] in arrival order."""
    log = FrameLog()
    seen = []
    deadline = time.monotonic() + timeout
    with server.ws() as ws:
        for _ in range(10000):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            count = len(log.pairs)
            receive_frames(ws, log, pairs=count + 1, timeout=left)
            if len(log.pairs) == count:
                break
            meta, jpeg, t_json, _ = log.pairs[-1]
            code = read_code(Image.open(io.BytesIO(jpeg)))
            seen.append((code, meta, t_json))
            if code is not None and code >= until_code and len(seen) >= at_least:
                break
    return log, seen


def boxes(seen, truth, who):
    """{code: box} of the logo, and how many frames had it where the truth says."""
    found, hits, misses = {}, 0, []
    for code, meta, _ in seen:
        if code is None:
            continue
        det = best_detection(meta, "logo")
        score = iou(det["box"], truth[code]) if det else 0.0
        if det:
            found[code] = det["box"]
        if score >= MIN_IOU:
            hits += 1
        elif len(misses) < 5:
            misses.append({"code": code, "seq": meta["seq"], "box": det and det["box"], "iou": round(score, 3)})
    coded = sum(1 for code, _, _ in seen if code is not None)
    rate = hits / max(1, coded)
    print(f"{who}: logo where drawn on {hits}/{coded} numbered frames")
    assert rate >= MIN_HIT_RATE, (f"{who}: logo within IoU>={MIN_IOU} of where it is drawn on only "
                                  f"{hits}/{coded} frames ({rate:.0%}); first misses: {misses}")
    return found


def check_numbered(seen, who):
    codes = [code for code, _, _ in seen]
    readable = [c for c in codes if c is not None]
    assert len(readable) >= MIN_CODE_RATE * len(codes), \
        f"{who}: frame number unreadable on {len(codes) - len(readable)}/{len(codes)} frames: {codes[:40]}"
    backwards = [(a, b) for a, b in zip(readable, readable[1:]) if b <= a]
    assert not backwards, f"{who}: frame numbers not increasing: {backwards[:5]} in {readable[:60]}"
    return readable


def flow_rate(seen) -> float:
    """Frames of the file per second of wall time, from the numbers the frames carry.
    Leave out the first frames of a (re)connection: the frames FFmpeg buffered while it
    probed the stream are read at once, and all but the newest superseded."""
    numbered = [(code, t) for code, _, t in seen if code is not None]
    (c0, t0), (c1, t1) = numbered[0], numbered[-1]
    assert t1 - t0 > 2, f"frames over only {t1 - t0:.1f} s"
    return (c1 - c0) / (t1 - t0)


def test_rtsp_source_gives_the_frames_and_boxes_of_the_file(sightline, scene, tmp_path):
    require_gst("play")
    video, template, truth = scene

    # The file itself, through file:.
    server = sightline("--template", f"{template}=logo", source=f"file:{video}")
    server.wait_live()
    log, from_file = frames_by_code(server, until_code=100, timeout=40)
    check_frame_pairs(log, "file client")
    server.stop_checked()
    file_codes = check_numbered(from_file, "file:")
    file_boxes = boxes(from_file, truth, "file:")

    # The same file served by gst-rtsp-server as H.264.
    with RtspServer("play", tmp_path / "rtsp", name="cam", video=video) as rtsp:
        server = sightline("--template", f"{template}=logo", source=rtsp.url)
        state = server.wait_live(timeout=30)
        log, from_rtsp = frames_by_code(server, until_code=100, timeout=40)
        server.assert_alive()
        check_frame_pairs(log, "rtsp client")
        source = state["source"]
        print(f"rtsp source in /api/state: {source}")
        assert source["state"] == "live" and (source.get("width"), source.get("height")) == (WIDTH, HEIGHT), source
        assert all((m["width"], m["height"]) == (WIDTH, HEIGHT) for _, m, _ in from_rtsp), \
            {(m["width"], m["height"]) for _, m, _ in from_rtsp}
        server.stop_checked()
    rtsp_codes = check_numbered(from_rtsp, "rtsp:")
    rtsp_boxes = boxes(from_rtsp, truth, "rtsp:")

    file_rate, rtsp_rate = flow_rate(from_file[10:]), flow_rate(from_rtsp[10:])
    print(f"file: {len(file_codes)} frames, numbers {file_codes[0]}..{file_codes[-1]}, {file_rate:.1f} fps; "
          f"rtsp: {len(rtsp_codes)} frames, numbers {rtsp_codes[0]}..{rtsp_codes[-1]}, {rtsp_rate:.1f} fps")
    assert abs(rtsp_rate - FPS) <= RATE_TOLERANCE * FPS, f"rtsp frames at {rtsp_rate:.1f} fps, the file is {FPS}"
    # Frames are not lost on the way: /ws sends most of the numbers in between.
    rtsp_span = rtsp_codes[-1] - rtsp_codes[0] + 1
    assert len(rtsp_codes) >= 0.8 * rtsp_span, f"rtsp: {len(rtsp_codes)} of {rtsp_span} frames reached /ws"

    # The same frame gives the same box: the logo moves 3 px or more a frame, so a box
    # from a neighbouring frame, a shifted or rescaled picture is off by more than this.
    common = sorted(set(file_boxes) & set(rtsp_boxes))
    assert len(common) >= 60, f"only {len(common)} frames numbered alike in both runs"

    def difference(c):
        a, b = file_boxes[c], rtsp_boxes[c]
        return max(abs(a[k] - b[k]) * (WIDTH if k in "xw" else HEIGHT) for k in "xywh")

    same = [c for c in common if difference(c) <= MAX_MATCH_PX]
    ranked = sorted(common, key=difference)
    print(f"rtsp box within {MAX_MATCH_PX} px of the file box on {len(same)}/{len(common)} frames; "
          f"median difference {difference(ranked[len(ranked) // 2]):.1f} px, largest {difference(ranked[-1]):.1f} px")
    assert len(same) >= MIN_HIT_RATE * len(common), (
        f"rtsp and file boxes of the same frame within {MAX_MATCH_PX} px on only {len(same)}/{len(common)}; "
        f"worst: {[(c, file_boxes[c], rtsp_boxes[c]) for c in ranked[-3:]]}")


def wait_source(server, want: str, timeout: float, *, processed_after: int | None = None) -> tuple[float, dict]:
    """Polls /api/state until source.state is `want` (and, if given, more than
    `processed_after` frames processed). Returns (seconds it took, the state)."""
    start = time.monotonic()
    state = None
    for _ in range(10000):
        if time.monotonic() - start >= timeout:
            break
        state = server.state()
        if state["source"]["state"] == want and (
                processed_after is None or state["frames"]["processed"] > processed_after):
            return time.monotonic() - start, state
        time.sleep(0.1)
    pytest.fail(f"source not {want!r} within {timeout:.0f} s; last: {state and state['source']}\n{server.summary()}")


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
def test_rtsp_server_gone_is_no_signal_then_back_is_frames(sightline, scene, tmp_path, outage):
    """stopped: the server exits (SIGTERM), its connections close, and it is started again
    on the same port. frozen: the server hangs (SIGSTOP) with its connection open, so only
    Sightline's read timeout can tell, then goes on (SIGCONT)."""
    require_gst("play")
    video, template, truth = scene
    rtsp = RtspServer("play", tmp_path / "rtsp", name="cam", video=video)
    rtsp.start()
    try:
        server = sightline("--template", f"{template}=logo", source=rtsp.url)
        server.wait_live(timeout=30)
        _, before = frames_by_code(server, until_code=0, timeout=20, at_least=20)
        assert len(before) >= 20 and check_numbered(before, "before"), "no frames before the outage"

        if outage == "stopped":
            rtsp.stop()
        else:
            rtsp.freeze()
        gone, state = wait_source(server, "noSignal", NO_SIGNAL_BOUND_S)
        print(f"RTSP server {outage}: noSignal after {gone:.2f} s ({state['source']})")
        assert state["source"]["detail"], "noSignal without a reason"
        assert rtsp.url.split("/cam")[0] in state["source"]["spec"], state["source"]
        # Still down a while: reopening fails and the state stays noSignal. Each failed open
        # logs "no signal" once; wait for one more than when noSignal was first seen.
        failures = server.stderr_path.read_bytes().count(b"no signal")
        wait_until(lambda: server.stderr_path.read_bytes().count(b"no signal") > failures,
                   timeout=NO_SIGNAL_BOUND_S, what="a failed attempt to reopen the RTSP source (logged)")
        assert server.state()["source"]["state"] == "noSignal"
        server.assert_alive()

        # Back (on the same port): Sightline reconnects and frames flow again, from the
        # start of a new session (low frame numbers), at the file's rate.
        processed = server.state()["frames"]["processed"]
        back_at = time.monotonic()
        if outage == "stopped":
            rtsp.start()
        else:
            rtsp.thaw()
        back, state = wait_source(server, "live", RECONNECT_BOUND_S, processed_after=processed)
        log, after = frames_by_code(server, until_code=0, timeout=20, at_least=50)
        flowing = time.monotonic() - back_at
        print(f"RTSP server back: live after {back:.2f} s, 50 frames over /ws {flowing:.2f} s after it "
              f"returned; server events {rtsp.events()}")
        check_frame_pairs(log, "after reconnect")
        codes = check_numbered(after, "after reconnect")
        assert codes[0] < FPS * (RECONNECT_BOUND_S + 10), \
            f"frames after the reconnect start at frame {codes[0]}: not a new session?"
        assert rtsp.events().count("client-connected") >= 1, rtsp.events()
        t0 = after[0][2]
        print("first frames after the reconnect (number, s):", [(c, round(t - t0, 2)) for c, _, t in after[:12]])
        rate = flow_rate(after[10:])
        assert abs(rate - FPS) <= RATE_TOLERANCE * FPS, f"after the reconnect frames at {rate:.1f} fps, the file is {FPS}"
        boxes(after, truth, "after reconnect")
        assert (state["source"]["width"], state["source"]["height"]) == (WIDTH, HEIGHT), state["source"]
    finally:
        rtsp.stop()


def test_record_mode_receives_h264_with_sightline_seis(scene, tmp_path):
    """What the publisher tests rely on: an H.264 stream announced and recorded into
    gst-rtsp-server (ffmpeg's RTSP muxer, over TCP, as libavformat in Sightline does)
    arrives whole, every access unit with its Sightline SEI and that SEI's JSON; a
    second session after the server restarts is appended to the same file."""
    require_gst("record")
    ffmpeg = shutil.which("ffmpeg")
    if not ffmpeg:
        pytest.skip("ffmpeg not installed (Debian: ffmpeg; scripts/setup.sh)")
    video, _, _ = scene
    sent = tmp_path / "sent.h264"
    done = subprocess.run([str(server_binary()), "bench", "--h264", str(video), "--frames", "60",
                           "--write-h264", str(sent)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    sent_json = [j for t, u in nal_units(sent.read_bytes()) if t == 6 and (j := sightline_json(u)) is not None]
    assert [j["seq"] for j in sent_json] == list(range(1, 61)), "bench did not write 60 Sightline SEIs"

    def publish(url):
        pushed = subprocess.run([ffmpeg, "-hide_banner", "-v", "error", "-re", "-f", "h264", "-framerate", "30",
                                 "-i", str(sent), "-c", "copy", "-f", "rtsp", "-rtsp_transport", "tcp", url],
                                capture_output=True, text=True, timeout=60)
        assert pushed.returncode == 0, f"ffmpeg could not publish to {url}: {pushed.stderr[-2000:]}"

    def received(data):
        units = access_units(data)
        pictures = [u for u in units if any(1 <= t <= 5 for t, _ in nal_units(u))]
        seis = []
        for unit in pictures:
            kinds = [t for t, _ in nal_units(unit)]
            first_slice = next(n for n, t in enumerate(kinds) if 1 <= t <= 5)
            found = [sightline_json(u) for n, (t, u) in enumerate(nal_units(unit)) if t == 6 and n < first_slice]
            found = [j for j in found if j is not None]
            assert len(found) == 1, f"an access unit with {len(found)} Sightline SEIs before its slices: {kinds}"
            seis.append(found[0])
        return pictures, seis

    with RtspServer("record", tmp_path / "relay", name="in") as relay:
        assert relay.recorded() == b""
        publish(relay.url)
        relay.wait_event("media-unprepared", timeout=15)
        pictures, seis = received(relay.recorded())
        print(f"record: {len(pictures)} access units, {len(seis)} Sightline SEIs, {len(relay.recorded())} bytes "
              f"(sent {sent.stat().st_size})")
        assert len(pictures) == 60 and seis == sent_json, \
            f"received {len(pictures)} pictures, SEI seqs {[j['seq'] for j in seis][:70]}"
        first = nal_units(pictures[0])
        assert {7, 8, 5} <= {t for t, _ in first}, f"the first access unit lacks SPS/PPS/IDR: {[t for t, _ in first]}"

        # A real decoder takes the recording as it is.
        from h264 import decode_all
        decoded, problems = decode_all(pictures)
        assert len(decoded) == 60 and not problems, f"{len(decoded)} pictures decoded; {problems[:5]}"

        relay.restart(pause=0.5)
        publish(relay.url)
        relay.wait_event("media-unprepared", timeout=15)
        pictures, seis = received(relay.recorded())
        assert len(pictures) == 120 and seis == sent_json + sent_json, \
            f"after a restart and a second session: {len(pictures)} pictures, {len(seis)} SEIs"
