"""Event clips over plain HTTP (issue 40, item 2), in headless Chromium against a REAL `sightline serve`:
the page is opened as http://sightline.test:PORT/ (mapped to 127.0.0.1 by --host-resolver-rules,
allowed by access.allowedHosts), which is no secure context, so there is no WebCodecs. The Events
dialog plays the clip in a <video> (web/clipvideo.js) and draws, on a canvas over it, the SEI boxes
of the picture presented.

On the frame-code video (frame_code.py: every frame shows its index mod 64 in pixels, and the template
patch sits at a place that says the same), the check reads the code from the presented picture (the
<video> drawn into a canvas, paused) and the index implied by the template box the page drew over it at
that moment, in one synchronous script: they agree after the dialog opens, after seeking to three places
on the timeline, after one step forward and after a pause in playback. Pairing each checked picture with
the boxes of the frame next to it fails the same check (so the check can fail). Playback is checked to
move on, to show boxes while playing and to log no console error; how many pictures drawn while playing
agree is printed (a copy of a playing <video> can already be the next picture), not asserted.

Needs the sightline binary (SIGHTLINE_BIN), Chromium + chromedriver with H.264 in <video>, PyAV, numpy
and Pillow. Bounded waits only; no timing asserts; loopback only.
"""
import json
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
pytest.importorskip("av", reason="PyAV not installed; pip install av")
pytest.importorskip("numpy", reason="numpy not installed; pip install numpy")
pytest.importorskip("PIL", reason="Pillow not installed; pip install pillow")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import frame_code
from test_event_clips import H264_TYPE, cell_points, check_frame, start_server, template_box, wait_for_event, write_video
from test_h264 import OTHER_NAME, make_driver
from test_page import server_binary, severe_console_entries

WAIT_S = 20
MIN_FRAMES = 120
CONFIG = ("events: {clips: true, preCaptureSeconds: 3, postCaptureSeconds: 3}\n"
          f"access: {{allowedHosts: [\"{OTHER_NAME}\"]}}\n")
# Patch cell colours after two H.264 encodes (as test_event_clips).
CELL_WHITE_MIN = 170
CELL_BLACK_MAX = 85

# One synchronous script: the picture the <video> presents (drawn into a canvas of its own) and the
# boxes on the overlay at that same moment.
PROBE_JS = r"""
const [probes, cellPoints, whiteMin, blackMax] = arguments;
const video = document.querySelector('#events [data-role="clip-video"]');
const overlay = document.querySelector('#events [data-role="clip-overlay"]');
const W = video.videoWidth, H = video.videoHeight;
if (!W || !H) return null;
window.__probeCanvas ??= document.createElement('canvas');
const c = window.__probeCanvas;
if (c.width !== W || c.height !== H) { c.width = W; c.height = H; }
const ctx = c.getContext('2d', {willReadFrequently: true});
ctx.drawImage(video, 0, 0, W, H);
const pixels = ctx.getImageData(0, 0, W, H).data;
const luma = (x, y, r) => {
  let sum = 0, n = 0;
  for (let yy = Math.round(y) - r; yy <= Math.round(y) + r; yy += 1) {
    for (let xx = Math.round(x) - r; xx <= Math.round(x) + r; xx += 1) {
      const i = (yy * W + xx) * 4;
      sum += 0.299 * pixels[i] + 0.587 * pixels[i + 1] + 0.114 * pixels[i + 2];
      n += 1;
    }
  }
  return Math.round(sum / n);
};
const patches = [];
cellPoints.forEach((cells, k) => {
  if (cells.every(([x, y, white]) => { const l = luma(x, y, 2); return white ? l >= whiteMin : l <= blackMax; })) patches.push(k);
});
const d = overlay.dataset;
return {
  clipIndex: d.clipIndex === undefined ? null : Number(d.clipIndex), seq: d.seq ? Number(d.seq) : null,
  clipTime: Number(d.clipTime), playing: d.playing === 'true', mode: d.mode, player: d.player,
  boxes: JSON.parse(d.boxes || '[]'), width: overlay.width, height: overlay.height,
  lumas: probes.map(([nx, ny]) => luma(nx * W, ny * H, 2)), patches,
  currentTime: video.currentTime, paused: video.paused, seeking: video.seeking,
};
"""

# While playing: an entry each time the overlay shows another sample (data-clip-index changes).
RECORDER_JS = r"""
const overlay = document.querySelector('#events [data-role="clip-overlay"]');
const args = arguments;
window.clipVideoLog = [];
window.clipVideoWatch?.disconnect();
window.clipVideoWatch = new MutationObserver(() => {
  const entry = window.__probe(...args);
  if (entry && entry.playing) window.clipVideoLog.push(entry);
});
window.clipVideoWatch.observe(overlay, {attributes: true, attributeFilter: ['data-clip-index']});
"""


@pytest.fixture(scope="module")
def driver():
    d = make_driver(f"--host-resolver-rules=MAP {OTHER_NAME} 127.0.0.1")
    try:
        yield d
    finally:
        d.quit()


@pytest.fixture(scope="module")
def server():
    """The patch always in view: one event that never ends, its clip growing."""
    server_binary()  # skip before writing a video when there is no binary
    folder = Path(tempfile.mkdtemp(prefix="sightline-clip-video-"))
    video = folder / "frame-code.mp4"
    try:
        write_video(video, frame_code.PERIOD * 3)
        running = start_server(folder, video, CONFIG)
        try:
            yield running
        finally:
            running.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def control(driver, role):
    return driver.find_element(By.CSS_SELECTOR, f'#events [data-role="{role}"]')


def probe(driver):
    return driver.execute_script(PROBE_JS, frame_code.probe_points(), cell_points(), CELL_WHITE_MIN, CELL_BLACK_MAX)


def overlay_data(driver):
    return driver.execute_script("return {...document.querySelector('#events [data-role=\"clip-overlay\"]').dataset}")


def settled(driver):
    """The <video> paused on a picture, not seeking, and the overlay on the sample the timeline shows."""
    return driver.execute_script(
        "const v = document.querySelector('#events [data-role=\"clip-video\"]');"
        "const d = document.querySelector('#events [data-role=\"clip-overlay\"]').dataset;"
        "const p = document.querySelector('#events [data-role=\"clip-position\"]');"
        "return v.paused && !v.seeking && v.readyState >= 2 && d.playing === 'false' && d.clipIndex !== undefined"
        " && d.clipIndex === p.value ? Number(d.clipIndex) : null")


def wait_settled(driver, index=None):
    WebDriverWait(driver, WAIT_S).until(
        lambda d: (lambda at: at is not None and (index is None or at == index))(settled(d)),
        message=f"the clip did not settle on frame {index} (overlay {overlay_data(driver)})")
    entry = probe(driver)
    assert entry["paused"] and not entry["seeking"], entry
    if index is not None:
        assert entry["clipIndex"] == index, entry
    return entry


def assert_exact(entry, label):
    """The picture's code equals the frame the drawn template box implies (a box must be drawn)."""
    assert entry["mode"] == "clip" and entry["player"] == "video", (label, entry)
    assert template_box(entry), f"{label}: no template box drawn on clip frame {entry['clipIndex']}: {entry['boxes']}"
    ok, detail = check_frame(entry)
    assert ok and detail == "agrees", f"{label} (clip frame {entry['clipIndex']}): {detail}"
    return entry


def test_plain_http_plays_the_clip_in_a_video_with_each_pictures_own_boxes(server, driver):
    event = wait_for_event(server, lambda e: e["clip"].get("frames", 0) >= MIN_FRAMES,
                           what=f"event with {MIN_FRAMES} clip frames")
    driver.get("about:blank")
    if driver.execute_script("return document.createElement('video').canPlayType(arguments[0])", H264_TYPE) == "":
        pytest.skip(f"this Chromium cannot play H.264 in <video> (canPlayType({H264_TYPE}) is '')")
    driver.get_log("browser")
    driver.get(f"http://{OTHER_NAME}:{server.port}/")
    assert driver.execute_script("return [location.hostname, window.isSecureContext, 'VideoDecoder' in window]") \
        == [OTHER_NAME, False, False]
    item = f'#events [data-event-id="{event["id"]}"]'
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, item), message="event never listed")
    driver.execute_script("window.__probe = new Function(arguments[0]);", PROBE_JS)  # for the recorder
    driver.find_element(By.CSS_SELECTOR, f"{item} button").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: overlay_data(d).get("eventId") == event["id"] and overlay_data(d).get("mode") == "clip",
        message=f"the clip was not shown: {control(driver, 'viewer-notice').text!r} {overlay_data(driver)}")
    assert control(driver, "clip-video").is_displayed()
    assert not driver.find_element(By.CSS_SELECTOR, "#events canvas.event-picture").is_displayed()
    note = control(driver, "clip-player").text
    assert "video element" in note and "not HTTPS" in note, note
    assert not control(driver, "viewer-notice").is_displayed(), control(driver, "viewer-notice").text
    length = int(control(driver, "clip-position").get_attribute("max")) + 1
    assert length >= MIN_FRAMES, length
    checked = [assert_exact(wait_settled(driver), "opened on the best frame")]

    # Three places on the timeline, then one step forward.
    seek = "const r = arguments[0]; r.value = arguments[1]; r.dispatchEvent(new Event('input', {bubbles: true}));"
    for index in (length // 3, (length * 4) // 5, length // 2):
        driver.execute_script(seek, control(driver, "clip-position"), index)
        checked.append(assert_exact(wait_settled(driver, index), f"sought to {index}"))
    control(driver, "clip-forward").click()
    stepped = assert_exact(wait_settled(driver, length // 2 + 1), "stepped forward")
    checked.append(stepped)

    # The check fails on a shifted pairing: each checked picture with the boxes of its neighbour frame.
    before = checked[-2]  # the seek to length // 2, then the step to the next frame
    for picture, boxes in ((stepped, before), (before, stepped)):
        shifted = dict(picture, boxes=boxes["boxes"])
        assert check_frame(shifted) != (True, "agrees"), f"the check passes a picture with another frame's boxes: {shifted}"

    # Play from there: the overlay moves on with the pictures; then pause: the picture stays with its own boxes.
    driver.execute_script(RECORDER_JS, frame_code.probe_points(), cell_points(), CELL_WHITE_MIN, CELL_BLACK_MAX)
    play = control(driver, "clip-play")
    play.click()
    WebDriverWait(driver, 5).until(lambda d: overlay_data(d).get("playing") == "true", message="play did not start")
    start = stepped["clipIndex"]
    WebDriverWait(driver, WAIT_S).until(lambda d: int(overlay_data(d).get("clipIndex", -1)) >= start + 20,
                                        message=f"play did not move on from {start}: {overlay_data(driver)}")
    assert play.get_attribute("aria-label") == "Pause"
    play.click()
    paused = assert_exact(wait_settled(driver), "paused")
    assert paused["clipIndex"] >= start + 20, paused
    assert play.get_attribute("aria-label") == "Play"
    log = driver.execute_script("window.clipVideoWatch.disconnect(); return window.clipVideoLog")
    shown = [e["clipIndex"] for e in log]
    # In order; the player goes round from the clip's end to its start (a loaded machine may see the
    # end before the pause comes), so the only step back allowed is from the last frames to the first.
    steps_back = [(a, b) for a, b in zip(shown, shown[1:]) if b < a]
    assert len(log) >= 10 and all(a >= length - 3 and b <= 3 for a, b in steps_back), \
        f"pictures drawn while playing: {shown}"
    boxed = [e for e in log if template_box(e)]
    assert len(boxed) >= 0.8 * len(log), f"only {len(boxed)} of {len(log)} pictures had a box while playing"
    agreeing = sum(1 for e in boxed if check_frame(e) == (True, "agrees"))
    print(f"\nplain HTTP, <video> clip player: {length} clip frames; checked exactly at "
          f"{[e['clipIndex'] for e in checked + [paused]]}; while playing {len(log)} pictures drawn over "
          f"{shown[0]}..{shown[-1]}, {agreeing} of {len(boxed)} boxed ones agree with a copy of the playing <video>")
    assert severe_console_entries(driver) == []
