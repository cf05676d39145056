"""A camera's own H.264 in the page (issue 39): a 640x360 25 fps file whose keyframes are 8 s
apart (as cameras set them to save bits) is passed on as it is. A viewer who switches to
H.264 between two keyframes must not wait for the camera's next one: the server starts it
at the newest keyframe and sends the units since at once (a `catchUp` notice first), and
the page decodes them past its usual queue limit. The time from the switch to the first
painted H.264 picture, and capture-to-paint p50/p90 once caught up, are printed (pytest -s);
the test asserts the mechanism (first picture long before the camera's next keyframe, every
picture painted in order, no decoder error), not a time: shared machines are too noisy.
The picture is small because the catch-up does not depend on its size (at 720p this test
alone took 66 CPU seconds of make test); 1080p passed on is tested in Tests/e2e/test_passthrough.py."""
import json
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="selenium not installed; pip install selenium")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from test_h264 import make_driver, print_latency
from test_h264_player import record_paints, video_state, wait_for_format
from browser_support import SightlineServer, server_binary, severe_console_entries

LOOP = 300       # frames in the file (12 s at 25 fps)
KEYINT = 200     # keyframes at frames 0 and 200: 8 s apart


@pytest.fixture(scope="module")
def sparse_keyframes_video():
    path = Path(tempfile.mkdtemp(prefix="sightline-sparse-")) / "sparse360.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                    "-frames:v", str(LOOP), "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-bf", "0",
                    "-g", str(KEYINT), "-keyint_min", str(KEYINT), "-sc_threshold", "0", "-b:v", "800k",
                    "-pix_fmt", "yuv420p", str(path)], check=True, timeout=300)
    return path


def state(server):
    with urllib.request.urlopen(server.url + "/api/state", timeout=10) as response:
        return json.load(response)


def test_a_joiner_paints_at_once_on_a_camera_with_keyframes_8_s_apart(sparse_keyframes_video):
    server = SightlineServer(server_binary(), source=f"file:{sparse_keyframes_video}", extra_args=["--no-faces"]).start()
    driver = make_driver()
    try:
        assert state(server)["source"].get("passedOn") == "h264"
        driver.get(f"{server.url}/?video=jpeg")
        wait_for_format(driver, "jpeg")
        joins = []
        for attempt, (low, high) in enumerate([(75, 100), (140, 175), (KEYINT + 75, LOOP - 10)]):
            # 3 s or more after a keyframe: the newest is old, the next seconds away.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                captured = state(server)["frames"]["captured"]
                if low <= captured % LOOP < high:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the file source never reached a point between keyframes")
            driver.find_element(By.ID, "video-jpeg").click()
            wait_for_format(driver, "jpeg")
            captured = state(server)["frames"]["captured"]
            next_key = (captured // LOOP) * LOOP + (KEYINT if captured % LOOP < KEYINT else LOOP) + 1
            result = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const started = performance.now();
                document.getElementById('video-h264').click();
                const poll = () => {
                  const last = window.sightline.lastDrawn;
                  if (last && last.format === 'h264') done({ms: performance.now() - started, seq: last.seq});
                  else if (performance.now() - started > 20000) done(null);
                  else requestAnimationFrame(poll);
                };
                poll();""")
            assert result, "no H.264 picture painted within 20 s of switching"
            joins.append(result["ms"])
            print(f"\njoin {attempt + 1}: first H.264 picture painted {result['ms']:.0f} ms after the switch "
                  f"(seq {result['seq']}; the camera's next keyframe is seq {next_key})")
            # Without the catch-up it would wait for the camera's next keyframe, seconds away.
            # (The time it took is printed above, not asserted: this machine is shared and noisy.)
            assert result["seq"] < next_key, "the first picture came from the next keyframe, not the newest one"
        # Caught up (a picture past the catch-up painted): live pictures in order, capture-to-paint printed.
        through = video_state(driver)["decoder"]["catchUpThrough"]
        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return window.sightline.lastDrawn.seq") > through,
                                        message="the page never caught up with the stream")
        log = record_paints(driver, min_with_box=0, min_seconds=0, min_paints=60, timeout=30)
        seqs = [e["seq"] for e in log if e["format"] == "h264"]
        assert len(seqs) >= 50 and seqs == sorted(set(seqs)), f"painted in order, each once: {seqs}"
        print_latency("360p25 passed on, caught up", [e for e in log if e["format"] == "h264"])
        decoder = video_state(driver)["decoder"]
        assert decoder["decodeErrors"] == 0 and decoder["orphans"] == 0, decoder
        assert severe_console_entries(driver) == []
        print(f"joins: {', '.join(f'{ms:.0f} ms' for ms in joins)}; decoder {decoder}")
    finally:
        driver.quit()
        server.cleanup()
