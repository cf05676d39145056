"""The page over HTTPS in headless Chromium: a self-signed certificate (tls.auto),
accepted as a user would click through it, the WebSocket following the page's scheme
(wss), frames drawn, and no console errors under the Content-Security-Policy."""

import tempfile
import time
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from test_page import CHROMEDRIVER, CHROMIUM, SightlineServer, server_binary, severe_console_entries, status_of, \
    wait_for_frame


class HTTPSServer(SightlineServer):
    """A SightlineServer with tls.auto: it makes a self-signed certificate and serves HTTPS."""

    def __init__(self, binary):
        config = Path(tempfile.mkdtemp(prefix="sightline-tls-")) / "tls.yaml"
        config.write_text("tls: {auto: true}\n")
        super().__init__(binary, extra_args=["--config", str(config)])
        self.scheme = "https"


@pytest.fixture
def https_driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    if not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists():
        pytest.skip(f"Chromium/chromedriver not found at {CHROMIUM} / {CHROMEDRIVER}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800", "--ignore-certificate-errors"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_page_streams_over_https_and_wss(https_driver):
    server = HTTPSServer(server_binary()).start()
    try:
        https_driver.get(server.url + "/")
        wait_for_frame(https_driver)
        WebDriverWait(https_driver, 10).until(lambda d: status_of(d) == "live")
        assert https_driver.execute_script("return location.protocol") == "https:"
        time.sleep(1.5)
        first = https_driver.execute_script("return window.sightline.lastDrawn.seq")
        time.sleep(1.0)
        assert https_driver.execute_script("return window.sightline.lastDrawn.seq") > first
        assert severe_console_entries(https_driver) == []
    finally:
        server.cleanup()
