"""The Events card's clip player in headless Chromium, against a stand-in for the server
(fake_clip_server.py: web/, /api/events and a clip made by Tests/web/make_clip.py). Needs no
sightline binary, only Chromium, chromedriver, PyAV, numpy and Pillow.

The clip's frames each show a white square at a place that depends on the frame, and each
frame's SEI boxes it there. So the check that a picture is drawn with its own boxes is read
back from the page's canvas: under the centre of the drawn template box the picture is white,
and where the previous frame's square was it is not.
"""
import json
import time

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
pytest.importorskip("av", reason="PyAV not installed; pip install av")
pytest.importorskip("numpy", reason="numpy not installed; pip install numpy")
pytest.importorskip("PIL", reason="Pillow not installed; pip install pillow")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait



WHITE_MIN = 180  # every channel of the square, after H.264, is at least this
NOT_WHITE_MAX = 150  # some channel of anything else (the background, cyan labels) is below this
WAIT_S = 15
PAUSED_WINDOW_S = 0.5  # how long a paused clip is watched for a picture that must not change

# One synchronous script: the dataset and the pixels belong to the same paint.
CANVAS_JS = r"""
const canvas = document.querySelector('#events canvas');
const data = {...canvas.dataset};
const ctx = canvas.getContext('2d');
const pixel = (x, y) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data).slice(0, 3);
const boxes = data.boxes ? JSON.parse(data.boxes) : [];
const square = boxes.find((b) => b.kind === 'template');
const at = arguments[0];  // extra points to sample, [[x, y], ...]
return {data, width: canvas.width, height: canvas.height, square,
        centre: square ? pixel(square.x + square.w / 2, square.y + square.h / 2) : null,
        points: (at || []).map(([x, y]) => pixel(x, y))};
"""


@pytest.fixture(scope="module")
def clip_server():
    from fake_clip_server import FakeClipServer
    server = FakeClipServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(browser, clip_server):
    browser.get(clip_server.url + "/")
    WebDriverWait(browser, WAIT_S).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#events .event")) == len(clip_server.events))
    yield browser
    browser.get("about:blank")


def open_event(driver, server, which):
    driver.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{server.ids[which]}"] button').click()
    WebDriverWait(driver, WAIT_S).until(lambda d: d.execute_script(
        "return document.querySelector('#events canvas').dataset.eventId === arguments[0]", server.ids[which]),
        message=f"the {which} event was not shown")


def canvas(driver, points=None):
    return driver.execute_script(CANVAS_JS, points or [])


def seq(driver):
    value = driver.execute_script("return document.querySelector('#events canvas').dataset.seq")
    return int(value) if value not in (None, "") else None


def wait_for_seq(driver, wanted):
    WebDriverWait(driver, WAIT_S).until(lambda d: seq(d) == wanted, message=f"frame {wanted} never shown (at {seq(driver)})")


def control(driver, role):
    return driver.find_element(By.CSS_SELECTOR, f'#events [data-role="{role}"]')


def is_white(rgb):
    return min(rgb) >= WHITE_MIN


def assert_own_boxes(driver, server, expected_seq):
    """The frame on the canvas is `expected_seq`, its template box is that frame's square, and the
    picture under the box is the square (white), while the previous frame's place is not white."""
    previous = server.manifest["squares"][expected_seq - 1] if expected_seq > 0 else None
    half = server.manifest["square"] / 2
    points = [[previous[0] + half, previous[1] + half]] if previous else []
    state = canvas(driver, points)
    assert state["data"]["mode"] == "clip", state["data"]
    assert int(state["data"]["seq"]) == expected_seq, state["data"]
    assert int(state["data"]["clipIndex"]) == expected_seq  # seq i is sample i in this clip
    x, y = server.manifest["squares"][expected_seq]
    square = state["square"]
    assert (square["x"], square["y"], square["w"], square["h"]) == (x, y, 40, 40), (expected_seq, square)
    assert is_white(state["centre"]), f"frame {expected_seq}: the picture under its box is {state['centre']}, not the square"
    if previous:
        assert not is_white(state["points"][0]), \
            f"frame {expected_seq}: still white where frame {expected_seq - 1}'s square was: a stale picture"
    return state


# --- tests ---------------------------------------------------------------------------------------

def test_an_event_with_a_clip_opens_on_its_best_frame_with_its_own_boxes(page, clip_server):
    item = page.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{clip_server.ids["with-clip"]}"]')
    assert item.get_attribute("data-clip") == "true"
    assert item.find_element(By.CSS_SELECTOR, ".event-clip").text.lower() == "clip"
    assert "play the clip" in item.find_element(By.TAG_NAME, "button").get_attribute("aria-label")
    open_event(page, clip_server, "with-clip")
    state = assert_own_boxes(page, clip_server, 20)  # best.seq
    assert (state["width"], state["height"]) == (320, 240)
    assert state["data"]["playing"] == "false", "it opens paused"
    assert control(page, "clip-controls").is_displayed()
    link = control(page, "clip-download")
    assert link.is_displayed() and link.text == "Download clip (MP4)"
    assert link.get_attribute("href").endswith(f"/api/events/{clip_server.ids['with-clip']}/clip.mp4")
    # The event's own span (frames 15..45 of 0..59) is marked on the timeline.
    span = control(page, "clip-span")
    assert span.is_displayed()
    marks = page.execute_script("const s = arguments[0].style; return [s.getPropertyValue('--from'), s.getPropertyValue('--to')]", span)
    assert float(marks[0]) == pytest.approx(15 / 59) and float(marks[1]) == pytest.approx(45 / 59), marks
    timeline = control(page, "clip-position")
    assert timeline.get_attribute("max") == "59" and timeline.get_attribute("value") == "20"
    assert control(page, "clip-time").text == "0:00.67 / 0:01.97"
    for role, label in (("clip-play", "Play"), ("clip-back", "Previous frame"), ("clip-forward", "Next frame")):
        assert control(page, role).get_attribute("aria-label") == label
    assert not control(page, "name-form").is_displayed(), "a template event offers no naming"


def test_stepping_shows_each_frame_with_its_own_boxes_across_keyframes(page, clip_server):
    open_event(page, clip_server, "with-clip")
    wait_for_seq(page, 20)
    for expected in range(21, 33):  # forward over the keyframe at 30
        control(page, "clip-forward").click()
        wait_for_seq(page, expected)
        assert_own_boxes(page, clip_server, expected)
    for expected in range(31, 27, -1):  # back over it: decoded afresh from keyframe 0
        control(page, "clip-back").click()
        wait_for_seq(page, expected)
        assert_own_boxes(page, clip_server, expected)
    # The keyboard: "." and "," step too.
    dialog = page.find_element(By.CSS_SELECTOR, "#events dialog")
    dialog.send_keys(".")
    wait_for_seq(page, 29)
    assert_own_boxes(page, clip_server, 29)


def test_the_timeline_seeks_and_the_first_and_last_frames_bound_the_steps(page, clip_server):
    open_event(page, clip_server, "with-clip")
    wait_for_seq(page, 20)
    seek = ("const r = arguments[0]; r.value = arguments[1]; r.dispatchEvent(new Event('input', {bubbles: true}));")
    for target in (57, 3, 44, 0):
        page.execute_script(seek, control(page, "clip-position"), target)
        wait_for_seq(page, target)
        assert_own_boxes(page, clip_server, target)
    assert not control(page, "clip-back").is_enabled(), "nothing before the first frame"
    page.execute_script(seek, control(page, "clip-position"), 59)
    wait_for_seq(page, 59)
    assert not control(page, "clip-forward").is_enabled(), "nothing after the last frame"
    assert control(page, "clip-time").text == "0:01.97 / 0:01.97"


def test_play_pause_and_play_to_the_end(page, clip_server):
    open_event(page, clip_server, "with-clip")
    wait_for_seq(page, 20)
    play = control(page, "clip-play")
    play.click()
    WebDriverWait(page, WAIT_S).until(lambda d: (seq(d) or 0) >= 26, message="play did not move on")
    assert play.get_attribute("aria-label") == "Pause"
    play.click()
    WebDriverWait(page, WAIT_S).until(lambda d: canvas(d)["data"]["playing"] == "false")
    paused_at = seq(page)
    # A window, not a wait: the picture must NOT move while paused, so the test watches it for
    # PAUSED_WINDOW_S (15 frames of the clip's 30 fps) rather than for an event.
    time.sleep(PAUSED_WINDOW_S)
    assert seq(page) == paused_at, "the picture moved while paused"
    assert play.get_attribute("aria-label") == "Play"
    assert_own_boxes(page, clip_server, paused_at)
    # From there to the end, at about the clip's pace (30 fps), each frame with its own boxes.
    page.execute_script(
        "window.clipSeen = []; const c = document.querySelector('#events canvas');"
        "window.clipWatch = new MutationObserver(() => { const s = c.dataset.seq;"
        "  if (s && window.clipSeen.at(-1) !== s) window.clipSeen.push(s); });"
        "window.clipWatch.observe(c, {attributes: true, attributeFilter: ['data-seq']});")
    started = time.monotonic()
    play.click()
    WebDriverWait(page, WAIT_S).until(lambda d: seq(d) == 59 and canvas(d)["data"]["playing"] == "false",
                                      message="play did not reach the end and stop")
    elapsed = time.monotonic() - started
    seen = [int(s) for s in page.execute_script("window.clipWatch.disconnect(); return window.clipSeen")]
    assert seen == list(range(paused_at + 1, 60)), seen
    frames = 59 - paused_at
    print(f"{frames} frames played in {elapsed:.2f} s (the clip's pace: {frames / 30:.2f} s)")
    # Paced, not dumped: no faster than the clip's 30 fps (a slow machine may take longer; not asserted).
    assert elapsed >= frames / 30 * 0.8, f"{frames} frames played in {elapsed:.2f} s"
    assert_own_boxes(page, clip_server, 59)


def test_an_event_without_a_clip_shows_its_snapshot(page, clip_server):
    open_event(page, clip_server, "no-clip")
    state = canvas(page)
    assert state["data"]["mode"] == "snapshot"
    assert "seq" not in state["data"] and "clipIndex" not in state["data"]
    assert not control(page, "clip-controls").is_displayed()
    assert not control(page, "clip-download").is_displayed()
    assert page.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{clip_server.ids["no-clip"]}"]') \
        .get_attribute("data-clip") == "false"
    assert not any(p.endswith("noclip/clip.mp4") for p in clip_server.requests)


def test_a_clip_that_will_not_load_falls_back_to_the_snapshot(page, clip_server):
    open_event(page, clip_server, "broken-clip")
    state = canvas(page)
    assert state["data"]["mode"] == "snapshot"
    notice = control(page, "viewer-notice")
    assert notice.is_displayed() and "showing the best frame" in notice.text and "HTTP 404" in notice.text, notice.text
    assert control(page, "clip-download").is_displayed(), "the download link stays"
    assert not control(page, "clip-controls").is_displayed()


# A dialog's `open` turns false as soon as close() is called, but its `close` event (where
# the page stops the clip) is a task queued after that. So the test waits for that event: a
# listener added now runs after the page's own, and resolves on the next task.
CLOSE_JS = r"""
const done = arguments[arguments.length - 1];
const dialog = document.querySelector('#events dialog');
dialog.addEventListener('close', () => setTimeout(() => done(dialog.open), 0), {once: true});
document.querySelector('#events [data-role="close"]').click();
"""


def close_dialog(driver):
    driver.set_script_timeout(WAIT_S)
    still_open = driver.execute_async_script(CLOSE_JS)
    assert still_open is False, "the dialog did not close"


def test_closing_the_dialog_stops_the_clip_and_the_next_event_starts_clean(page, clip_server):
    open_event(page, clip_server, "with-clip")
    wait_for_seq(page, 20)
    control(page, "clip-play").click()
    WebDriverWait(page, WAIT_S).until(lambda d: (seq(d) or 0) > 21)
    close_dialog(page)
    state = canvas(page)
    assert "seq" not in state["data"] and state["data"].get("mode") is None, state["data"]
    open_event(page, clip_server, "no-clip")
    assert canvas(page)["data"]["mode"] == "snapshot"
    assert not control(page, "clip-controls").is_displayed()
    close_dialog(page)
    open_event(page, clip_server, "with-clip")
    assert_own_boxes(page, clip_server, 20)
    assert canvas(page)["data"]["playing"] == "false"


def test_without_webcodecs_the_clip_plays_in_a_video_element_with_its_own_boxes(browser, clip_server):
    """No VideoDecoder (an old browser; over plain HTTP see test_clip_video.py): the <video> player
    (clipvideo.js) plays the clip, opened on its best frame with that frame's boxes over it, and says so."""
    script = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                     {"source": "delete window.VideoDecoder; delete window.EncodedVideoChunk;"})
    try:
        browser.get(clip_server.url + "/")
        WebDriverWait(browser, WAIT_S).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#events .event")) == len(clip_server.events))
        assert browser.execute_script("return typeof VideoDecoder") == "undefined"
        if browser.execute_script("return document.createElement('video').canPlayType('video/mp4; codecs=\"avc1.64001f\"')") == "":
            pytest.skip("this Chromium cannot play H.264 in <video>")
        browser.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{clip_server.ids["with-clip"]}"] button').click()
        overlay = '#events [data-role="clip-overlay"]'
        WebDriverWait(browser, WAIT_S).until(lambda d: d.execute_script(
            "const d = document.querySelector(arguments[0]).dataset; return d.eventId === arguments[1] && d.mode === 'clip'"
            " && d.seq === '20'", overlay, clip_server.ids["with-clip"]), message="the clip did not open in the <video>")
        data = browser.execute_script("return {...document.querySelector(arguments[0]).dataset}", overlay)
        square = next(b for b in json.loads(data["boxes"]) if b["kind"] == "template")
        x, y = clip_server.manifest["squares"][20]
        assert (square["x"], square["y"], square["w"], square["h"]) == (x, y, 40, 40), square
        assert data["player"] == "video" and data["playing"] == "false", data
        assert control(browser, "clip-video").is_displayed() and control(browser, "clip-controls").is_displayed()
        assert "this browser has no WebCodecs" in control(browser, "clip-player").text
        assert control(browser, "clip-download").is_displayed()
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        browser.get("about:blank")


def test_no_console_errors_from_the_clip_player(page, clip_server):
    page.get_log("browser")
    open_event(page, clip_server, "with-clip")
    wait_for_seq(page, 20)
    control(page, "clip-play").click()
    WebDriverWait(page, WAIT_S).until(lambda d: seq(d) == 59 and canvas(d)["data"]["playing"] == "false")
    control(page, "clip-back").click()
    wait_for_seq(page, 58)
    # The fake has no /ws: the live view's reconnects are expected; nothing else may complain.
    errors = [e for e in page.get_log("browser") if e.get("level") == "SEVERE" and "/ws" not in e.get("message", "")]
    assert errors == [], json.dumps(errors, indent=1)
