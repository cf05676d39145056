"""Browser test for the Access card as a sign-in, on a server where watching needs a token
(`access.view: token`, as a server bound beyond loopback has by default): the page loads and
asks to sign in without the browser's own Basic prompt; a viewer token shows the picture and
says what a viewer may not do; signing out stops the picture; an admin may change things.
"""
import tempfile
from pathlib import Path

import pytest

from browser_support import TEST_TOKEN, SightlineServer, server_binary, wait_for_frame, severe_console_entries

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

UI_TIMEOUT_S = 15


@pytest.fixture(scope="module")
def closed_server():
    server = SightlineServer(server_binary(), source="demo")
    config = Path(server.data_dir) / "closed.yaml"
    config.write_text("access: {view: token}\n")
    server.extra_args += ["--config", str(config)]
    server.viewer_token = server.add_token("livingroom")
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


def card_text(driver):
    return driver.find_element(By.CSS_SELECTOR, '#access [data-role="token-state"]').text


def wait_for_card(driver, server, wanted):
    """Waits until the Access card says `wanted`; on a timeout fails with what the page and the
    server said (card, notice, console, the end of the server's log)."""
    try:
        WebDriverWait(driver, UI_TIMEOUT_S).until(lambda d: wanted in card_text(d))
    except Exception:
        notice = driver.find_element(By.CSS_SELECTOR, '#access [data-role=notice]').get_attribute('textContent')
        pytest.fail(f"the card never said {wanted!r}: card {card_text(driver)!r}, notice {notice!r}, "
                    f"console {driver.get_log('browser')}, server log tail:\n{server.log()}")


def sign_in(driver, token):
    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.ID, "token-save").click()


def frames_drawn(driver):
    return driver.execute_script("return window.sightline && window.sightline.lastDrawn ? window.sightline.lastDrawn.seq : null")


def test_the_page_signs_in_shows_the_role_and_signs_out(closed_server, driver):
    driver.delete_all_cookies()
    driver.get(closed_server.url + "/")   # no Basic prompt: headless Chromium would hang on one
    wait_for_card(driver, closed_server, "needs a token to watch")
    assert frames_drawn(driver) is None

    sign_in(driver, closed_server.viewer_token)
    wait_for_card(driver, closed_server, "(viewer)")
    assert "“livingroom”" in card_text(driver) and "need an admin token" in card_text(driver)
    wait_for_frame(driver)   # the stream reconnected with the session cookie
    cookie = driver.get_cookie("sightline_session")
    assert cookie and cookie["httpOnly"] and cookie.get("sameSite") == "Strict", cookie
    assert driver.execute_script("return localStorage.length") == 0, "the page keeps no token"
    # A viewer's change is refused by the server.
    status = driver.execute_script(
        "return fetch('/api/templates/demo', {method: 'DELETE'}).then(r => r.status)")
    assert status == 403

    driver.find_element(By.ID, "sign-out").click()
    wait_for_card(driver, closed_server, "needs a token to watch")
    seq = frames_drawn(driver)
    status = driver.execute_script("return fetch('/api/state').then(r => r.status)")
    assert status == 401
    WebDriverWait(driver, UI_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.getElementById('status').dataset.status") != "live")
    assert frames_drawn(driver) == seq, "frames kept coming after signing out"

    sign_in(driver, TEST_TOKEN)
    wait_for_card(driver, closed_server, "(admin)")
    assert driver.execute_script("return document.body.dataset.mayChange") == "true"
    wait_for_frame(driver)
    # Refusals made on purpose are expected: 401s while signed out (the WebSocket's
    # "Authentication failed"), the viewer's 403.
    entries = [e for e in severe_console_entries(driver)
               if not any(expected in e.get("message", "") for expected in ("401", "Authentication failed", "403"))]
    assert entries == [], entries
