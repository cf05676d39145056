#!/usr/bin/env python3
"""Makes a crowd video for the crowd-cost figure (issue 28): 640x480, 25 fps, a camera
walking slowly past a wall of 35 faces 40-70 px wide (about 25 in view).

The faces are crops of the shared photos (../shared/testdata/faces: boxes from faces.json,
grace_hopper.jpg and messi5.jpg by `sightline detect`) and of scikit-image's astronaut, each
scaled to 40-70 px and tiled with a little of their surroundings over scikit-image's coffee
photo; the 640x480 window pans across the 800x580 wall (back and forth, up to about 25 px/s), so every face
moves on every frame. Each frame carries its index as make-face-pan.py draws it.

  scripts/make-face-crowd.py OUT.avi [--seconds 30] [--fps 25] [--shared ../shared]
  scripts/make-face-crowd.py OUT.avi --faces lfw     (a second crowd, none of it from ../shared:
      scikit-image's Labeled Faces in the Wild sample (25x25 gray faces) enlarged to 45-80 px,
      48 of them in 6 rows of 8 on its brick photo, another seed and pan; about 25 in view)
  scripts/make-face-crowd.py OUT.avi --faces people  (issue 41's pan, none of it from ../shared:
      20 faces from 20 of the labelled photos of scripts/fetch-labelled-faces.sh (PyPI
      packages' and dlib's test photos, faces at least 60 px there), each 80-150 px, in 4
      rows of 5 on a 920x660 wall of scikit-image's brick photo with the demo template in the
      middle; the window moves up to about 2.5 px a frame, 4-10 faces wholly in view (mean 6).
      OUT.truth.json is in scripts/loadtest.py's --truth format: the faces wholly in the frame.)

Then, for example:
  scripts/loadtest.py --spawn --source file:OUT.avi --clients 10 --seconds 60 \\
      --server-arg=--template=config/demo-template.png
  scripts/live-faces.py python-loop OUT.avi      (needs opencv-python-headless)
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import random
import sys
from pathlib import Path

from PIL import Image
from skimage import data

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
from scenes import write_mjpeg_avi  # noqa: E402

spec = importlib.util.spec_from_file_location("make_face_pan", REPO / "scripts" / "make-face-pan.py")
pan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pan)


def face_crops(shared: Path) -> list[Image.Image]:
    """Each labelled face with a margin of 3/10 of its box on each side (its `label`: the box
    within the crop and the roll; the last two crops have none)."""
    faces_dir = shared / "testdata" / "faces"
    labels = json.loads((faces_dir / "faces.json").read_text())
    crops = []
    for image in labels["images"]:
        if not all(isinstance(face, dict) for face in image.get("faces", [])):
            continue  # grace_hopper.jpg and messi5.jpg: expectations in words
        photo = Image.open(faces_dir / image["file"]).convert("RGB")
        for face in image["faces"]:
            x, y, w, h = face["box"]
            crop = photo.crop((x - w * 3 // 10, y - h * 3 // 10, x + w + w * 3 // 10, y + h + h * 3 // 10))
            crop.label = {"box": [w * 3 // 10, h * 3 // 10, w, h], "roll": face["roll"]}
            crops.append(crop)
    astronaut = Image.fromarray(data.astronaut())
    crops.append(astronaut.crop((150, 40, 290, 200)))
    grace = Image.open(faces_dir / "grace_hopper.jpg").convert("RGB")
    crops.append(grace.crop((150, 110, 390, 380)))
    return crops


def lfw_wall(rng: random.Random) -> tuple[Image.Image, int]:
    """48 of scikit-image's LFW faces (the first 100 of its sample are faces), each enlarged to
    45-80 px with a gray margin, on an 880x620 wall of its brick photo."""
    faces = data.lfw_subset()[:100]
    wall = Image.fromarray(data.brick()).convert("RGB").resize((880, 620))
    placed = 0
    for row in range(6):
        for column in range(8):
            face = Image.fromarray((faces[(placed * 7) % 100] * 255).astype("uint8")).convert("RGB")
            width = rng.randint(45, 80)
            tile = Image.new("RGB", (round(width * 1.5), round(width * 1.6)), (118, 112, 104))
            tile.paste(face.resize((width, round(width * 1.1)), Image.BICUBIC), (round(width * 0.25), round(width * 0.25)))
            x = 6 + column * 109 + rng.randint(-4, 4)
            y = 6 + row * 102 + rng.randint(-4, 4)
            wall.paste(tile, (x, y))
            placed += 1
    return wall, placed


def people_wall(rng: random.Random) -> tuple[Image.Image, list[list[float]]]:
    """20 labelled faces (a face at least 60 px wide in its photo; one a photo, the first in
    the labels' order) scaled to 80-130 px, every third to 120-150 px, each with its
    surroundings (0.2 of its width on each side), in 4 rows of 5 on a 920x660 wall; the demo
    template pasted in the middle. Returns the wall and each face's box in wall pixels."""
    labels = json.loads((REPO / "Tests" / "e2e" / "face_attribute_labels.json").read_text())
    photos = REPO / ".build" / "labelled-faces"
    picked, seen = [], set()
    for entry in labels["faces"]:
        if entry["source"] != "labelled" or entry["box"][2] < 60 or entry["photo"] in seen:
            continue
        if not (photos / entry["photo"]).exists():
            sys.exit(f"{photos / entry['photo']} is missing: run scripts/fetch-labelled-faces.sh")
        seen.add(entry["photo"])
        picked.append(entry)
        if len(picked) == 20:
            break
    wall = Image.fromarray(data.brick()).convert("RGB").resize((920, 660))
    boxes = []
    for index, entry in enumerate(picked):
        photo = Image.open(photos / entry["photo"]).convert("RGB")
        x, y, w, h = entry["box"]
        margin = round(w * 0.2)
        crop = photo.crop((x - margin, y - margin, x + w + margin, y + h + margin))
        width = rng.randint(80, 130) if index % 3 else rng.randint(120, 150)
        scale = width / w
        tile = crop.resize((max(1, round(crop.width * scale)), max(1, round(crop.height * scale))), Image.LANCZOS)
        column, row = index % 5, index // 5
        left = 8 + column * 182 + rng.randint(-5, 5)
        top = 6 + row * 162 + rng.randint(-5, 5)
        wall.paste(tile, (left, top))
        boxes.append([left + margin * scale, top + margin * scale, w * scale, h * scale])
    template = Image.open(REPO / "config" / "demo-template.png").convert("RGB")
    wall.paste(template, (412, 282))
    return wall, boxes


def people_video(out: Path, seconds: float, fps: int) -> None:
    """The people wall panned: the 640x480 window on a Lissajous path (periods 15 s across
    and 19 s down: at most 59 and 30 px/s), every face moving on every frame."""
    wall, boxes = people_wall(random.Random(41))
    frames = round(seconds * fps)
    jpegs, truth = [], []
    for index in range(frames):
        t = index / fps
        left = round((wall.width - 640) / 2 * (1 - math.cos(2 * math.pi * t / 15)))
        top = round((wall.height - 480) / 2 * (1 - math.cos(2 * math.pi * t / 19)))
        frame = wall.crop((left, top, left + 640, top + 480))
        pan.draw_code(frame, index)
        truth.append([[(x - left) / 640, (y - top) / 480, w / 640, h / 480] for x, y, w, h in boxes
                      if x - left >= 0 and y - top >= pan.CODE_CELL and x - left + w <= 640 and y - top + h <= 480])
        buffer = io.BytesIO()
        frame.save(buffer, format="JPEG", quality=85)
        jpegs.append(buffer.getvalue())
    write_mjpeg_avi(out, jpegs, 640, 480, fps)
    out.with_suffix(".truth.json").write_text(json.dumps({"fps": fps, "width": 640, "height": 480, "frames": truth}))
    seen = [len(faces) for faces in truth]
    print(f"{out}: {frames} frames, {len(boxes)} faces, {min(seen)}-{max(seen)} wholly in view "
          f"(mean {sum(seen) / len(seen):.1f})", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--faces", choices=["shared", "lfw", "people"], default="shared")
    args = parser.parse_args()
    if args.faces == "people":
        people_video(args.out, args.seconds, args.fps)
        return
    if args.faces == "lfw":
        rng = random.Random(2801)
        wall, placed = lfw_wall(rng)
    else:
        rng = random.Random(28)
        wall = Image.fromarray(data.coffee()).convert("RGB").resize((800, 580))
        placed = 0
    crops = face_crops(args.shared) if args.faces == "shared" else []
    labelled = []  # the labelled faces on the wall: box (wall pixels) and roll
    for row in range(5 if args.faces == "shared" else 0):
        for column in range(7):
            crop = crops[placed % len(crops)]
            face_width = rng.randint(40, 70)
            # The crop is 1.6 times the face's box wide.
            scale = 1.6 * face_width / crop.width
            tile = crop.resize((round(crop.width * scale), round(crop.height * scale)))
            x = 4 + column * 113 + rng.randint(-3, 3)
            y = 4 + row * 114 + rng.randint(-3, 3)
            wall.paste(tile, (x, y))
            label = getattr(crop, "label", None)
            if label:
                bx, by, bw, bh = label["box"]
                labelled.append({"box": [x + bx * scale, y + by * scale, bw * scale, bh * scale],
                                 "roll": label["roll"], "key": f"0:{placed}"})
            placed += 1
    frames = round(args.seconds * args.fps)
    jpegs = []
    truth = []
    for index in range(frames):
        t = index / args.fps
        left = (wall.width - 640) / 2 * (1 - math.cos(2 * math.pi * t / (20 if args.faces == "shared" else 17)))
        top = (wall.height - 480) / 2 * (1 - math.cos(2 * math.pi * t / (26 if args.faces == "shared" else 23)))
        frame = wall.crop((round(left), round(top), round(left) + 640, round(top) + 480))
        pan.draw_code(frame, index)
        entries = []
        for face in labelled:
            x, y, w, h = face["box"][0] - round(left), face["box"][1] - round(top), face["box"][2], face["box"][3]
            if x + w <= 0 or y + h <= 0 or x >= 640 or y >= 480:
                continue
            inside = x >= 0 and y >= pan.CODE_CELL and x + w <= 640 and y + h <= 480
            entries.append({"box": [x / 640, y / 480, w / 640, h / 480], "roll": face["roll"], "inside": inside,
                            "key": face["key"]})
        truth.append(entries)
        buffer = io.BytesIO()
        frame.save(buffer, format="JPEG", quality=85)
        jpegs.append(buffer.getvalue())
    write_mjpeg_avi(args.out, jpegs, 640, 480, args.fps)
    if labelled:
        # The labelled faces (boxes and rolls of faces.json; not the astronaut's and
        # Grace Hopper's), in scripts/live-faces.py's format: `live-faces.py score OUT.avi`.
        args.out.with_suffix(".truth.json").write_text(json.dumps(
            {"fps": args.fps, "width": 640, "height": 480, "holdFrames": frames, "frames": truth}))
    print(f"{args.out}: {frames} frames, {placed} faces on a {wall.width}x{wall.height} wall", file=sys.stderr)


if __name__ == "__main__":
    main()
