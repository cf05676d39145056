"""test_page.py's tests again with the page asked for JPEG (`/?video=jpeg`, as
SIGHTLINE_TEST_VIDEO=jpeg asks for any test), beside the rest of the suite: the page plays H.264
where the browser can (Chromium on 127.0.0.1 can), and JPEG stays what a viewer may choose and
what an old browser gets."""
import pytest
from selenium.webdriver.support.ui import WebDriverWait

from browser_support import FRAME_TIMEOUT_S, open_page
# The tests, collected here a second time (only tests: the fixtures come from Tests/conftest.py).
from test_page import (  # noqa: F401
    test_keyboard_toggles, test_metrics_agree_with_api_state, test_page_loads_without_console_errors,
    test_reconnects_after_server_restart, test_screenshots, test_template_box_drawn_on_ground_truth)


@pytest.fixture(autouse=True)
def jpeg_video(monkeypatch):
    monkeypatch.setenv("SIGHTLINE_TEST_VIDEO", "jpeg")


def test_the_page_paints_jpeg_when_asked_for_it(server_url, driver):
    """What makes this file's run a JPEG run: 20 frames painted in a row are JPEG, none H.264."""
    open_page(driver, server_url, 1280, 720)
    painted = {}

    def twenty_painted(d):
        last = d.execute_script("const l = window.sightline.lastDrawn; return l ? [l.seq, l.format] : null")
        if last:
            painted[last[0]] = last[1]
        return len(painted) >= 20

    WebDriverWait(driver, FRAME_TIMEOUT_S, poll_frequency=0.02).until(
        twenty_painted, message=f"fewer than 20 frames painted: {painted}")
    assert set(painted.values()) == {"jpeg"}, painted
