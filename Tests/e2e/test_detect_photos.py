"""`sightline detect` on still photos made here (not in ../shared): every face in a crowd by
default, `--max-faces` caps, and pictures without a face (scikit-image's cat, coffee cup and
rocket) give none. The default detector is the shipped YuNet-320 model."""

import json
import subprocess

from PIL import Image, ImageOps
from skimage import data

from conftest import server_binary


def detect(*args):
    done = subprocess.run([str(server_binary()), "detect", "--json", *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def faces(result):
    return [d for d in result["detections"] if d["kind"] == "face"]


def crowd(testdata, path, columns=5, rows=3):
    """A grid of 15 portraits: grace_hopper at three sizes, mirrored in every other cell."""
    portrait = Image.open(testdata / "faces" / "grace_hopper.jpg").convert("RGB")
    cell_w, cell_h = 150, 176
    sheet = Image.new("RGB", (cell_w * columns, cell_h * rows), (110, 120, 130))
    for i in range(columns * rows):
        width = (150, 128, 110)[i % 3]
        face = portrait.resize((width, round(width * portrait.height / portrait.width)))
        if i % 2:
            face = ImageOps.mirror(face)
        sheet.paste(face, ((i % columns) * cell_w, (i // columns) * cell_h))
    sheet.save(path, quality=92)
    return columns * rows


def test_detect_reports_every_face_in_a_crowd_and_caps_when_asked(testdata, tmp_path):
    photo = tmp_path / "crowd.jpg"
    count = crowd(testdata, photo)
    [result] = detect(photo)
    assert len(faces(result)) == count, [f["box"] for f in faces(result)]
    [capped] = detect("--max-faces", 4, photo)
    assert len(faces(capped)) == 4


def test_pictures_without_faces_give_none(tmp_path):
    paths = []
    for name in ("chelsea", "coffee", "rocket"):
        path = tmp_path / f"{name}.png"
        Image.fromarray(getattr(data, name)()).save(path)
        paths.append(path)
    results = detect(*paths)
    assert [len(faces(r)) for r in results] == [0, 0, 0], [(r["file"], faces(r)) for r in results]
