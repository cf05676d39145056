#!/usr/bin/env python3
"""Makes a natural-looking 640x480 test video for `sightline bench --h264`:
scikit-image's sample photographs (astronaut, coffee, rocket, chelsea,
coins' street-free cousins...) each panned and zoomed slowly, as a camera
on a slow pan would see them, with a little sensor grain. Written
losslessly (FFV1 in Matroska) so the benchmark's codecs start from clean
pixels. Needs scikit-image, numpy, Pillow and ffmpeg.

    python3 scripts/make_bench_video.py /tmp/pans.mkv [--seconds-each 3] [--fps 30] [--grain 2]
"""

import argparse
import subprocess

import numpy as np
from PIL import Image
from skimage import data

W, H = 640, 480
PHOTOS = ["astronaut", "coffee", "rocket", "chelsea", "immunohistochemistry", "hubble_deep_field"]


def frames(photo: np.ndarray, count: int, seed: int, grain: float):
    image = Image.fromarray(photo if photo.ndim == 3 else np.stack([photo] * 3, axis=-1)).convert("RGB")
    rng = np.random.default_rng(seed)
    # The view: a window of the photo with the output's shape, zooming in from the whole
    # photo to 60 % of it while its centre drifts.
    full = min(image.width / W, image.height / H)
    start = np.array([image.width / 2, image.height / 2]) + rng.uniform(-0.1, 0.1, 2) * [image.width, image.height]
    end = np.array([image.width / 2, image.height / 2]) + rng.uniform(-0.15, 0.15, 2) * [image.width, image.height]
    for n in range(count):
        t = n / max(1, count - 1)
        t = t * t * (3 - 2 * t)   # ease in and out
        scale = full * (1.0 - 0.4 * t)
        cx, cy = start + (end - start) * t
        cx = min(max(cx, W * scale / 2), image.width - W * scale / 2)
        cy = min(max(cy, H * scale / 2), image.height - H * scale / 2)
        box = (cx - W * scale / 2, cy - H * scale / 2, cx + W * scale / 2, cy + H * scale / 2)
        view = np.asarray(image.resize((W, H), Image.BICUBIC, box=box), dtype=np.float32)
        if grain > 0:
            view += rng.normal(0, grain, view.shape)   # sensor grain, new in every frame
        yield np.clip(view + 0.5, 0, 255).astype(np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--seconds-each", type=float, default=3.0)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--grain", type=float, default=2.0,
                        help="sigma of the Gaussian grain added to every frame (0: clean pans)")
    args = parser.parse_args()
    count = int(args.seconds_each * args.fps)
    ffmpeg = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{W}x{H}",
                               "-r", str(args.fps), "-i", "-", "-c:v", "ffv1", "-pix_fmt", "bgr0", args.output],
                              stdin=subprocess.PIPE)
    for seed, name in enumerate(PHOTOS):
        for frame in frames(getattr(data, name)(), count, seed, args.grain):
            ffmpeg.stdin.write(frame.tobytes())
    ffmpeg.stdin.close()
    if ffmpeg.wait() != 0:
        raise SystemExit("ffmpeg failed")


if __name__ == "__main__":
    main()
