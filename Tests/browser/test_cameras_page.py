"""Browser tests for a server with several cameras: the Cameras card (a live tile per camera, each
its own frames with its own boxes, closed while out of view) and ?camera=NAME (the page of one
camera with all its tools, every path under /cam/NAME/ and /api/cameras/NAME/).

The server runs two cameras from a config file: `frontdoor` (the demo, 640x480) and `backyard` (vtest.avi,
768x576), so a frame's size says whose it is. Fixtures and helpers come from test_page.py.
"""
import os
import tempfile

import pytest

from sightline_paths import TEST_DATA  # noqa: E402
from browser_support import (  # noqa: E402
    FRAME_TIMEOUT_S, SightlineServer, server_binary, open_page, wait_for_frame, get_json,
    severe_console_entries)

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

VIDEO = TEST_DATA / "video" / "vtest.avi"
SIZES = {"frontdoor": (640, 480), "backyard": (768, 576)}
UI_TIMEOUT_S = 15
# A tile has shown this many frames before it counts as streaming.
MIN_TILE_FRAMES = 3

CONFIG = """\
cameras:
  frontdoor:
    source: {{spec: "demo?fps=10"}}
  backyard:
    source: {{spec: "file:{video}"}}
    faces: {{enabled: false}}
"""

TILES_JS = r"""
return [...document.querySelectorAll('#cameras .camera-tile')].map((tile) => {
  const canvas = tile.querySelector('canvas');
  return {name: tile.dataset.camera, current: tile.dataset.current, streaming: tile.dataset.streaming,
          connection: tile.dataset.connection || null, state: tile.dataset.state || null,
          href: tile.querySelector('a').getAttribute('href'),
          detail: tile.querySelector('.camera-detail').textContent,
          nameCut: (() => { const t = tile.querySelector('.camera-title'); return t.scrollWidth > t.clientWidth; })(),
          seq: canvas.dataset.seq ?? null, frames: Number(canvas.dataset.frames || 0),
          width: Number(canvas.dataset.width || 0), height: Number(canvas.dataset.height || 0)};
});
"""

# The paths of every fetch the page made (resource timing), without the host.
REQUESTS_JS = r"""
return performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname);
"""


@pytest.fixture(scope="module")
def cameras_server():
    """One server with the two cameras (frontdoor first: it also answers the unprefixed routes)."""
    if os.environ.get("SIGHTLINE_URL"):
        pytest.skip("these tests start their own server (they need a config with two cameras)")
    if not VIDEO.is_file():
        pytest.skip(f"test data not found at {VIDEO}; set SIGHTLINE_TEST_DATA")
    binary = server_binary()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="sightline-cameras-", delete=False) as config:
        config.write(CONFIG.format(video=VIDEO))
    server = SightlineServer(binary, source="demo?fps=10", extra_args=["--config", config.name])
    try:
        server.start()
        yield server
    finally:
        server.cleanup()
        os.unlink(config.name)


def tiles(driver):
    return {tile["name"]: tile for tile in driver.execute_script(TILES_JS)}


def wait_for_tiles(driver, names, timeout=UI_TIMEOUT_S):
    WebDriverWait(driver, timeout).until(lambda d: sorted(tiles(d)) == sorted(names),
                                         message=f"tiles {sorted(names)} not shown")


def wait_until_tiles_stream(driver, names, timeout=FRAME_TIMEOUT_S):
    """Each named tile paints frames of its own camera's size, and new ones keep coming."""
    WebDriverWait(driver, timeout).until(
        lambda d: all(tiles(d)[n]["frames"] >= MIN_TILE_FRAMES for n in names),
        message=f"tiles did not stream: {tiles(driver)}")
    before = tiles(driver)
    WebDriverWait(driver, timeout).until(
        lambda d: all(tiles(d)[n]["seq"] != before[n]["seq"] for n in names),
        message=f"tile frames stopped: {tiles(driver)}")
    for name in names:
        tile = tiles(driver)[name]
        assert (tile["width"], tile["height"]) == SIZES[name], tile


def ws_clients(server, name):
    cameras = {c["name"]: c for c in get_json(server.url + "/api/cameras")["cameras"]}
    return cameras[name]["clients"]["ws"]


def main_view_size(driver):
    return driver.execute_script("const d = window.sightline.lastDrawn; return d && [d.width, d.height];")


def test_the_grid_streams_every_camera_and_the_page_the_first(cameras_server, driver):
    driver.get_log("browser")  # drop anything from earlier pages
    open_page(driver, cameras_server.url, 1400, 1000)
    assert driver.find_element(By.ID, "cameras").is_displayed()
    wait_for_tiles(driver, ["frontdoor", "backyard"])
    wait_until_tiles_stream(driver, ["frontdoor", "backyard"])
    shown = tiles(driver)
    # Without ?camera the main view is the first camera's, and its tile is the marked one.
    assert tuple(main_view_size(driver)) == SIZES["frontdoor"]
    assert driver.execute_script("return window.sightline.camera") is None
    assert shown["frontdoor"]["current"] == "true" and shown["backyard"]["current"] == "false"
    assert shown["backyard"]["href"] == "?camera=backyard"
    WebDriverWait(driver, UI_TIMEOUT_S).until(lambda d: tiles(d)["backyard"]["detail"].startswith("live · "))
    # Each tile shows its whole name beside or above its detail, never cut to a few letters.
    for width in (1400, 700):
        driver.set_window_size(width, 1000)
        shown = tiles(driver)
        assert not any(t["nameCut"] for t in shown.values()), (width, shown)
    driver.set_window_size(1400, 1000)
    assert driver.find_element(By.ID, "camera-name").text == "frontdoor"
    # The page's own requests stay unprefixed.
    requests = driver.execute_script(REQUESTS_JS)
    assert "/api/state" in requests and "/api/templates" in requests, requests
    assert not any(path.startswith("/api/cameras/") for path in requests), requests
    assert severe_console_entries(driver) == []


def test_tiles_out_of_view_close_their_sockets(cameras_server, driver):
    # A short window: the panel scrolls, so the Cameras card (its top) can leave the view.
    open_page(driver, cameras_server.url, 1400, 500)
    wait_for_tiles(driver, ["frontdoor", "backyard"])
    wait_until_tiles_stream(driver, ["frontdoor", "backyard"])
    assert ws_clients(cameras_server, "backyard") >= 1
    driver.execute_script("document.querySelector('.panel').scrollTop = 1e6")
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: all(t["streaming"] == "false" and t["connection"] == "closed" for t in tiles(d).values()),
        message=f"tiles still streaming out of view: {tiles(driver)}")
    # The server sees the backyard's socket go (nothing else of this page watches the backyard).
    WebDriverWait(driver, UI_TIMEOUT_S).until(lambda d: ws_clients(cameras_server, "backyard") == 0,
                                              message="the backyard's WebSocket stayed open")
    frames = {name: tile["frames"] for name, tile in tiles(driver).items()}
    driver.execute_script("document.querySelector('.panel').scrollTop = 0")
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: all(tiles(d)[n]["frames"] > frames[n] for n in frames),
        message=f"tiles did not stream again once seen: {tiles(driver)}")
    assert all(t["streaming"] == "true" for t in tiles(driver).values())


def test_clicking_a_tile_opens_that_camera_with_all_its_tools(cameras_server, driver):
    open_page(driver, cameras_server.url, 1400, 1000)
    wait_for_tiles(driver, ["frontdoor", "backyard"])
    driver.find_element(By.CSS_SELECTOR, '#cameras .camera-tile[data-camera="backyard"] a').click()
    WebDriverWait(driver, UI_TIMEOUT_S).until(lambda d: "camera=backyard" in d.current_url)
    wait_for_frame(driver)
    assert driver.execute_script("return window.sightline.camera") == "backyard"
    # The main stream is the backyard's, and so is what the header and the Source card say.
    WebDriverWait(driver, FRAME_TIMEOUT_S).until(lambda d: tuple(main_view_size(d)) == SIZES["backyard"],
                                                 message=f"main view {main_view_size(driver)} is not the backyard's")
    assert driver.find_element(By.ID, "camera-name").text == "backyard"
    WebDriverWait(driver, UI_TIMEOUT_S).until(lambda d: "vtest" in d.find_element(By.ID, "source-name").text)
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: "vtest" in d.find_element(By.CSS_SELECTOR, '#sources [data-role="current"]').text)
    # Every tool asked the backyard's API; nothing went to the unprefixed (first camera's) routes.
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: {"/api/cameras/backyard/state", "/api/cameras/backyard/templates", "/api/cameras/backyard/sources",
                   "/api/cameras/backyard/events"} <= set(d.execute_script(REQUESTS_JS)),
        message=f"requests: {driver.execute_script(REQUESTS_JS)}")
    requests = driver.execute_script(REQUESTS_JS)
    unprefixed = [p for p in requests if p.startswith("/api/") and not p.startswith("/api/cameras")
                  and p != "/api/session"]
    assert unprefixed == [], requests
    # An event's clip and pictures are the backyard's too.
    urls = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('/events.js').then((m) => done([m.clipURL('e1'), m.eventsQuery({})]));")
    assert urls == ["/api/cameras/backyard/events/e1/clip.mp4", "/api/cameras/backyard/events?limit=30"]
    # The grid marks the backyard now, and still streams both.
    wait_until_tiles_stream(driver, ["frontdoor", "backyard"])
    shown = tiles(driver)
    assert shown["backyard"]["current"] == "true" and shown["frontdoor"]["current"] == "false"
    assert severe_console_entries(driver) == []


def test_an_unknown_camera_says_so(cameras_server, driver):
    driver.get(cameras_server.url + "/?camera=garage&video=jpeg")
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: "garage" in d.find_element(By.CSS_SELECTOR, '#cameras [data-role="notice"]').text)
    wait_for_tiles(driver, ["frontdoor", "backyard"])
    driver.get_log("browser")  # the refused WebSocket and state requests are logged: expected here


def test_one_camera_shows_no_grid(make_server, driver):
    server = make_server().start()  # no cameras: in its config: one camera, as before
    open_page(driver, server.url, 1280, 720)
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.getElementById('cameras').dataset.cameras") is not None)
    assert not driver.find_element(By.ID, "cameras").is_displayed()
    assert tiles(driver) == {}
    assert not driver.find_element(By.ID, "camera-name").is_displayed()
