#!/usr/bin/env python3
"""Fits the smile curve of FaceAttributeReader (Options.shapeSmile...) on the
labelled faces that are NOT held out, and prints its weights; then reports
(never fits on) the held-out faces.

    scripts/fit-smile.py [SIGHTLINE_BIN]

Runs `sightline detect --json` with SIGHTLINE_FACE_MEASURES set over the
labelled photos (Tests/e2e/face_attribute_labels.json; the photos as the
test finds them: ../shared/testdata/faces, scikit-image's data and
SIGHTLINE_LABELLED_FACES, default .build/labelled-faces), matches each traced
face to a label (IoU >= 0.5), and fits smile = logistic(liftWeight *
cornerLift + widthWeight * mouthWidth + upperLiftWeight * upperLipLift -
midpoint) by logistic regression (Newton's method, a small ridge so a
separable set still gives finite weights) on the faces of at least 36 px
(minFaceWidthForSmile) whose smile is labelled and that are not marked
heldOut. The measures are those FaceShape gives; see FaceAttributeReader.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "Tests" / "e2e" / "face_attribute_labels.json"
FEATURES = ["cornerLift", "mouthWidth", "upperLipLift"]
MIN_WIDTH = 36  # FaceAttributeReader.Options.minFaceWidthForSmile
RIDGE = 0.01


def photo_path(entry, tmp):
    if entry["source"] == "skimage":
        from PIL import Image
        from skimage import data
        path = Path(tmp) / f"{entry['photo']}.png"
        if not path.exists():
            Image.fromarray(getattr(data, entry["photo"])()).save(path)
        return path
    testdata = Path(os.environ.get("SIGHTLINE_TEST_DATA", str(REPO.parent / "shared" / "testdata")))
    labelled = Path(os.environ.get("SIGHTLINE_LABELLED_FACES", str(REPO / ".build" / "labelled-faces")))
    return {"shared": testdata / "faces", "labelled": labelled}[entry["source"]] / entry["photo"]


def iou(a, b):
    w = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    h = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def measured_faces(binary):
    """(label, measures) for each labelled face whose smile is labelled and a traced face matches."""
    labels = json.loads(LABELS.read_text())
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        for photo in sorted({e["photo"] for e in labels["faces"]}):
            entries = [e for e in labels["faces"] if e["photo"] == photo]
            path = photo_path(entries[0], tmp)
            done = subprocess.run([binary, "detect", "--json", str(path)], capture_output=True, text=True,
                                  env={**os.environ, "SIGHTLINE_FACE_MEASURES": "1"}, timeout=600)
            traced = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{\"box\"")]
            traced = [t for t in traced if "mouthWidth" in t]
            for entry in entries:
                if "smiling" not in entry:
                    continue
                best = max(traced, key=lambda t: iou(t["box"], entry["box"]), default=None)
                if best and iou(best["box"], entry["box"]) >= 0.5:
                    pairs.append((entry, best))
    return pairs


def fit(x, y):
    """Logistic regression with an intercept (unpenalized) and a small ridge on the weights."""
    a = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(a.shape[1])
    penalty = np.diag([RIDGE] * x.shape[1] + [0.0])
    for _ in range(100):
        p = 1 / (1 + np.exp(-a @ w))
        gradient = a.T @ (p - y) + penalty @ w
        hessian = a.T @ (a * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def report(name, rows, w):
    if not rows:
        return
    x = np.array([[m[f] for f in FEATURES] for _, m in rows])
    y = np.array([e["smiling"] for e, _ in rows], dtype=bool)
    p = 1 / (1 + np.exp(-(x @ w[:-1] + w[-1])))
    right = int(((p >= 0.5) == y).sum())
    serious = int((~y).sum())
    print(f"{name}: {right}/{len(rows)} right ({right / len(rows):.3f}); not smiling called smiling "
          f"{int(((p >= 0.5) & ~y).sum())}/{serious}; smiles missed {int(((p < 0.5) & y).sum())}/{int(y.sum())}")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "SIGHTLINE_BIN", str(REPO / ".build" / "release" / "sightline"))
    measured = measured_faces(binary)
    if os.environ.get("FIT_SMILE_SAVE"):
        Path(os.environ["FIT_SMILE_SAVE"]).write_text(json.dumps(measured))
    pairs = [(e, m) for e, m in measured if e["box"][2] >= MIN_WIDTH]
    fitted = [(e, m) for e, m in pairs if not e.get("heldOut")]
    held = [(e, m) for e, m in pairs if e.get("heldOut")]
    x = np.array([[m[f] for f in FEATURES] for _, m in fitted])
    y = np.array([e["smiling"] for e, _ in fitted], dtype=float)
    w = fit(x, y)
    source = (REPO / "Sources/SightlineVision/Faces/FaceAttributeReader.swift").read_text()
    now = {name: float(re.search(rf"var {name} = (-?[0-9.]+)", source).group(1)) for name in
           ["shapeSmileLiftWeight", "shapeSmileWidthWeight", "shapeSmileUpperLiftWeight", "shapeSmileMidpoint"]}
    current = np.array([now["shapeSmileLiftWeight"], now["shapeSmileWidthWeight"],
                        now["shapeSmileUpperLiftWeight"], -now["shapeSmileMidpoint"]])
    report("the source's weights, fitted faces", fitted, current)
    report("the source's weights, held-out faces", held, current)
    print(f"fitted on {len(fitted)} faces ({int(y.sum())} smiling), {len(held)} held out")
    print(f"shapeSmileLiftWeight = {w[0]:.1f}\nshapeSmileWidthWeight = {w[1]:.1f}\n"
          f"shapeSmileUpperLiftWeight = {w[2]:.1f}\nshapeSmileMidpoint = {-w[3]:.1f}")
    report("fitted faces", fitted, w)
    report("held-out faces", held, w)
    report("held-out faces, new people", [(e, m) for e, m in held if e.get("heldOutGroup") == "new-people"], w)


if __name__ == "__main__":
    main()
