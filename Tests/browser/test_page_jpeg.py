"""test_page.py's tests again with the page asked for JPEG (`/?video=jpeg`, as
SIGHTLINE_TEST_VIDEO=jpeg asks for any test), beside the rest of the suite: the page plays H.264
where the browser can (Chromium on 127.0.0.1 can), and JPEG stays what a viewer may choose and
what an old browser gets."""
import time

import pytest

from test_page import *  # noqa: F401,F403  (the tests, collected here a second time, and their helpers)


@pytest.fixture(autouse=True)
def jpeg_video(monkeypatch):
    monkeypatch.setenv("SIGHTLINE_TEST_VIDEO", "jpeg")


def test_the_page_paints_jpeg_when_asked_for_it(server_url, driver):
    """What makes this file's run a JPEG run: the page paints JPEG frames, none in H.264."""
    open_page(driver, server_url, 1280, 720)
    formats = set()
    for _ in range(20):  # 20 paints read, a poll apart: frames keep coming, and each says its format
        formats.add(driver.execute_script("return window.sightline.lastDrawn.format"))
        time.sleep(0.05)  # poll interval
    assert formats == {"jpeg"}, formats
