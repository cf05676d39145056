"""Browser test for the Events card: on a made video where a logo and then a real face come
and go (Tests/e2e/scenes.py), the list grows while the video plays, a click shows the best
frame with its box drawn, and naming an unknown face from its event makes that person's next
event carry the name.
"""
import os
import tempfile
import time
from pathlib import Path

import pytest

from sightline_paths import TEST_DATA, yunet_model  # noqa: E402
from browser_support import TEST_TOKEN, SightlineServer, server_binary, open_page, severe_console_entries
from test_tools import enter_token  # noqa: E402

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
Image = pytest.importorskip("PIL.Image", reason="Pillow not installed; pip install pillow")
from scenes import comings_and_goings  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

LOOP_S = 11  # the video's length: each thing comes back once per loop


@pytest.fixture(scope="module")
def events_server():
    if os.environ.get("SIGHTLINE_URL"):
        pytest.skip("this test starts its own server")
    yunet = yunet_model()
    work = Path(tempfile.mkdtemp(prefix="sightline-events-page-"))
    template = Image.open(TEST_DATA / "templates" / "opencv-logo.png").convert("RGB")
    template = template.resize((110, int(110 * template.height / template.width)))
    template.save(work / "logo.png")
    face = Image.open(TEST_DATA / "faces" / "grace_hopper.jpg").convert("RGB").crop((90, 30, 430, 430)).resize((190, 224))
    comings_and_goings(work / "video.avi", template, face)
    (work / "events.yaml").write_text(
        "events:\n  minSeconds: 0.5\n  endAfterSeconds: 1\n  updateSeconds: 1\n  minUpdateSeconds: 0.5\n")
    server = SightlineServer(server_binary(), source=f"file:{work / 'video.avi'}", extra_args=[
        "--config", str(work / "events.yaml"), "--template", f"{work / 'logo.png'}=logo", "--face-model", str(yunet)])
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


def listed(driver):
    """[(id, kind, title text, open)] of the Events card's list, top to bottom."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#events .event')].map(li => "
        "[li.dataset.eventId, li.dataset.kind, li.querySelector('strong').textContent, li.dataset.open === 'true']);")


def test_events_grow_live_show_their_picture_and_naming_sticks(events_server, driver):
    open_page(driver, events_server.url, 1280, 900)
    wait = WebDriverWait(driver, 2 * LOOP_S + 10)
    wait.until(lambda d: len(listed(d)) >= 1)
    first = listed(driver)
    wait.until(lambda d: len(listed(d)) > len(first))  # grows while the video plays

    # A logo event's picture, with the box drawn where the logo is.
    wait.until(lambda d: any(kind == "template" and not is_open for _, kind, _, is_open in listed(d)))
    logo_id = next(i for i, kind, _, is_open in listed(driver) if kind == "template" and not is_open)
    driver.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{logo_id}"] button').click()
    WebDriverWait(driver, 10).until(lambda d: d.execute_script(
        "return document.querySelector('#events canvas').dataset.eventId === arguments[0]", logo_id))
    size, corners, top_mid = driver.execute_script("""
        const c = document.querySelector('#events canvas');
        const pts = c.dataset.box.split(' ').map(p => p.split(',').map(Number));
        const x = Math.round((pts[0][0] + pts[1][0]) / 2), y = Math.round(pts[0][1]);
        return [[c.width, c.height], pts, Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data)];""")
    assert size == [640, 480]
    # The logo is pasted at y=150 (120..240 px from the left as it drifts), 110 px wide.
    assert abs(corners[0][1] - 150) <= 12 and 100 <= corners[0][0] <= 260, corners
    assert abs((corners[1][0] - corners[0][0]) - 110) <= 15, corners
    assert top_mid[1] > 150 and top_mid[0] < 120, f"no box stroke at the box's top edge: {top_mid}"
    assert driver.execute_script("return document.querySelector('#events [data-role=name-form]').hidden") is True
    driver.find_element(By.CSS_SELECTOR, '#events [data-role="close"]').click()

    # An unknown face's event offers naming; name it (as the admin).
    enter_token(driver, TEST_TOKEN)
    wait.until(lambda d: any(kind == "face" and not is_open and title == "unknown face"
                             for _, kind, title, is_open in listed(d)))
    face_id = next(i for i, kind, title, is_open in listed(driver)
                   if kind == "face" and not is_open and title == "unknown face")
    driver.find_element(By.CSS_SELECTOR, f'#events [data-event-id="{face_id}"] button').click()
    form = driver.find_element(By.CSS_SELECTOR, '#events [data-role="name-form"]')
    WebDriverWait(driver, 10).until(lambda d: form.is_displayed())
    named_at = time.time()
    driver.find_element(By.ID, "event-person").send_keys("Grace")
    driver.find_element(By.CSS_SELECTOR, '#events [data-role="name-event"]').click()
    WebDriverWait(driver, 15).until(lambda d: d.execute_script(
        "const n = document.querySelector('#events [data-role=viewer-notice]');"
        "return !n.hidden && n.dataset.kind === 'ok' && n.textContent.includes('Grace')"))
    driver.find_element(By.CSS_SELECTOR, '#events [data-role="close"]').click()

    # The next appearance of that face is an event named Grace.
    def next_face_named(d):
        return [e for e in d.execute_script("return fetch('/api/events?kind=face').then(r => r.json())")["events"]
                if e["startTime"] > named_at and e.get("name") == "Grace"]
    WebDriverWait(driver, 2 * LOOP_S + 10).until(next_face_named)
    WebDriverWait(driver, 10).until(lambda d: any(kind == "face" and title == "Grace" for _, kind, title, _ in listed(d)))
    assert not severe_console_entries(driver), severe_console_entries(driver)
