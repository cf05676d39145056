"""The page over HTTPS in headless Chromium: a self-signed certificate (tls.auto),
accepted as a user would click through it, the WebSocket following the page's scheme
(wss), frames drawn, and no console errors under the Content-Security-Policy."""

import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from browser_support import (
    SightlineServer, server_binary, severe_console_entries, status_of, wait_for_frame)


class HTTPSServer(SightlineServer):
    """A SightlineServer with tls.auto: it makes a self-signed certificate and serves HTTPS."""

    def __init__(self, binary):
        config = Path(tempfile.mkdtemp(prefix="sightline-tls-")) / "tls.yaml"
        config.write_text("tls: {auto: true}\n")
        super().__init__(binary, extra_args=["--config", str(config)])
        self.scheme = "https"


@pytest.fixture
def https_driver(chromium):
    """A Chromium that accepts the self-signed certificate, as a user clicking through would."""
    return chromium("--ignore-certificate-errors", window="1280,800")


def test_page_streams_over_https_and_wss(https_driver):
    server = HTTPSServer(server_binary()).start()
    try:
        https_driver.get(server.url + "/")
        wait_for_frame(https_driver)
        WebDriverWait(https_driver, 10).until(lambda d: status_of(d) == "live")
        assert https_driver.execute_script("return location.protocol") == "https:"
        # Frames keep coming over wss: waited for, not slept.
        first = https_driver.execute_script("return window.sightline.lastDrawn.seq")
        WebDriverWait(https_driver, 15).until(
            lambda d: d.execute_script("return window.sightline.lastDrawn.seq") >= first + 10)
        assert severe_console_entries(https_driver) == []
    finally:
        server.cleanup()
