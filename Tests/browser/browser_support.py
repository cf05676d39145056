"""What the browser tests share: the `sightline serve` they run, a headless Chromium, their
fixtures (Tests/conftest.py imports them, so every test has them) and page helpers.

Needs headless Chromium + chromedriver (Debian: apt-get install chromium chromium-driver) and selenium;
this module imports selenium only where it is used, so the e2e suite loads it without.

Environment:
  SIGHTLINE_BIN          server binary (default <repo>/.build/release/sightline); missing -> skip
  SIGHTLINE_URL          use an already running server at this base URL instead of starting one
  SIGHTLINE_CHROMIUM     browser binary (default /usr/bin/chromium)
  SIGHTLINE_CHROMEDRIVER driver binary (default /usr/bin/chromedriver)
  SIGHTLINE_TEST_DATA    shared test data (default <repo>/../shared/testdata)
  SIGHTLINE_MODELS       face models (default <repo>/../shared/models)
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

from sightline_paths import REPO, TEST_DATA, WEB_ROOT, YUNET, server_binary, shared_data, yunet_model  # noqa: F401


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


def new_chromium(*extra_args, window="1400,1000", performance_log=False):
    """A headless Chromium under chromedriver (skips the test where either is missing): the
    suite's flags, the window size, `extra_args`, and the browser console log (plus the
    network log with `performance_log`). The caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists():
        pytest.skip(f"Chromium/chromedriver not found at {CHROMIUM} / {CHROMEDRIVER}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window}", *extra_args):
        options.add_argument(arg)
    logs = {"browser": "ALL", "performance": "ALL"} if performance_log else {"browser": "ALL"}
    options.set_capability("goog:loggingPrefs", logs)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _new_driver():
    """The page tests' Chromium (kept for test files that call it)."""
    return new_chromium("--hide-scrollbars")


# --- fixtures (Tests/conftest.py makes them every test's) ---------------------------


@pytest.fixture(scope="module")
def server_url():
    """Base URL of a running demo server (started here unless SIGHTLINE_URL is set), one per test
    module: a demo server analyses its 30 fps whether watched or not, so one kept for the session
    took CPU from every later module on that worker."""
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
    """Factory for servers a test controls itself: make_server(source=..., extra_args=[...])
    returns a SightlineServer not yet started (start() it; it may be stopped and restarted)."""
    if os.environ.get("SIGHTLINE_URL"):
        pytest.skip("test needs to start its own server; unset SIGHTLINE_URL")
    binary = server_binary()
    servers = []

    def make(port=None, **kwargs):
        server = SightlineServer(binary, port, **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.cleanup()


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


@pytest.fixture
def chromium():
    """Factory for a Chromium with flags of its own: chromium(*args, window=..., performance_log=...);
    each one made is quit after the test."""
    made = []

    def make(*extra_args, **kwargs):
        made.append(new_chromium(*extra_args, **kwargs))
        return made[-1]

    yield make
    for driver in made:
        driver.quit()


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
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

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
