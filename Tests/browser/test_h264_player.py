"""The page's H.264 player in headless Chromium, against a scripted stand-in for the server
(fake_h264_server.py: the frame-code video through libx264, the contract's messages, and faults
the real server never makes). Needs no sightline binary, only Chromium, chromedriver and PyAV.

The frame-code check: every frame shows its index mod 64 as blocks (read back from the page's own
canvas right after the picture is painted, before any box) and its boxes (here exact) say the same
through their position; a picture painted with another frame's boxes disagrees.
"""
import json
import time

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
pytest.importorskip("av", reason="PyAV not installed; pip install av")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import frame_code
from browser_support import severe_console_entries

MIN_PAINTS = 150
MIN_AGREEMENT = 0.995
BITRATE_WINDOW_S = 3.5  # the page's bitrate window (3 s) and a little


# --- helpers shared with test_h264.py --------------------------------------------------

def start_recording(driver, limit=2000):
    driver.execute_script("window.sightline.recordPaints({limit: arguments[0], probe: arguments[1]})",
                          limit, frame_code.probe_points())


def paint_log(driver):
    return driver.execute_script("return window.sightline.paintLog")


def video_state(driver):
    return driver.execute_script("return window.sightline.video")


def wait_for_format(driver, fmt, timeout=20):
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("const l = window.sightline && window.sightline.lastDrawn;"
                                   "return !!l && l.format === arguments[0]", fmt),
        message=f"no {fmt} frame painted within {timeout} s")


def wait_for_boxed_paint(driver, fmt, timeout=30, after_presented=None):
    """Waits until the picture last painted is `fmt` and carries a template box: the stream is past
    its first keyframe and the template's first full search. With `after_presented`, also until the
    MSE player has presented more pictures than that (a new stream's, after a reconnect)."""
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script(
            "const l = window.sightline && window.sightline.lastDrawn;"
            "const v = window.sightline && window.sightline.video.decoder;"
            "return !!l && l.format === arguments[0]"
            " && l.detections.some((x) => x.kind === 'template')"
            " && (arguments[1] === null || (!!v && v.presented > arguments[1]))", fmt, after_presented),
        message=f"no {fmt} picture painted with a template box within {timeout} s")


def record_paints(driver, min_with_box=MIN_PAINTS, timeout=40, min_seconds=3.0, min_paints=0):
    """Record paints until `min_with_box` of them carry a template box and `min_paints` were painted
    (and at least min_seconds have passed); returns what was recorded by then or by `timeout`."""
    start_recording(driver)
    started = time.monotonic()
    log = []
    # Polls only the counts: sending the whole log over WebDriver every 0.2 s is work on the page's
    # main thread (each entry serialized), which can make it miss the presentation of a picture.
    while time.monotonic() - started < timeout:
        time.sleep(0.2)
        painted, with_box = driver.execute_script(
            "const log = window.sightline.paintLog; return [log.length, log.filter((e) => e.templates.length).length]")
        if with_box >= min_with_box and painted >= min_paints and time.monotonic() - started >= min_seconds:
            break
    log = paint_log(driver)
    driver.execute_script("window.sightline.recordPaints(false)")
    return log


def frame_code_agreement(log):
    """(agreeing, compared, details): for each painted frame with a template box, does the code read
    from the painted picture equal the frame index its box's position implies? A frame whose code
    cannot be read, or whose box identifies no frame, counts as a disagreement."""
    compared = agreeing = 0
    bad = []
    for entry in log:
        if not entry["templates"]:
            continue
        compared += 1
        code = frame_code.decode_code(entry["samples"])
        boxed = frame_code.index_from_box(entry["templates"][0]["box"])
        if code is not None and code == boxed:
            agreeing += 1
        else:
            bad.append({"seq": entry["seq"], "code": code, "box": boxed, "samples": entry["samples"]})
    return agreeing, compared, bad


def latency_ms(log):
    """Capture (server wall clock) to paint (browser wall clock) per painted frame, in ms."""
    return sorted(e["paintedAt"] - e["capturedAt"] * 1000 for e in log if isinstance(e.get("capturedAt"), (int, float)))


def percentile(values, q):
    if not values:
        return None
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def assert_frame_code_agrees(log, label):
    agreeing, compared, bad = frame_code_agreement(log)
    assert compared >= MIN_PAINTS, f"{label}: only {compared} painted frames carried a template box ({len(log)} painted)"
    share = agreeing / compared
    print(f"\n{label}: frame code agrees with the boxes on {agreeing}/{compared} painted frames ({share:.2%})")
    assert share >= MIN_AGREEMENT, f"{label}: {agreeing}/{compared} agree; first disagreements: {bad[:5]}"


# --- fixtures -------------------------------------------------------------------------------

@pytest.fixture
def fake_server():
    from fake_h264_server import FakeH264Server
    servers = []

    def make(**kwargs):
        server = FakeH264Server(**kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def page(browser):
    browser.execute_script("try { localStorage.clear(); } catch (e) {}")
    yield browser
    browser.get("about:blank")


def open_fake(driver, server, query=""):
    driver.get(server.url + "/" + query)
    driver.execute_script("localStorage.clear()")  # a remembered choice from an earlier test
    driver.get(server.url + "/" + query)


# --- tests ---------------------------------------------------------------------------------------

def test_h264_is_the_default_on_loopback_and_each_picture_gets_its_own_boxes(fake_server, page):
    server = fake_server()
    page.get_log("browser")
    open_fake(page, server)
    wait_for_format(page, "h264")
    state = video_state(page)
    assert state["mode"] == "h264" and state["h264Available"] and state["note"] is None, state
    log = record_paints(page)
    assert {e["format"] for e in log} == {"h264"}
    assert_frame_code_agrees(log, "fake server, H.264")
    seqs = [e["seq"] for e in log]
    assert seqs == sorted(set(seqs)), "pictures are painted in seq order, each once"
    decoder = video_state(page)["decoder"]
    assert decoder["decodeErrors"] == 0 and decoder["orphans"] == 0, decoder
    assert decoder["codec"].startswith("avc1."), decoder
    assert severe_console_entries(page) == []


def test_the_check_sees_boxes_of_a_neighbouring_frame(fake_server, page):
    """The agreement check itself: the same paint log with each frame's boxes moved to the next
    painted frame (what a player one frame off would draw) must fail it."""
    server = fake_server()
    open_fake(page, server)
    wait_for_format(page, "h264")
    log = record_paints(page, min_with_box=60, min_seconds=1)
    shifted = [dict(entry, templates=previous["templates"]) for previous, entry in zip(log, log[1:])]
    agreeing, compared, _ = frame_code_agreement(shifted)
    assert compared >= 50 and agreeing / compared < 0.1, (agreeing, compared)


def test_decode_errors_and_lost_messages_never_paint_a_broken_or_unpaired_frame(fake_server, page):
    # Frame numbers on the connection; each fault is followed by a keyframe 3 frames later
    # (corrupt / no_binary / wrong_size), the orphan only by the next scheduled one (gop 60).
    faults = {"corrupt": {45}, "no_binary": {75}, "wrong_size": {105}, "orphan": {135}}
    server = fake_server(faults=faults)
    open_fake(page, server)
    # Recording starts before the first paint: on a loaded machine the first H.264 picture can come
    # later than the first fault (frame 45, 1.5 s in), whose paints would then be missing from the log.
    start_recording(page)
    wait_for_format(page, "h264")
    WebDriverWait(page, 30).until(lambda d: len(server.sent[-1]) > 230)
    # The page has painted what was sent by then (the last faults are long before it).
    last_sent = server.sent[-1][230][0]
    WebDriverWait(page, 30).until(lambda d: max((e["seq"] for e in paint_log(d)), default=0) >= last_sent,
                                  message=f"seq {last_sent} (the 231st frame sent) not painted")
    log = paint_log(page)
    sent = server.sent[-1]
    painted = {e["seq"] for e in log}
    assert painted, "nothing painted"
    keys = [seq for seq, key, _ in sent if key]
    for seq, _, kind in sent:
        if kind in ("corrupt", "no_binary", "wrong_size", "orphan-before"):
            # The frame itself (for orphan-before: the frame after the stray binary) and every delta
            # until the next keyframe stay unpainted: they may depend on what was lost.
            next_key = min((k for k in keys if k > seq), default=None)
            assert next_key is not None, (seq, kind)
            hole = painted & set(range(seq, next_key))
            assert not hole, f"{kind} at seq {seq}: painted {sorted(hole)} before the keyframe {next_key}"
            assert any(next_key <= s < next_key + 10 for s in painted), \
                f"{kind} at seq {seq}: nothing painted after the keyframe {next_key}"
    decoder = video_state(page)["decoder"]
    stats = page.execute_script("return window.sightline.stats")
    assert stats["unpaired"] >= 2 and stats["sizeMismatch"] == 1, stats  # no_binary, orphan; wrong_size
    assert decoder["heldForKeyframe"] > 0, decoder
    assert sum(decoder["keyframeWaits"].values()) >= 3, decoder
    print(f"\nfaults: decoder {json.dumps(decoder)}; stream {json.dumps(stats)}")
    # The pictures that were painted are each with their own boxes.
    agreeing, compared, bad = frame_code_agreement(log)
    assert compared > 100 and agreeing == compared, bad[:5]


def test_choosing_jpeg_is_remembered_and_h264_comes_back(fake_server, page):
    server = fake_server()
    open_fake(page, server)
    wait_for_format(page, "h264")
    jpeg = page.find_element(By.ID, "video-jpeg")
    jpeg.click()
    wait_for_format(page, "jpeg")
    assert video_state(page)["mode"] == "jpeg"
    assert page.execute_script("return localStorage.getItem('sightline.video')") == "jpeg"
    log = record_paints(page, min_with_box=60, min_seconds=1)
    assert {e["format"] for e in log} == {"jpeg"}
    agreeing, compared, bad = frame_code_agreement(log)
    assert agreeing == compared, bad[:5]
    page.refresh()
    wait_for_format(page, "jpeg")
    assert page.find_element(By.ID, "video-jpeg").is_selected()
    assert not page.find_element(By.ID, "video-h264").is_selected()
    page.find_element(By.ID, "video-h264").click()
    wait_for_format(page, "h264")
    assert page.execute_script("return localStorage.getItem('sightline.video')") == "h264"


def test_bitrate_mode_and_server_video_metrics_are_shown(fake_server, page):
    server = fake_server()
    open_fake(page, server)
    wait_for_format(page, "h264")
    # A measurement window, not a wait: the page's meter averages over BITRATE_WINDOW_MS (3 s in
    # web/video.js), and the bitrate compared below is its reading over a full window.
    time.sleep(BITRATE_WINDOW_S)
    client = lambda key: page.find_element(By.CSS_SELECTOR, f'[data-client="{key}"]').text
    assert client("mode") == "H.264 640×480"
    bitrate = client("bitrate")
    number, unit = bitrate.split(" ")
    assert unit in ("kbit/s", "Mbit/s"), bitrate
    shown_bps = float(number) * (1e3 if unit == "kbit/s" else 1e6)
    measured = video_state(page)["bitsPerSecond"]
    assert shown_bps == pytest.approx(measured, rel=0.3), (bitrate, measured)
    # The same bytes the server sent in the last seconds: JSON + access units at 30 fps.
    assert 20_000 < measured < 5_000_000, measured
    metric = lambda path: page.find_element(By.CSS_SELECTOR, f'[data-metric="{path}"]').text
    assert page.find_element(By.CSS_SELECTOR, '[data-requires="video"]').is_displayed()
    assert metric("video.viewers.h264") == "1"
    assert metric("video.encodeMs.p50") == "2.50"
    assert metric("video.encodeMs.p99") == "\u2013"
    assert metric("video.bytesPerFrame.jpeg") == "40.0 kB"
    assert metric("video.keyframes.requested") == "2"
    assert metric("video.renditions.0") == "main 640×480 · encoding · 1 viewer"
