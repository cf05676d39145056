"""A face turned by a known angle, served through a file: source, is drawn as a box
turned by that angle: the drawn corners and the canvas pixels along the tilted edge."""

import math

import pytest

from sightline_paths import shared_data  # noqa: E402
from browser_support import SightlineServer, server_binary, open_page, is_color, severe_console_entries

Image = pytest.importorskip("PIL.Image", reason="Pillow not installed; pip install pillow")

FACE_RGB = (0xFF, 0xD2, 0x1F)  # COLORS.face in web/overlay.js
TOLERANCE_DEG = 5

FACE_JS = r"""
const drawn = window.sightline && window.sightline.lastDrawn;
if (!drawn) return null;
const face = drawn.rects.find((r) => r.kind === 'face');
if (!face) return null;
const ctx = document.getElementById('view').getContext('2d');
const [a, b] = face.corners;
// Pixels a little along the top edge on both sides of its middle.
const samples = [0.3, 0.5, 0.7].map((t) => {
  const x = Math.round(a[0] + (b[0] - a[0]) * t), y = Math.round(a[1] + (b[1] - a[1]) * t);
  let best = null;
  for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) {
    const p = Array.from(ctx.getImageData(x + dx, y + dy, 1, 1).data).slice(0, 3);
    best = best || p;
    if (Math.abs(p[0] - 255) + Math.abs(p[1] - 210) + Math.abs(p[2] - 31) < 90) best = p;
  }
  return best;
});
return {corners: face.corners, roll: face.roll, samples};
"""


@pytest.mark.parametrize("angle", [20, -25])
def test_turned_face_is_drawn_turned(driver, tmp_path, yunet, angle):
    photo = shared_data("faces", "grace_hopper.jpg")
    # PIL turns counter-clockwise for positive angles; roll is clockwise positive.
    turned = Image.open(photo).convert("RGB").rotate(-angle, resample=Image.BICUBIC, expand=True,
                                                     fillcolor=(90, 90, 90))
    source = tmp_path / f"grace_{angle}.png"
    turned.save(source)
    server = SightlineServer(server_binary(), source=f"file:{source}", extra_args=["--face-model", str(yunet)])
    server.start()
    try:
        driver.get("about:blank")
        severe_console_entries(driver)  # drop what an earlier page logged while its server went away
        open_page(driver, server.url, 1200, 900)
        found = None
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(FACE_JS) is not None)
        for _ in range(10):  # a few frames: the drawn roll follows the tracked face
            found = driver.execute_script(FACE_JS)
        (ax, ay), (bx, by) = found["corners"][0], found["corners"][1]
        drawn_angle = math.degrees(math.atan2(by - ay, bx - ax))
        assert abs(drawn_angle - angle) <= TOLERANCE_DEG, \
            f"box drawn turned by {drawn_angle:.1f}°, the face is turned by {angle}° (roll {found['roll']})"
        assert all(is_color(p, FACE_RGB, 90) for p in found["samples"]), \
            f"the canvas has no face-coloured line along the turned edge: {found['samples']}"
        assert severe_console_entries(driver) == []
    finally:
        server.stop()
        server.cleanup()
