"""Browser tests for the Sightline web client (web/), against `sightline serve --source demo`.

Run:  pip install pytest selenium ;  python -m pytest Tests/browser -v
The fixtures are in Tests/conftest.py and browser_support.py (environment variables described there).
The names below from browser_support stay importable from this module for older test files.
"""
import os
import time

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# The fixtures (server_url, driver, make_server, artifacts_dir, ...) come from Tests/conftest.py and
# are not imported here: a fixture imported into a module is defined again there, so this module had
# a session-scoped demo server of its own, streaming until the worker's last test.
from browser_support import (  # noqa: E402,F401  (re-exported: older test files import them from here)
    ARTIFACTS, BACKGROUND_RGB, CHROMEDRIVER, CHROMIUM, COLOR_TOLERANCE, EDGE_TOLERANCE_PX, FRAME_TIMEOUT_S, MIN_IOU,
    READY_TIMEOUT_S, REPO, SNAPSHOT_JS, STOP_TIMEOUT_S, TEMPLATE_RGB, TEST_TOKEN, WEB_ROOT, SightlineServer,
    _new_driver, box_to_canvas, coloured_positions, fit_contain, free_port, get_json, iou, is_color, nearest,
    new_chromium, open_page, server_binary, severe_console_entries, snapshot_on_truth, snapshot_with_template,
    status_of, wait_for_frame)


def test_page_loads_without_console_errors(server_url, driver):
    driver.get_log("browser")  # drop anything from earlier pages
    open_page(driver, server_url, 1280, 720)
    WebDriverWait(driver, 10).until(lambda d: status_of(d) == "live")
    # A couple of /api/state polls and many frames, waited for, not slept.
    first = driver.execute_script("return window.sightline.lastDrawn.seq")
    WebDriverWait(driver, 20).until(lambda d: d.execute_script(
        "const s = window.sightline; return s.chart.samples.filter((x) => !x.gap).length >= 2"
        " && s.lastDrawn.seq >= arguments[0] + 20", first))
    assert severe_console_entries(driver) == []
    assert driver.find_element(By.ID, "status-text").text == "live"
    assert driver.execute_script("return window.sightline.lastDrawn.seq") > 0


@pytest.mark.parametrize("width,height,dpr,bars", [
    (1400, 600, 1, "left-right"),   # wide window: pillarbox
    (600, 1000, 1, "top-bottom"),   # tall (phone-like) window: letterbox
    (1000, 700, 2, None),           # HiDPI
])
def test_template_box_drawn_on_ground_truth(server_url, driver, width, height, dpr, bars):
    open_page(driver, server_url, width, height, dpr)
    snap = snapshot_with_template(driver, accept=lambda snap: snapshot_on_truth(snap) >= MIN_IOU)
    drawn = snap["drawn"]
    canvas_w, canvas_h = drawn["canvas"]["width"], drawn["canvas"]["height"]

    # HiDPI: the backing store is the CSS size times devicePixelRatio.
    assert snap["dpr"] == dpr
    assert abs(canvas_w - snap["cssWidth"] * dpr) <= 1 and abs(canvas_h - snap["cssHeight"] * dpr) <= 1

    fit = fit_contain(drawn["width"], drawn["height"], canvas_w, canvas_h)
    for key in ("scale", "offsetX", "offsetY", "width", "height"):
        assert drawn["fit"][key] == pytest.approx(fit[key], abs=1e-6)
    if bars == "left-right":
        assert fit["offsetX"] > 10 and fit["offsetY"] == pytest.approx(0, abs=0.5)
    elif bars == "top-bottom":
        assert fit["offsetY"] > 10 and fit["offsetX"] == pytest.approx(0, abs=0.5)
    if snap["bar"] is not None:
        assert is_color(snap["bar"], BACKGROUND_RGB, 6), f"letterbox bar is {snap['bar']}, expected background"

    # The overlay drew the template detection where its box maps to ...
    detection = snap["detection"]
    drawn_rect = next(r for r in drawn["rects"] if r["kind"] == "template" and r.get("label") == detection.get("label"))
    assert snap["truth"]["label"] == detection["label"]
    mapped = box_to_canvas(detection["box"], fit)
    for key in "xywh":
        assert drawn_rect[key] == pytest.approx(mapped[key], abs=0.5)

    # ... which is where the demo's ground truth is, mapped through the same fit.
    truth = box_to_canvas(snap["truth"]["box"], fit)
    overlap = iou(drawn_rect, truth)
    assert overlap >= MIN_IOU, f"drawn {drawn_rect} vs ground truth {truth}: IoU {overlap:.2f}"
    truth_cx, truth_cy = truth["x"] + truth["w"] / 2, truth["y"] + truth["h"] / 2
    assert drawn_rect["x"] < truth_cx < drawn_rect["x"] + drawn_rect["w"]
    assert drawn_rect["y"] < truth_cy < drawn_rect["y"] + drawn_rect["h"]

    # The canvas pixels on the drawn rectangle's edges have the template colour.
    for edge, rgb in snap["edges"][0].items():
        assert is_color(rgb, TEMPLATE_RGB), f"{edge} edge pixel {rgb} is not the template colour"

    # Read back along the row and column through the ground truth's centre: the box outline
    # crosses them exactly where the drawn rectangle's edges are, and its inside is not filled.
    row_hits = coloured_positions(snap["row"], TEMPLATE_RGB)
    col_hits = coloured_positions(snap["col"], TEMPLATE_RGB)
    expectations = [("left", row_hits, drawn_rect["x"]), ("right", row_hits, drawn_rect["x"] + drawn_rect["w"]),
                    ("top", col_hits, drawn_rect["y"]), ("bottom", col_hits, drawn_rect["y"] + drawn_rect["h"])]
    for edge, hits, expected in expectations:
        found = nearest(hits, expected)
        assert found is not None and abs(found - expected) <= EDGE_TOLERANCE_PX, \
            f"{edge}: no template-coloured pixel near {expected:.1f} on the line through the truth centre (nearest {found})"
    inside = [x for x in row_hits if drawn_rect["x"] + 4 * dpr < x < drawn_rect["x"] + drawn_rect["w"] - 4 * dpr]
    assert len(inside) < 0.1 * drawn_rect["w"], "the template box looks filled, not outlined"


METRIC_PATHS = ("fps.capture", "fps.processed", "fps.sent", "drops.superseded", "drops.late", "drops.error",
                "clientSkips", "clients.ws", "frames.sent")
FPS_PATHS = METRIC_PATHS[:3]
MISSING_TEXT = "\u2013"  # MISSING in web/metrics.js
COUNTER_PATHS = ("drops.superseded", "drops.late", "drops.error", "clientSkips", "frames.sent")

# The panel's text and the /api/state answer it was rendered from, read in one go.
PANEL_JS = r"""
const texts = {};
for (const el of document.querySelectorAll('[data-metric]')) texts[el.dataset.metric] = el.textContent;
return {texts, state: window.sightline.state};
"""


# The chart's samples, the state the panel last rendered, and how many canvas pixels carry each
# series colour (SERIES in web/chart.js), read in one go.
CHART_JS = r"""
const canvas = document.getElementById('fps-chart');
const ctx = canvas.getContext('2d');
const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
const colors = {capture: [0x35, 0xd0, 0x7f], processed: [0x00, 0xe5, 0xff], sent: [0xff, 0xb0, 0x20]};
const counts = {capture: 0, processed: 0, sent: 0};
for (let i = 0; i < data.length; i += 4) {
  for (const [key, c] of Object.entries(colors)) {
    if (Math.abs(data[i] - c[0]) <= 30 && Math.abs(data[i + 1] - c[1]) <= 30 && Math.abs(data[i + 2] - c[2]) <= 30) counts[key] += 1;
  }
}
return {chart: window.sightline.chart, state: window.sightline.state, counts,
        width: canvas.width, height: canvas.height, cssHeight: canvas.clientHeight};
"""
MIN_LINE_PIXELS = 20
COINCIDENT_FPS = 1.0  # chart lines this close lie on the same pixels
MIN_SERIES_PIXELS = 5


def value_at(state, path):
    for key in path.split("."):
        state = state[key]
    return state


def test_metrics_agree_with_api_state(server_url, driver):
    open_page(driver, server_url, 1280, 720)
    direct = [get_json(server_url + "/api/state")]
    # The page polls about once a second; sample the server meanwhile, until the page shows a
    # state it fetched after the first direct read and its chart holds two polls' samples.
    page_caught_up = ("const s = window.sightline.state, c = window.sightline.chart;"
                      "return !!s && s.uptimeSeconds > arguments[0]"
                      " && c.samples.filter((x) => !x.gap).length >= 2")
    deadline = time.monotonic() + 20
    while not driver.execute_script(page_caught_up, direct[0]["uptimeSeconds"]):
        assert time.monotonic() < deadline, "the page showed no state fetched after the first direct read in 20 s"
        time.sleep(0.25)  # poll interval; each turn is also one more direct read
        direct.append(get_json(server_url + "/api/state"))
    panel = driver.execute_script(PANEL_JS)
    direct.append(get_json(server_url + "/api/state"))
    shown, rendered = panel["texts"], panel["state"]
    assert rendered is not None, "the page never received /api/state"

    # The panel shows exactly the numbers of the state it fetched ...
    for path in FPS_PATHS:
        assert float(shown[path]) == pytest.approx(value_at(rendered, path), abs=0.051), path
    for path in COUNTER_PATHS + ("clients.ws",):
        assert float(shown[path]) == value_at(rendered, path), path
    for stage, stats in rendered.get("stages", {}).items():
        for quantile in ("p50", "p99"):
            text = shown[f"stages.{stage}.{quantile}"]
            if quantile not in stats:  # omitted while the stage has no samples
                assert text == MISSING_TEXT, (stage, quantile, text)
            else:
                assert float(text) == pytest.approx(stats[quantile], rel=0.01, abs=0.006), (stage, quantile)

    # ... and that state agrees with direct reads of /api/state taken around it: counters lie
    # between the first and last read, rates within the range the server reported meanwhile.
    for path in COUNTER_PATHS:
        lo, hi = value_at(direct[0], path), value_at(direct[-1], path)
        assert lo <= float(shown[path]) <= hi, (path, lo, shown[path], hi)
    for path in FPS_PATHS:
        seen = [value_at(d, path) for d in direct]
        slack = max(2.0, 0.15 * max(seen))
        assert min(seen) - slack <= float(shown[path]) <= max(seen) + slack, (path, shown[path], seen)
    assert float(shown["fps.capture"]) > 0
    assert float(shown["clients.ws"]) >= 1  # this page itself
    assert driver.find_element(By.ID, "status-text").text == "live"

    # The two-minute chart: one sample per poll, holding the fps of the state the panel shows,
    # within the range of the direct reads, and drawn as lines on its canvas.
    chart = driver.execute_script(CHART_JS)
    samples = [s for s in chart["chart"]["samples"] if not s.get("gap")]
    assert len(samples) >= 2, chart["chart"]
    assert chart["height"] > 0 and chart["cssHeight"] >= 60
    times = [s["t"] for s in samples]
    assert times == sorted(times) and times[-1] - times[0] <= 120_000
    for key in ("capture", "processed", "sent"):
        assert samples[-1][key] == pytest.approx(chart["state"]["fps"][key], abs=1e-9), key
        seen = [value_at(d, f"fps.{key}") for d in direct]
        slack = max(2.0, 0.15 * max(seen))
        assert min(seen) - slack <= samples[-1][key] <= max(seen) + slack, (key, samples[-1][key], seen)
    assert chart["chart"]["drawnSegments"] >= 3
    # A few seconds of history is a short line (the window is two minutes), so ask for a handful
    # of pixels per visible series and a line's worth in all.
    # Series are drawn widest first (sent 5 px, processed 3 px, capture 1.5 px on top): where
    # processed matches capture, its band beside the capture line is under a pixel wide and
    # shows only anti-aliased slivers, so it is only required to show where it differs.
    assert chart["counts"]["capture"] >= MIN_SERIES_PIXELS, chart["counts"]
    covered = all(abs(s["processed"] - s["capture"]) < COINCIDENT_FPS for s in samples)
    assert covered or chart["counts"]["processed"] >= MIN_SERIES_PIXELS, (chart["counts"], samples[-3:])
    assert sum(chart["counts"].values()) >= MIN_LINE_PIXELS, chart["counts"]


def test_keyboard_toggles(server_url, driver):
    open_page(driver, server_url, 1280, 720)
    landmarks = driver.find_element(By.ID, "toggle-landmarks")
    assert not landmarks.is_selected()
    driver.find_element(By.TAG_NAME, "body").send_keys("l")
    assert landmarks.is_selected()
    # Tab reaches the toggles; Space flips the focused one.
    body = driver.find_element(By.TAG_NAME, "body")
    focused = []
    for _ in range(8):
        body.send_keys(Keys.TAB) if not focused else driver.switch_to.active_element.send_keys(Keys.TAB)
        focused.append(driver.switch_to.active_element.get_attribute("id"))
        if focused[-1] == "toggle-landmarks":
            break
    assert "toggle-landmarks" in focused, focused
    driver.switch_to.active_element.send_keys(Keys.SPACE)
    assert not landmarks.is_selected()


def wait_for_metrics_panel(driver, timeout=15):
    """Until the metrics panel shows a polled /api/state and the chart has a sample to draw."""
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
        "const s = window.sightline, el = document.querySelector('[data-metric=\"fps.capture\"]');"
        "return !!s.state && s.chart.samples.length >= 1 && !!el && el.textContent !== '\u2013'"))


def test_screenshots(server_url, driver, artifacts_dir):
    # The JPEG run (test_page_jpeg.py) may run at the same time: its pictures get names of their own.
    video = os.environ.get("SIGHTLINE_TEST_VIDEO")
    suffix = f"-{video}" if video else ""
    open_page(driver, server_url, 1280, 720)
    driver.find_element(By.TAG_NAME, "body").send_keys("l")  # show landmarks too
    snapshot_with_template(driver)
    wait_for_metrics_panel(driver)
    assert driver.save_screenshot(str(artifacts_dir / f"page{suffix}.png"))
    # A tall window shows the tool cards (source, templates, faces, access) below the metrics.
    open_page(driver, server_url, 1280, 1700)
    wait_for_metrics_panel(driver)
    assert driver.save_screenshot(str(artifacts_dir / f"page-tall{suffix}.png"))
    open_page(driver, server_url, 390, 844)
    wait_for_metrics_panel(driver)
    assert driver.save_screenshot(str(artifacts_dir / f"page-phone{suffix}.png"))
    # At phone width nothing overflows sideways.
    assert driver.execute_script("return document.documentElement.scrollWidth") <= 390


def test_reconnects_after_server_restart(make_server, driver):
    server = make_server().start()
    open_page(driver, server.url, 1000, 700)
    WebDriverWait(driver, 10).until(lambda d: status_of(d) == "live")
    server.stop()
    WebDriverWait(driver, 10).until(lambda d: status_of(d) == "reconnecting")
    seq_before = driver.execute_script("return window.sightline.lastDrawn.seq")
    server.start()
    WebDriverWait(driver, 30).until(lambda d: status_of(d) == "live")
    # Frames flow again (a restarted server may restart seq, so just wait for a change).
    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script("return window.sightline.lastDrawn.seq") != seq_before)
