#!/usr/bin/env python3
"""Makes the panning face video for the faces-cost figure, with per-frame ground truth.

A 640x480 camera window pans (a slow Lissajous path, about 100 px/s) over a mosaic of
photos with faces: the four labelled shared photos (boxes from ../shared/testdata/faces/
faces.json) and, for faces not in ../shared, scikit-image's astronaut and the shared
grace_hopper.jpg (not shown: five tiles of faces and one without), whose boxes come from
`sightline detect` on the still photo. A faceless
tile (scikit-image's coffee) is panned over too. Each frame carries its index as a
16-bit code in its top-left corner (16 squares of 8x8 px, 6 grey levels above or below
mid-grey: JPEG keeps them, and the server's change probe, which needs 12 levels over
whole cells, does not see them), so a viewer can score every frame it receives against
that frame's ground truth, whatever was dropped or looped.

With --scene walk-in, the camera stands still instead: 8 s of a faceless photo, then the
astronaut's portrait is held up for 4 s, twice, at two places: how long a face that
appears in a still scene takes to be boxed.

  scripts/make-face-pan.py OUT.avi [--scene pan|walk-in] [--seconds 30] [--fps 25] [--bin .build/release/sightline]

Writes OUT.avi (MJPEG) and OUT.truth.json: {"fps", "width", "height", "frames": [[box, ...], ...]}
with each face box [x, y, w, h] normalized to the frame, for faces wholly inside it.
`scripts/loadtest.py --truth OUT.truth.json` scores a live run against it.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
from scenes import jpeg_bytes, write_mjpeg_avi  # noqa: E402

WIDTH, HEIGHT = 640, 480
TILE_W, TILE_H = 600, 450
CODE_BITS, CODE_CELL = 16, 8


def frame_code_boxes():
    """The squares of the frame code, left to right (most significant bit first)."""
    return [(i * CODE_CELL, 0, (i + 1) * CODE_CELL, CODE_CELL) for i in range(CODE_BITS)]


def draw_code(image: Image.Image, index: int) -> None:
    draw = ImageDraw.Draw(image)
    for bit, box in enumerate(frame_code_boxes()):
        on = (index >> (CODE_BITS - 1 - bit)) & 1
        level = 134 if on else 122
        draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=(level, level, level))


def read_code(image: Image.Image) -> int:
    """The frame index drawn by `draw_code` (read from the centres of its squares)."""
    gray = image.convert("L")
    value = 0
    for box in frame_code_boxes():
        x, y = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
        value = (value << 1) | (1 if gray.getpixel((x, y)) >= 128 else 0)
    return value


def detected_boxes(binary: str, path: Path) -> list[list[float]]:
    out = subprocess.run([binary, "detect", "--json", str(path)],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    boxes = []
    for d in result.get("detections", []):
        if d.get("kind") == "face":
            b = d["box"]
            boxes.append([b["x"] * result["width"], b["y"] * result["height"],
                          b["w"] * result["width"], b["h"] * result["height"]])
    return boxes


def tiles(shared: Path, binary: str, workdir: Path):
    """(image, face boxes in image pixels) for each tile, in mosaic order."""
    from skimage import data
    labels = {im["file"]: im for im in json.loads((shared / "testdata/faces/faces.json").read_text())["images"]}
    made = []
    for name in ["2007_007763.jpg", "2008_001322.jpg", "2008_001009.jpg"]:
        made.append((Image.open(shared / "testdata/faces" / name).convert("RGB"),
                     [f["box"] for f in labels[name]["faces"]]))
    astronaut = workdir / "astronaut.png"
    Image.fromarray(data.astronaut()).save(astronaut)
    made.append((Image.open(astronaut).convert("RGB"), detected_boxes(binary, astronaut)))
    made.append((Image.open(shared / "testdata/faces/2008_002079.jpg").convert("RGB"),
                 [f["box"] for f in labels["2008_002079.jpg"]["faces"]]))
    hopper = shared / "testdata/faces/grace_hopper.jpg"
    made.append((Image.open(hopper).convert("RGB"), detected_boxes(binary, hopper)))
    made.insert(3, (Image.fromarray(data.coffee()).convert("RGB"), []))
    return made[:6]


def mosaic(items):
    """Tiles of TILE_W x TILE_H in 3 columns, 2 rows; each photo fitted and centred."""
    canvas = Image.new("RGB", (3 * TILE_W, 2 * TILE_H), (96, 100, 98))
    faces = []
    for i, (image, boxes) in enumerate(items):
        scale = min(TILE_W / image.width, TILE_H / image.height)
        w, h = round(image.width * scale), round(image.height * scale)
        ox = (i % 3) * TILE_W + (TILE_W - w) // 2
        oy = (i // 3) * TILE_H + (TILE_H - h) // 2
        canvas.paste(image.resize((w, h), Image.LANCZOS), (ox, oy))
        faces += [[ox + b[0] * scale, oy + b[1] * scale, b[2] * scale, b[3] * scale] for b in boxes]
    return canvas, faces


def walk_in(args) -> None:
    """A still scene (scikit-image's coffee) in which a portrait appears for 4 s of every 12."""
    from skimage import data
    background = Image.fromarray(data.coffee()).convert("RGB").resize((WIDTH, HEIGHT), Image.LANCZOS)
    astronaut = args.out.parent / "astronaut.png"
    Image.fromarray(data.astronaut()).save(astronaut)
    portrait = Image.open(astronaut).convert("RGB").resize((220, 220), Image.LANCZOS)
    boxes = [[b[0] * 220 / 512, b[1] * 220 / 512, b[2] * 220 / 512, b[3] * 220 / 512]
             for b in detected_boxes(args.bin, astronaut)]
    jpegs, truth = [], []
    cycle = 12 * args.fps
    count = 2 * cycle
    for index in range(count):
        frame = background.copy()
        inside = []
        if index % cycle >= 8 * args.fps:
            x, y = (60, 120) if index < cycle else (380, 200)
            frame.paste(portrait, (x, y))
            inside = [[(x + b[0]) / WIDTH, (y + b[1]) / HEIGHT, b[2] / WIDTH, b[3] / HEIGHT] for b in boxes]
        draw_code(frame, index)
        jpegs.append(jpeg_bytes(frame, quality=90))
        truth.append(inside)
    write_mjpeg_avi(args.out, jpegs, WIDTH, HEIGHT, args.fps)
    args.out.with_suffix(".truth.json").write_text(json.dumps({"fps": args.fps, "width": WIDTH, "height": HEIGHT,
                                                               "frames": truth}))
    print(f"{args.out}: {count} frames, a face for 4 s of every 12", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--scene", choices=["pan", "walk-in"], default="pan")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--fps", type=int, default=25)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    ap.add_argument("--bin", default=str(REPO / ".build/release/sightline"))
    args = ap.parse_args()
    if args.scene == "walk-in":
        return walk_in(args)
    canvas, faces = mosaic(tiles(args.shared, args.bin, args.out.parent))
    span_x, span_y = canvas.width - WIDTH, canvas.height - HEIGHT
    jpegs, truth = [], []
    count = int(args.seconds * args.fps)
    for index in range(count):
        t = index / args.fps
        x = round(span_x * (0.5 - 0.5 * math.cos(t * 2 * math.pi / 24)))
        y = round(span_y * (0.5 - 0.5 * math.cos(t * 2 * math.pi / 11)))
        frame = canvas.crop((x, y, x + WIDTH, y + HEIGHT))
        draw_code(frame, index)
        jpegs.append(jpeg_bytes(frame, quality=90))
        inside = [[(f[0] - x) / WIDTH, (f[1] - y) / HEIGHT, f[2] / WIDTH, f[3] / HEIGHT] for f in faces
                  if f[0] >= x and f[1] >= y + CODE_CELL and f[0] + f[2] <= x + WIDTH and f[1] + f[3] <= y + HEIGHT]
        truth.append(inside)
    write_mjpeg_avi(args.out, jpegs, WIDTH, HEIGHT, args.fps)
    args.out.with_suffix(".truth.json").write_text(json.dumps({"fps": args.fps, "width": WIDTH, "height": HEIGHT,
                                                               "frames": truth}))
    visible = sum(len(f) for f in truth)
    print(f"{args.out}: {count} frames, {len(faces)} faces in the mosaic, {visible / count:.1f} in view a frame",
          file=sys.stderr)


if __name__ == "__main__":
    main()
