"""The page over plain HTTP under another name than localhost (issue 40): headless Chromium opens
http://sightline.test:PORT/ (mapped to 127.0.0.1 by --host-resolver-rules, allowed by
access.allowedHosts), which is no secure context, so no WebCodecs. The page plays H.264 through
Media Source Extensions from `/ws?video=fmp4` by default and draws each presented picture's own
boxes (requestVideoFrameCallback's mediaTime -> the fragment's pts -> the frame's JSON).

The frame-code check (frame_code.py): the code read back from the painted picture equals the frame
index implied by the template box drawn with it on >= 99.5 % of painted frames, and the same check
fails on the same log with each frame's boxes moved to the next painted frame.

Figures are printed (pytest -s), never asserted: bits received against JPEG mode on the same page
and video, capture-to-presented p50/p90 for MSE, WebCodecs (on http://127.0.0.1) and JPEG.
"""
import json
import time

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
pytest.importorskip("av", reason="PyAV not installed; pip install av")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import frame_code
from test_h264 import OTHER_NAME, driver, frame_code_files, open_fresh, print_latency, servers  # noqa: F401 (fixtures)
from browser_support import status_of
from test_h264_player import (BITRATE_WINDOW_S, assert_frame_code_agrees, frame_code_agreement, record_paints,
                              video_state, wait_for_boxed_paint, wait_for_format)
from test_page import severe_console_entries

ALLOWED = f"access: {{allowedHosts: [\"{OTHER_NAME}\"]}}\n"
PLAYING_MSE = "Playing H.264 through Media Source Extensions"
FROZEN_S = 2.0          # how long the page is kept frozen while the server keeps sending
HIDDEN_SAMPLES = 8      # seconds of the hidden page sampled, once a second
SLOW_PAGE_THROTTLES = (3, 6, 12)  # CPU slow-downs of the page in the slow-page test (CDP), tried in turn
SLOW_PAGE_PAINTS = 80  # boxed paints recorded at each (the check needs at least 60)


def frame_code_server(servers, frame_code_files):
    video, patch = frame_code_files
    return servers(source=f"file:{video}?pace=native", extra_args=["--template", f"{patch}=code"], config=ALLOWED)


def bits_per_second(driver, seconds=BITRATE_WINDOW_S):
    """The page's own meter (JSON and binary messages) after `seconds` more of the stream: a
    measurement window (the meter's own is 3 s), not a wait for an event."""
    time.sleep(seconds)
    return driver.execute_script("return window.sightline.video.bitsPerSecond")


def test_plain_http_plays_h264_through_mse_with_each_pictures_own_boxes(servers, driver, frame_code_files):
    server = frame_code_server(servers, frame_code_files)
    url = f"http://{OTHER_NAME}:{server.port}"
    open_fresh(driver, url)
    assert driver.execute_script("return [location.hostname, window.isSecureContext, 'VideoDecoder' in window]") \
        == [OTHER_NAME, False, False]
    wait_for_format(driver, "mse", timeout=30)
    state = video_state(driver)
    assert state["mode"] == "mse" and state["mseAvailable"] and not state["h264Available"], state
    note = driver.find_element(By.ID, "video-note")
    assert note.is_displayed() and PLAYING_MSE in note.text, note.text
    assert driver.find_element(By.ID, "video-mse").is_selected()
    assert not driver.find_element(By.ID, "video-h264").is_enabled()
    wait_for_boxed_paint(driver, "mse")  # past the first keyframe and the template's first full search
    log = record_paints(driver, min_with_box=frame_code.PERIOD * 3, timeout=60, min_seconds=6)
    assert {e["format"] for e in log} == {"mse"}
    with_box = sum(1 for e in log if e["templates"])
    print(f"\n{len(log)} MSE pictures painted, {with_box} with the template's box")
    assert with_box >= 0.8 * len(log), f"the template was boxed on only {with_box} of {len(log)} painted frames"
    print(f"MSE player: {json.dumps(video_state(driver)['decoder'])}")
    assert_frame_code_agrees(log, "frame code over plain HTTP, MSE")
    seqs = [e["seq"] for e in log]
    assert seqs == sorted(set(seqs)), "pictures painted in seq order, each once"
    # The check itself: the boxes of the previous painted picture on each picture must fail it.
    shifted = [dict(entry, templates=previous["templates"]) for previous, entry in zip(log, log[1:])]
    agreeing, compared, _ = frame_code_agreement(shifted)
    assert compared >= 100 and agreeing / compared < 0.1, (agreeing, compared)
    span = (log[-1]["paintedAt"] - log[0]["paintedAt"]) / 1000
    print(f"painted {len(log) / span:.1f} fps over {span:.1f} s (source 30 fps)")
    print_latency("frame-code file over plain HTTP, MSE (capture to presented)", log)
    text = driver.find_element(By.CSS_SELECTOR, '[data-client="mode"]').text
    assert text == "H.264 (MSE) 640×480", text
    assert severe_console_entries(driver) == []


def test_a_slow_page_checks_each_copy_before_painting_it(servers, driver, frame_code_files):
    """A page that runs behind (CPU throttled through CDP, as on a slow phone) often has the next
    frame appended when a picture is presented, so the copy it makes may be the next picture: such
    copies are painted one callback later, once checked (docs/video.md). Every painted picture still
    carries its own boxes. The page is slowed more until it runs behind (a fast machine keeps up at
    the first rate), three rates at most."""
    server = frame_code_server(servers, frame_code_files)
    open_fresh(driver, f"http://{OTHER_NAME}:{server.port}")
    wait_for_format(driver, "mse", timeout=30)
    wait_for_boxed_paint(driver, "mse")
    for rate in SLOW_PAGE_THROTTLES:
        driver.execute_cdp_cmd("Emulation.setCPUThrottlingRate", {"rate": rate})
        try:
            before = video_state(driver)["decoder"]
            log = record_paints(driver, min_with_box=SLOW_PAGE_PAINTS, timeout=60, min_seconds=3)
            after = video_state(driver)["decoder"]
        finally:
            driver.execute_cdp_cmd("Emulation.setCPUThrottlingRate", {"rate": 1})
        checked = (after["presented"] - after["atOnce"]) - (before["presented"] - before["atOnce"])
        print(f"\nthrottled {rate}x: {len(log)} painted, {checked} of them after the check; {json.dumps(after)}")
        if checked >= 10:
            break
    assert checked > 0, "the page never ran behind: the check before painting was not exercised"
    agreeing, compared, bad = frame_code_agreement(log)
    print(f"frame code on a slow page: {agreeing}/{compared} painted frames agree")
    assert compared >= 60 and agreeing / compared >= 0.995, (agreeing, compared, bad[:3])


@pytest.mark.perf  # a benchmark: it prints the figures, and its paint rate is the machine's as much as the page's
def test_bits_and_latency_against_jpeg_and_webcodecs(servers, driver, frame_code_files):
    """Prints, on one server and video: bits received by MSE and JPEG on http://sightline.test, and
    capture-to-presented p50/p90 for MSE, JPEG and WebCodecs (http://127.0.0.1). Asserts only that
    each mode paints."""
    server = frame_code_server(servers, frame_code_files)
    figures = {}
    for label, url, mode in (("MSE", f"http://{OTHER_NAME}:{server.port}/?video=mse", "mse"),
                             ("JPEG", f"http://{OTHER_NAME}:{server.port}/?video=jpeg", "jpeg"),
                             ("WebCodecs", f"{server.url}/?video=h264", "h264")):
        driver.get(url)
        wait_for_format(driver, mode, timeout=30)
        wait_for_boxed_paint(driver, mode)
        log = [e for e in record_paints(driver, min_with_box=0, min_seconds=5) if e["format"] == mode]
        assert len(log) >= 50, f"{label}: only {len(log)} frames painted in 5 s"
        bps = bits_per_second(driver)
        span = (log[-1]["paintedAt"] - log[0]["paintedAt"]) / 1000
        figures[label] = bps
        print(f"\n{label}: {bps / 1e6:.2f} Mbit/s received, {len(log) / span:.1f} fps painted")
        print_latency(f"{label} (capture to presented)", log)
    print(f"\nMSE bits received / JPEG's: {figures['MSE'] / figures['JPEG']:.2f}")


def test_a_busy_page_and_a_server_restart_recover_without_a_reload_and_hidden_keeps_the_buffer_short(
        servers, driver, frame_code_files):
    """The page's main thread blocked for 2 s (messages pile up, then come at once) and the server
    restarted under the page (the socket closes; the new one brings a new init segment): each time
    the page plays on at the live edge with each picture's own boxes, never reloaded. Then the page
    hidden (CDP freezes it; headless Chromium keeps it hidden after): fragments are still appended
    (a hole would stop playback) and the buffer stays a few seconds long."""
    server = frame_code_server(servers, frame_code_files)
    open_fresh(driver, f"http://{OTHER_NAME}:{server.port}")
    wait_for_format(driver, "mse", timeout=30)
    wait_for_boxed_paint(driver, "mse")  # past the first keyframe and the template's first full search
    driver.execute_script("window.__notReloaded = true")

    def decoder():
        return driver.execute_script("return window.sightline.video.decoder")

    def assert_plays_exactly(label):
        log = record_paints(driver, min_with_box=frame_code.PERIOD, timeout=30, min_seconds=3)
        assert {e["format"] for e in log} == {"mse"}, label
        agreeing, compared, bad = frame_code_agreement(log)
        print(f"\n{label}: {agreeing}/{compared} painted frames agree; {json.dumps(decoder())}")
        # Recovery is what this test is about; the 99.5 % criterion is the first test's, over more frames.
        # Here, over ~3 s that include the catch-up after each event, a picture or two may go out with
        # the previous frame's boxes (see docs/video.md: the copy from the <video> can race the compositor).
        assert compared >= frame_code.PERIOD and agreeing / compared >= 0.97, (label, agreeing, compared, bad[:3])

    assert_plays_exactly("before")
    assert severe_console_entries(driver) == []
    driver.execute_script("const end = performance.now() + 2000; while (performance.now() < end) {}")
    WebDriverWait(driver, 10).until(lambda d: (decoder()["behindSeconds"] or 9) < 0.3,
                                    message="the playhead did not come back to the live edge")
    assert_plays_exactly("after the main thread was blocked for 2 s")

    assert severe_console_entries(driver) == []
    inits = decoder()["inits"]
    server.stop()
    WebDriverWait(driver, 10).until(lambda d: status_of(d) == "reconnecting",
                                    message="the page did not see the server go")
    server.start()
    WebDriverWait(driver, 30).until(lambda d: decoder()["inits"] > inits,
                                    message="no new init segment after the server came back")
    wait_for_format(driver, "mse", timeout=30)
    wait_for_boxed_paint(driver, "mse", after_presented=decoder()["presented"])
    assert_plays_exactly("after a server restart")
    assert driver.execute_script("return window.__notReloaded === true")
    # While the server was down the browser logged its refused reconnects; nothing else.
    others = [e for e in severe_console_entries(driver)
              if "ERR_CONNECTION_REFUSED" not in e["message"] and "WebSocket connection" not in e["message"]]
    assert others == []

    # Windows, not waits: the page is frozen for FROZEN_S (the stimulus: messages pile up), then
    # its fragments and buffer are sampled once a second for HIDDEN_SAMPLES s, to show the
    # buffer does not grow (something that must not happen, so a time, not an event, bounds it).
    driver.execute_cdp_cmd("Page.setWebLifecycleState", {"state": "frozen"})
    time.sleep(FROZEN_S)
    driver.execute_cdp_cmd("Page.setWebLifecycleState", {"state": "active"})
    assert driver.execute_script("return document.hidden") is True
    spans = []
    for _ in range(HIDDEN_SAMPLES):
        time.sleep(1.0)
        spans.append(driver.execute_script(
            "const b = document.getElementById('mse-video').buffered;"
            "return [window.sightline.video.decoder.fragments, b.length ? b.end(b.length - 1) - b.start(0) : 0]"))
    print(f"\nhidden: [fragments, buffered seconds] each second: {spans}")
    assert spans[-1][0] > spans[0][0] + 100, "fragments stopped while hidden"
    assert max(span for _, span in spans) < 6, "the buffer grew while hidden"
