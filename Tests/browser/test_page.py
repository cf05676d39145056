"""Browser tests for the Sightline web client (web/), against `sightline serve --source demo`.

Run:  pip install pytest selenium ;  python -m pytest Tests/browser -v
Needs headless Chromium + chromedriver (Debian: apt-get install chromium chromium-driver).
The fixtures live in this file (not a conftest.py) so that running Tests/e2e and Tests/browser
in one pytest call does not shadow the e2e suite's `from conftest import ...`.

Environment:
  SIGHTLINE_BIN          server binary (default <repo>/.build/release/sightline); missing -> skip
  SIGHTLINE_URL          use an already running server at this base URL instead of starting one
  SIGHTLINE_CHROMIUM     browser binary (default /usr/bin/chromium)
  SIGHTLINE_CHROMEDRIVER driver binary (default /usr/bin/chromedriver)
  SIGHTLINE_TEST_DATA    shared test data (default <repo>/../shared/testdata; test_tools.py)
  SIGHTLINE_TEST_VIDEO   jpeg or h264: open_page asks the page for that video mode (/?video=...);
                         unset, the page picks its default (H.264 where Chromium can decode it)
The servers started here get SIGHTLINE_TOKEN=TEST_TOKEN, so tests know the token.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[2]
WEB_ROOT = REPO / "web"
ARTIFACTS = REPO / "artifacts"
READY_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10
CHROMIUM = os.environ.get("SIGHTLINE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SIGHTLINE_CHROMEDRIVER", "/usr/bin/chromedriver")
TEST_TOKEN = "browser-test-token-5f1c"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SightlineServer:
    """One `sightline serve` process (source demo unless told) on a free port; start() waits until
    ready. It runs with SIGHTLINE_TOKEN=token; extra_args go after the standard ones."""

    def __init__(self, binary, port=None, source="demo", extra_args=(), token=TEST_TOKEN):
        self.binary = str(binary)
        self.source = source
        self.extra_args = list(extra_args)
        self.token = token
        self.port = port or 0
        self.scheme = "http"
        self.data_dir = tempfile.mkdtemp(prefix="sightline-browser-")
        self.url = f"{self.scheme}://127.0.0.1:{self.port}"
        self.process = None
        self.log_path = Path(self.data_dir) / "server.log"

    def start(self):
        log = open(self.log_path, "ab")
        env = dict(os.environ, SIGHTLINE_TOKEN=self.token)
        # Port 0 unless one was asked for: the server binds a free port itself and logs it,
        # so no other process can take it between choosing and binding. A restart asks for
        # the port the first start learned, so an open page reconnects to the same address.
        asked_port = self.port
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process = subprocess.Popen(
            [self.binary, "serve", "--source", self.source, "--host", "127.0.0.1", "--port", str(asked_port),
             "--data-dir", self.data_dir, "--web-root", str(WEB_ROOT), *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sightline exited with {self.process.returncode}:\n{self.log()}")
            if self.port == 0:
                found = re.search(rb"url=https?://[^ ]*:(\d+)/", self.log_path.read_bytes()[log_start:])
                if not found:
                    time.sleep(0.05)
                    continue
                self.port = int(found.group(1))
                self.url = f"{self.scheme}://127.0.0.1:{self.port}"
            try:
                with urllib.request.urlopen(self.url + "/api/state", timeout=1,
                                            context=self.ssl_context()) as response:
                    if response.status == 200:
                        return self
            except urllib.error.HTTPError as error:
                if error.code == 401:
                    return self   # it answers; watching needs a token here
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"sightline did not answer GET /api/state within {READY_TIMEOUT_S} s:\n{self.log()}")

    def add_token(self, name, role="viewer"):
        """Adds a token to the server's data directory with `sightline token add` (before or
        while it runs) and returns it."""
        added = subprocess.run([self.binary, "token", "add", name, "--role", role, "--data-dir", self.data_dir],
                               capture_output=True, text=True, timeout=30)
        assert added.returncode == 0, added.stderr
        return added.stdout.strip()

    def ssl_context(self):
        """None over HTTP; over HTTPS one that accepts the server's self-signed certificate."""
        if self.scheme != "https":
            return None
        import ssl
        unverified = ssl.create_default_context()
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        return unverified

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def server_binary():
    binary = Path(os.environ.get("SIGHTLINE_BIN", REPO / ".build" / "release" / "sightline"))
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.skip(f"sightline binary not found at {binary}; build it (swift build -c release) or set SIGHTLINE_BIN")
    return binary


@pytest.fixture(scope="session")
def server_url():
    """Base URL of a running demo server (started here unless SIGHTLINE_URL is set)."""
    external = os.environ.get("SIGHTLINE_URL")
    if external:
        yield external.rstrip("/")
        return
    server = SightlineServer(server_binary())
    try:
        server.start()
        yield server.url
    finally:
        server.cleanup()


@pytest.fixture
def make_server():
    """Factory for extra servers a test controls itself (e.g. to stop and restart one)."""
    if os.environ.get("SIGHTLINE_URL"):
        pytest.skip("test needs to start its own server; unset SIGHTLINE_URL")
    binary = server_binary()
    servers = []

    def make(port=None):
        server = SightlineServer(binary, port)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.cleanup()


def _new_driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists():
        pytest.skip(f"Chromium/chromedriver not found at {CHROMIUM} / {CHROMEDRIVER}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module."""
    driver = _new_driver()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def driver(browser):
    """The module's browser with its viewport emulation reset after each test."""
    yield browser
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.fixture(scope="session")
def artifacts_dir():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# --- page helpers -------------------------------------------------------------

FRAME_TIMEOUT_S = 20
TEMPLATE_RGB = (0x00, 0xE5, 0xFF)  # COLORS.template in web/overlay.js
BACKGROUND_RGB = (0x0B, 0x0D, 0x10)  # COLORS.background in web/overlay.js
COLOR_TOLERANCE = 40
# The detector is multi-scale and coarse (see Tests/e2e/test_stream_demo.py), so "on the ground
# truth" means the same overlap criterion the server's own demo test uses.
MIN_IOU = 0.5
EDGE_TOLERANCE_PX = 2

# One synchronous script, so the canvas pixels and the debug record belong to the same paint.
SNAPSHOT_JS = r"""
const drawn = window.sightline && window.sightline.lastDrawn;
const canvas = document.getElementById('view');
if (!drawn || canvas.width !== drawn.canvas.width || canvas.height !== drawn.canvas.height) return null;
const detection = (drawn.detections || []).find((d) => d.kind === 'template' && d.box);
const truths = (drawn.groundTruth || []).filter((t) => t && t.box);
const truth = truths.find((t) => detection && t.label === detection.label) || truths[0];
if (!truth || !detection) return null;
// Independent letterbox fit (deliberately not imported from geometry.js).
const scale = Math.min(canvas.width / drawn.width, canvas.height / drawn.height);
const offX = (canvas.width - drawn.width * scale) / 2, offY = (canvas.height - drawn.height * scale) / 2;
const cx = Math.round(offX + (truth.box.x + truth.box.w / 2) * drawn.width * scale);
const cy = Math.round(offY + (truth.box.y + truth.box.h / 2) * drawn.height * scale);
const ctx = canvas.getContext('2d');
const row = Array.from(ctx.getImageData(0, cy, canvas.width, 1).data);
const col = Array.from(ctx.getImageData(cx, 0, 1, canvas.height).data);
// An edge on the canvas border is half clipped: sample its inner half.
const clampTo = (v, size) => Math.min(size - 1, Math.max(0, Math.floor(v)));
const pixel = (x, y) =>
  Array.from(ctx.getImageData(clampTo(x, canvas.width), clampTo(y, canvas.height), 1, 1).data).slice(0, 3);
const edges = drawn.rects.filter((r) => r.kind === 'template' && r.label === detection.label).map((r) => ({
  left: pixel(r.x, r.y + r.h / 2), right: pixel(r.x + r.w, r.y + r.h / 2),
  top: pixel(r.x + r.w / 2, r.y), bottom: pixel(r.x + r.w / 2, r.y + r.h)}));
const bar = offX > 2 ? pixel(offX / 2, canvas.height / 2) : offY > 2 ? pixel(canvas.width / 2, offY / 2) : null;
return {drawn: JSON.parse(JSON.stringify(drawn)), detection, truth, cx, cy, row, col, edges, bar,
        cssWidth: canvas.clientWidth, cssHeight: canvas.clientHeight, dpr: window.devicePixelRatio};
"""


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def fit_contain(src_w, src_h, dst_w, dst_h):
    scale = min(dst_w / src_w, dst_h / src_h)
    width, height = src_w * scale, src_h * scale
    return {"scale": scale, "offsetX": (dst_w - width) / 2, "offsetY": (dst_h - height) / 2,
            "width": width, "height": height}


def box_to_canvas(box, fit):
    return {"x": fit["offsetX"] + box["x"] * fit["width"], "y": fit["offsetY"] + box["y"] * fit["height"],
            "w": box["w"] * fit["width"], "h": box["h"] * fit["height"]}


def is_color(rgb, expected, tolerance=COLOR_TOLERANCE):
    return all(abs(a - b) <= tolerance for a, b in zip(rgb, expected))


def coloured_positions(rgba, expected):
    return [i for i in range(len(rgba) // 4) if is_color(rgba[4 * i:4 * i + 3], expected)]


def nearest(positions, target):
    return min(positions, key=lambda p: abs(p - target)) if positions else None


def open_page(driver, url, width, height, dpr=1):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": dpr, "mobile": False})
    video = os.environ.get("SIGHTLINE_TEST_VIDEO")
    driver.get(url + "/" + (f"?video={video}" if video else ""))
    wait_for_frame(driver)


def wait_for_frame(driver, timeout=FRAME_TIMEOUT_S):
    try:
        WebDriverWait(driver, timeout).until(
            lambda d: d.execute_script("return !!(window.sightline && window.sightline.lastDrawn)"))
    except TimeoutException:
        pytest.fail(f"no frame drawn within {timeout} s; status={status_of(driver)!r}; console={driver.get_log('browser')}")


def status_of(driver):
    return driver.execute_script("return document.getElementById('status').dataset.status")


def iou(a, b):
    ix = max(0.0, min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]))
    iy = max(0.0, min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]))
    inter = ix * iy
    union = a["w"] * a["h"] + b["w"] * b["h"] - inter
    return inter / union if union > 0 else 0.0


def snapshot_on_truth(snap):
    """IoU between the template detection and its ground truth in a snapshot."""
    return iou(snap["detection"]["box"], snap["truth"]["box"])


def snapshot_with_template(driver, timeout=FRAME_TIMEOUT_S, accept=lambda snap: True):
    """A consistent (debug record, pixels) snapshot of a frame with ground truth and a template
    detection; waits for one that `accept`s (the detector may miss the odd frame)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        snap = driver.execute_script(SNAPSHOT_JS)
        if snap:
            last = snap
            if accept(snap):
                return snap
        time.sleep(0.1)
    if last is None:
        pytest.fail(f"no frame with groundTruth and a template detection drawn within {timeout} s")
    return last


def severe_console_entries(driver):
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def test_page_loads_without_console_errors(server_url, driver):
    driver.get_log("browser")  # drop anything from earlier pages
    open_page(driver, server_url, 1280, 720)
    WebDriverWait(driver, 10).until(lambda d: status_of(d) == "live")
    time.sleep(2)  # a couple of polls and many frames
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
    for _ in range(10):  # the page polls about once a second; sample the server meanwhile
        time.sleep(0.25)
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


def test_screenshots(server_url, driver, artifacts_dir):
    open_page(driver, server_url, 1280, 720)
    driver.find_element(By.TAG_NAME, "body").send_keys("l")  # show landmarks too
    snapshot_with_template(driver)
    time.sleep(1.5)  # let the metrics panel fill in
    assert driver.save_screenshot(str(artifacts_dir / "page.png"))
    # A tall window shows the tool cards (source, templates, faces, access) below the metrics.
    open_page(driver, server_url, 1280, 1700)
    time.sleep(1.5)
    assert driver.save_screenshot(str(artifacts_dir / "page-tall.png"))
    open_page(driver, server_url, 390, 844)
    time.sleep(1.5)
    assert driver.save_screenshot(str(artifacts_dir / "page-phone.png"))
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
