"""`make demo`'s face in headless Chromium: the drawn face box turns with the demo face's
ground-truth roll (the demo sends the face's box and roll with every frame), frame by frame,
with the default detector (the shipped YuNet-320)."""

import math
import time

from browser_support import SightlineServer, get_json, open_page, server_binary, severe_console_entries

TOLERANCE_DEG = 5
# While the demo's template slides across the face, the face's roll readings are 5-12° off, and
# the roll rate the tracker learns from them can turn the box 6-14° too far for about half a
# second after, when passes are slow (a loaded machine): frames while the template overlaps the
# face, and this many after, are not checked (an open limitation, docs/testing.md).
AFTER_COVER_FRAMES = 10


def overlaps(a, b):
    return min(a[0] + a[2], b[0] + b[2]) > max(a[0], b[0]) and min(a[1] + a[3], b[1] + b[3]) > max(a[1], b[1])

SAMPLE_JS = r"""
const drawn = window.sightline && window.sightline.lastDrawn;
if (!drawn) return null;
const truth = drawn.groundTruth.find((t) => t.label === 'face');
const face = drawn.rects.find((r) => r.kind === 'face');
const truthDrawn = (drawn.truthRects || []).find((t) => t.label === 'face');
const box = (t) => [t.box.x, t.box.y, t.box.w, t.box.h];
return {seq: drawn.seq, truth: truth ? truth.roll : null, corners: face ? face.corners : null,
        truthCorners: truthDrawn ? truthDrawn.corners : null,
        faceBox: truth ? box(truth) : null,
        covers: drawn.groundTruth.filter((t) => t.label !== 'face').map(box)};
"""


def test_the_demo_face_box_turns_with_the_face(driver):
    # At 10 fps the detector's 10 passes a second meet every frame even on a busy machine,
    # so this checks where the box is drawn and how it turns, not how fast the machine is
    # (the 30 fps figures are the benchmark's: scripts/loadtest.py).
    server = SightlineServer(server_binary(), source="demo?fps=10").start()
    try:
        open_page(driver, server.url, 1200, 900)
        driver.execute_script("document.querySelector('#toggle-ground-truth').click()")
        # The face's first passes first: its roll comes with the worker's pass after the quick one
        # on the first frame, which on a machine busy with other tests can take a second or more.
        # Sampling starts once the server has made a few passes (its own counter), not after a time.
        deadline = time.monotonic() + 30
        while (get_json(server.url + "/api/state").get("faces") or {}).get("passes", 0) < 5:
            assert time.monotonic() < deadline, "the server made fewer than 5 face passes in 30 s"
            time.sleep(0.1)
        samples = {}
        covered = set()
        truth_drawn = []

        def checked():
            return {seq: sample for seq, sample in samples.items()
                    if not any(seq - AFTER_COVER_FRAMES <= c <= seq for c in covered)}
        # Until the face has turned through 30° with 20 boxes and 20 truth boxes drawn (bounded by
        # 20 s: a 14 s cycle turns through ±35°), not for a fixed time.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            truths = [truth for truth, _ in checked().values()]
            if len(truths) >= 40 and len(truth_drawn) >= 20 and max(truths) - min(truths) >= 30:
                break
            sample = driver.execute_script(SAMPLE_JS)
            if sample and sample["faceBox"] and any(overlaps(sample["faceBox"], c) for c in sample["covers"]):
                covered.add(sample["seq"])
            if sample and sample["truth"] is not None and sample["corners"]:
                (ax, ay), (bx, by) = sample["corners"][0], sample["corners"][1]
                samples[sample["seq"]] = (sample["truth"], math.degrees(math.atan2(by - ay, bx - ax)))
            if sample and sample["truth"] is not None and sample["truthCorners"]:
                (ax, ay), (bx, by) = sample["truthCorners"][0], sample["truthCorners"][1]
                truth_drawn.append((sample["truth"], math.degrees(math.atan2(by - ay, bx - ax))))
            time.sleep(0.1)
        print(f"\n{len(samples)} frames sampled, {len(samples) - len(checked())} of them under or just after the template")
        samples = checked()
        assert len(samples) >= 20, f"only {len(samples)} frames with a clear face and its truth were drawn"
        truths = [truth for truth, _ in samples.values()]
        assert max(truths) - min(truths) >= 30, f"the demo face turned only from {min(truths)} to {max(truths)}°"
        off = {seq: (truth, round(angle, 1)) for seq, (truth, angle) in samples.items()
               if abs((angle - truth + 180) % 360 - 180) > TOLERANCE_DEG}
        assert len(off) <= 0.1 * len(samples), f"{len(off)} of {len(samples)} drawn boxes off the roll by more " \
                                               f"than {TOLERANCE_DEG}°: {sorted(off.items())[:10]}"
        # The ground-truth view (key g) draws the truth box turned by the truth's roll.
        assert len(truth_drawn) >= 20, f"only {len(truth_drawn)} truth boxes drawn"
        assert all(abs((angle - truth + 180) % 360 - 180) < 0.5 for truth, angle in truth_drawn), truth_drawn[:5]
        assert severe_console_entries(driver) == []
    finally:
        server.stop()
        server.cleanup()
