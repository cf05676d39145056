#!/usr/bin/env python3
"""Makes a camera-like H.264 file: what an ordinary IP camera sends, for benchmarks
(scripts/camerabench.py) and for serving as it is over RTSP
(Tests/e2e/gst_rtsp_server.py copy).

The picture: a slow pan and zoom over a collage of scikit-image's sample photos (not
the shared test data): the astronaut large (her face about 1/12 of the frame's width)
and a small crop of her head (a face YuNet finds only on its fine pass at the default
640 analysis size), the coffee cup (the template region: `--template` writes the cup and
saucer as cut from the first frame), a cat, the rocket, the coins, on a textured background,
with a little sensor grain in every frame. The motion is periodic over the file's
length, so a player that loops the file sees no seam.

The encoding, as a camera's: H.264 main profile, 4:2:0, 25 fps, constant frame rate,
about `--bitrate` (VBV buffer of one second, so no frame runs far over), a keyframe
every `--keyint` frames at fixed places (no scene-cut keyframes), no B-frames, one
slice a picture; x264 (libx264 through ffmpeg) fed raw frames from numpy.

  scripts/make-camera-video.py OUT.mp4 [--size 1920x1080|3840x2160] [--seconds 30]
      [--fps 25] [--bitrate 4M] [--keyint 50] [--preset veryfast] [--grain 2]
      [--template OUT.png]

Defaults: 1920x1080, 30 s, 4 Mbit/s (3840x2160: 12 Mbit/s unless --bitrate), a
keyframe every 2 s (--keyint 200: every 8 s). OUT may end in .mkv for Matroska.
Needs numpy, Pillow, scikit-image and ffmpeg with libx264.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

# The collage is this much larger than the frame on each side, so the view can pan.
CANVAS = 1.35
GRAIN_PLANES = 6


def photo(name: str) -> Image.Image:
    from skimage import data
    pixels = getattr(data, name)()
    if pixels.ndim == 2:
        pixels = np.stack([pixels] * 3, axis=-1)
    return Image.fromarray(pixels[..., :3]).convert("RGB")


def fitted(image: Image.Image, height: float) -> Image.Image:
    height = max(8, round(height))
    return image.resize((max(8, round(image.width * height / image.height)), height), Image.LANCZOS)


def collage(width: int, height: int) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """The scene at CANVAS times the frame's size, and the coffee cup's box in it."""
    cw, ch = round(width * CANVAS), round(height * CANVAS)
    rng = np.random.default_rng(39)
    # Background: a soft gradient with low-frequency blotches (a wall, a floor), not flat,
    # so that the encoder spends bits on it as on a real scene.
    y, x = np.mgrid[0:ch, 0:cw].astype(np.float32)
    base = 70 + 50 * x / cw + 40 * y / ch
    blotches = Image.fromarray(rng.integers(0, 255, (ch // 24 + 1, cw // 24 + 1), dtype=np.uint8))
    blotches = np.asarray(blotches.resize((cw, ch), Image.BICUBIC).filter(ImageFilter.GaussianBlur(8)),
                          dtype=np.float32)
    gray = base + (blotches - 128) * 0.25
    canvas = Image.fromarray(np.clip(np.stack([gray, gray * 0.96, gray * 0.9], axis=-1), 0, 255).astype(np.uint8))

    astronaut = photo("astronaut")
    head = astronaut.crop((120, 0, 320, 210))
    tiles = [
        # (picture, height as a fraction of the canvas height, centre x, centre y as fractions)
        (astronaut, 0.50, 0.40, 0.47),
        (photo("chelsea"), 0.26, 0.15, 0.22),
        (photo("rocket"), 0.34, 0.15, 0.74),
        (photo("coins"), 0.22, 0.66, 0.80),
        (head, 0.085, 0.62, 0.52),
        (photo("coffee"), 0.22, 0.74, 0.27),
    ]
    coffee_box = (0, 0, 0, 0)
    for image, share, fx, fy in tiles:
        tile = fitted(image, share * ch)
        left, top = round(fx * cw - tile.width / 2), round(fy * ch - tile.height / 2)
        canvas.paste(tile, (left, top))
        if image is tiles[-1][0]:
            coffee_box = (left, top, left + tile.width, top + tile.height)
    return canvas, coffee_box


def view(index: int, count: int, width: int, height: int, canvas: Image.Image) -> tuple[float, float, float, float]:
    """The box of the canvas the camera sees in frame `index`: a Lissajous pan with a slow
    zoom, each a whole number of cycles over `count` frames (so the file loops seamlessly)."""
    phase = 2 * math.pi * index / count
    cycles = max(1, round(count / 25 / 15))   # about one pan cycle every 15 s
    zoom = 1.0 + 0.12 * (0.5 - 0.5 * math.cos(phase * cycles))   # 1.0 .. 1.12 of the frame
    w, h = width * zoom, height * zoom
    cx = canvas.width / 2 + (canvas.width - w) / 2 * 0.9 * math.sin(phase * cycles)
    cy = canvas.height / 2 + (canvas.height - h) / 2 * 0.8 * math.sin(phase * cycles * 2)
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT (default 1920x1080; 3840x2160 for 4K)")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--fps", type=int, default=25)
    ap.add_argument("--bitrate", help="average bitrate, ffmpeg units (default 4M; 12M at 4K)")
    ap.add_argument("--keyint", type=int, help="frames between keyframes (default 2 s of frames)")
    ap.add_argument("--preset", default="veryfast", help="x264 preset (default veryfast)")
    ap.add_argument("--grain", type=float, default=2.0, help="sensor grain sigma in levels (0: none)")
    ap.add_argument("--template", type=Path, help="also write the coffee cup as cut from frame 0 (PNG)")
    ap.add_argument("--threads", type=int, default=2, help="x264 threads (frame threads, never slices)")
    args = ap.parse_args()
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        ap.error(f"--size WIDTHxHEIGHT, not {args.size!r}")
    if width % 2 or height % 2 or not (16 <= width <= 7680 and 16 <= height <= 4320):
        ap.error("--size: even sides, 16 to 7680x4320")
    bitrate = args.bitrate or ("12M" if width * height > 1920 * 1080 else "4M")
    keyint = args.keyint or 2 * args.fps
    count = max(1, round(args.seconds * args.fps))

    canvas, coffee = collage(width, height)
    rng = np.random.default_rng(7)
    grain = [rng.normal(0, args.grain, (height, width, 1)).astype(np.int16) for _ in range(GRAIN_PLANES)] \
        if args.grain > 0 else []

    args.out.parent.mkdir(parents=True, exist_ok=True)
    encoder = subprocess.Popen(
        ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}",
         "-r", str(args.fps), "-i", "-",
         "-c:v", "libx264", "-preset", args.preset, "-profile:v", "main", "-pix_fmt", "yuv420p",
         "-b:v", bitrate, "-maxrate", bitrate, "-bufsize", bitrate,
         "-g", str(keyint), "-keyint_min", str(keyint), "-sc_threshold", "0", "-bf", "0",
         "-threads", str(args.threads), "-x264-params", "sliced-threads=0:slices=1",
         "-fps_mode", "cfr", "-r", str(args.fps), "-an",
         *(["-movflags", "+faststart"] if args.out.suffix.lower() in (".mp4", ".mov") else []),
         str(args.out)], stdin=subprocess.PIPE)
    started = time.monotonic()
    try:
        for index in range(count):
            box = view(index, count, width, height, canvas)
            frame = canvas.resize((width, height), Image.BILINEAR, box=box)
            if index == 0 and args.template:
                # Where the coffee cup lies in frame 0, cut from that picture (as a user cuts a template).
                sx, sy = width / (box[2] - box[0]), height / (box[3] - box[1])
                # The cup and saucer: the photo's middle, as a user would draw the box.
                inner = (coffee[0] + 0.12 * (coffee[2] - coffee[0]), coffee[1] + 0.05 * (coffee[3] - coffee[1]),
                         coffee[0] + 0.82 * (coffee[2] - coffee[0]), coffee[1] + 0.95 * (coffee[3] - coffee[1]))
                cut = (round((inner[0] - box[0]) * sx), round((inner[1] - box[1]) * sy),
                       round((inner[2] - box[0]) * sx), round((inner[3] - box[1]) * sy))
                cut = (max(0, cut[0]), max(0, cut[1]), min(width, cut[2]), min(height, cut[3]))
                if cut[2] - cut[0] < 32 or cut[3] - cut[1] < 32:
                    sys.exit("the coffee cup is not in frame 0")
                args.template.parent.mkdir(parents=True, exist_ok=True)
                frame.crop(cut).save(args.template)
            pixels = np.asarray(frame)
            if grain:
                pixels = np.clip(pixels + grain[index % GRAIN_PLANES], 0, 255).astype(np.uint8)
            encoder.stdin.write(pixels.tobytes())
        encoder.stdin.close()
    except BrokenPipeError:
        pass
    except BaseException:
        encoder.kill()
        encoder.wait()
        raise
    if encoder.wait(timeout=600) != 0:
        sys.exit("ffmpeg failed to encode")
    took = time.monotonic() - started
    print(f"{args.out}: {count} frames {width}x{height} at {args.fps} fps, {bitrate}bit/s, keyframe every "
          f"{keyint} frames, {args.out.stat().st_size * 8 / (count / args.fps) / 1e6:.2f} Mbit/s written "
          f"({took:.0f} s)" + (f"; template {args.template}" if args.template else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
