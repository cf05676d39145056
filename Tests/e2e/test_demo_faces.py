"""The demo scene's face (config/demo-face.jpg gliding, growing, turning through ±35° and
hiding), scored frame by frame against the ground truth the demo sends with each frame, as
a viewer on /ws sees it, with the default detector (the shipped YuNet-320)."""

import math

from conftest import FrameLog, iou, receive_frames, ws_connect

MIN_IOU = 0.5
# The tracker's stated grace: a track lives this long after the detector last saw it
# (FaceTracker maxAbsence), so a box may stay this long after the face hides.
GRACE_S = 1.0
# A face box this close to the template's (a share of the frame: 6 px at 640) is the face
# under it, boxed where it shows.
COVER_MARGIN = 0.01


def roll_error(a, b):
    return abs((a - b + 180) % 360 - 180)


def widened(box, margin):
    return {"x": box["x"] - margin, "y": box["y"] - margin, "w": box["w"] + 2 * margin, "h": box["h"] + 2 * margin}


def overlap(a, b):
    w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(0, w) * max(0, h)


def score(pairs):
    """Share of visible-face frames with a face box at IoU >= MIN_IOU, share of those with
    roll within 5°, and frames where a face box stands with no face for longer than the grace."""
    visible = found = rolled = 0
    stray = []
    last_truth_at = None
    for meta, *_ in pairs:
        truth = next((t for t in meta.get("groundTruth") or [] if t["label"] == "face"), None)
        faces = [d for d in meta["detections"] if d["kind"] == "face"]
        if truth is not None:
            last_truth_at = meta["capturedAt"]
            visible += 1
            best = max(faces, key=lambda d: iou(d["box"], truth["box"]), default=None)
            if best is not None and iou(best["box"], truth["box"]) >= MIN_IOU:
                found += 1
                if best.get("roll") is not None and roll_error(best["roll"], truth["roll"]) <= 5:
                    rolled += 1
        elif last_truth_at is None or meta["capturedAt"] - last_truth_at > GRACE_S:
            # The demo leaves a face more than a quarter under the template out of the
            # truth; a box there is that face, seen past the template, not a stray one.
            # The detector may box only the part that shows, flush against the template's
            # edge (a CI run: 0.0014 of the frame's width from it), so a box within
            # COVER_MARGIN of the template counts as touching it.
            covers = [widened(t["box"], COVER_MARGIN) for t in meta.get("groundTruth") or [] if t["label"] != "face"]
            boxes = [d["box"] for d in faces if all(overlap(d["box"], c) == 0 for c in covers)]
            if boxes:
                since = None if last_truth_at is None else round(meta["capturedAt"] - last_truth_at, 2)
                stray.append({"seq": meta.get("seq"), "sinceFace": since, "boxes": boxes,
                              "truth": meta.get("groundTruth")})
    return visible, found, rolled, stray


def test_the_demo_face_is_boxed_with_its_roll(sightline):
    # At 10 fps the detector's 10 passes a second meet every frame even on a busy machine,
    # so this scores detection and tracking, not the machine's speed (the 30 fps figures
    # are the benchmark's: scripts/loadtest.py).
    server = sightline(source="demo?fps=10")
    server.wait_live()
    log = FrameLog()
    with ws_connect(server.port) as ws:
        # 16 s of frames: a whole 14 s cycle with its 2.5 s hidden part.
        receive_frames(ws, log, seconds=16, timeout=40)
    log.check_ok()
    pairs = log.pairs[5:]     # the first half second: the detector's first pass
    truths = [t for meta, *_ in pairs for t in meta.get("groundTruth") or [] if t["label"] == "face"]
    assert len(truths) > 50, "the demo sent no face ground truth"
    assert max(abs(t["roll"]) for t in truths) >= 30, "the demo face did not turn through ±30°"
    visible, found, rolled, stray = score(pairs)
    print(f"demo face: {found}/{visible} boxed at IoU >= {MIN_IOU}, {rolled}/{found} roll within 5°, "
          f"{len(stray)} frames with a box and no face beyond {GRACE_S} s")
    assert visible - found <= 0.10 * visible, (visible, found)
    assert found - rolled <= 0.10 * found, (found, rolled)
    assert any(not any(t["label"] == "face" for t in meta.get("groundTruth") or []) for meta, *_ in pairs), \
        "the face never hid"
    assert not stray, stray
