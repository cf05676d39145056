"""A 1920x1080 scene composed here, with known ground truth, for analysis at
the detection size (docs/architecture.md, "Analysis at the size it needs").

scikit-image's sample photos (public domain; not the shared test data) on a
1920x1080 canvas: the astronaut large (her face ~150 px wide), a crop of her
head small (~70 px: 23 px on the 640 copy, which only YuNet's fine pass
finds), and the coffee cup photo as the template (300x200 at full size); all
three move slowly. Each frame's index is written as a 10-bit bar code in
the top-left corner (48 px blocks, white = 1), so a client reads which frame
it was given from the picture itself.
"""

import subprocess
from pathlib import Path

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 1920, 1080
FPS = 25
FRAMES = 100  # 4 s, looped by the file source
BITS, BLOCK = 10, 48

LARGE_SIDE = 640                 # the astronaut, 512x512 scaled to this
HEAD = (120, 0, 320, 210)        # her head in the 512x512 photo (left, top, right, bottom)
SMALL_WIDTH = 150                # the head crop scaled to this width
TEMPLATE_SIZE = (300, 200)       # the coffee photo at full size


def _photos():
    from skimage import data
    astronaut = Image.fromarray(data.astronaut())
    large = astronaut.resize((LARGE_SIDE, LARGE_SIDE), Image.LANCZOS)
    head = astronaut.crop(HEAD)
    small = head.resize((SMALL_WIDTH, round(SMALL_WIDTH * head.height / head.width)), Image.LANCZOS)
    coffee = Image.fromarray(data.coffee()).resize(TEMPLATE_SIZE, Image.LANCZOS)
    return large, small, coffee


def places(index: int) -> dict:
    """Top-left corners (pixels) of each picture in frame `index`: each moves back and
    forth along a line, 2-3 px a frame."""
    t = index / FRAMES
    swing = 1 - abs(2 * t - 1)  # 0 -> 1 -> 0 over the loop
    return {
        "large": (int(200 + 240 * swing), int(300 + 60 * swing)),
        "small": (int(1050 + 200 * swing), int(700 - 80 * swing)),
        "template": (int(1350 + 250 * swing), int(150 + 120 * swing)),
    }


def _background() -> Image.Image:
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    base = 90 + 60 * (x / WIDTH) + 30 * (y / HEIGHT)
    noise = rng.normal(0, 6, (HEIGHT, WIDTH))
    gray = np.clip(base + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(np.stack([gray, (gray * 0.95).astype(np.uint8), (gray * 0.9).astype(np.uint8)], axis=2))


def frame(index: int, photos=None, background=None) -> Image.Image:
    large, small, coffee = photos or _photos()
    canvas = (background or _background()).copy()
    p = places(index)
    canvas.paste(large, p["large"])
    canvas.paste(small, p["small"])
    canvas.paste(coffee, p["template"])
    bits = np.zeros((BLOCK, BLOCK * BITS, 3), np.uint8)
    for bit in range(BITS):
        if index >> bit & 1:
            bits[:, bit * BLOCK:(bit + 1) * BLOCK] = 255
    canvas.paste(Image.fromarray(bits), (0, 0))
    return canvas


def read_index(image: Image.Image) -> int:
    """The frame index from the bar code (any size of the picture: read at block centres)."""
    gray = np.asarray(image.convert("L"), dtype=np.float32)
    sx, sy = image.width / WIDTH, image.height / HEIGHT
    index = 0
    for bit in range(BITS):
        x0, x1 = int((bit * BLOCK + 12) * sx), int(((bit + 1) * BLOCK - 12) * sx)
        y0, y1 = int(12 * sy), int((BLOCK - 12) * sy)
        if gray[y0:y1, x0:x1].mean() > 128:
            index |= 1 << bit
    return index


def normalized(x: float, y: float, w: float, h: float) -> dict:
    return {"x": x / WIDTH, "y": y / HEIGHT, "w": w / WIDTH, "h": h / HEIGHT}


def template_box(index: int) -> dict:
    x, y = places(index)["template"]
    return normalized(x, y, *TEMPLATE_SIZE)


def face_boxes(index: int, faces: dict) -> dict:
    """Where each face is in frame `index`, from `faces` ({"large": box, "small": box}, each
    normalized to its own picture, as `sightline detect` reports it on that picture)."""
    large, small, _ = _photos()
    sizes = {"large": large.size, "small": small.size}
    p = places(index)
    out = {}
    for name, face in faces.items():
        (x0, y0), (w, h) = p[name], sizes[name]
        out[name] = normalized(x0 + face["x"] * w, y0 + face["y"] * h, face["w"] * w, face["h"] * h)
    return out


def write_pictures(directory: Path) -> dict:
    """The template (cut from frame 0 of the canvas, as a user cuts one) and the two face
    pictures on their own, for `sightline detect` to say where each face lies in them."""
    directory.mkdir(parents=True, exist_ok=True)
    large, small, coffee = _photos()
    first = frame(0, (large, small, coffee))
    x, y = places(0)["template"]
    first.crop((x, y, x + TEMPLATE_SIZE[0], y + TEMPLATE_SIZE[1])).save(directory / "coffee.png")
    large.save(directory / "large.png")
    small.save(directory / "small.png")
    return {"template": directory / "coffee.png", "large": directory / "large.png", "small": directory / "small.png"}


def write_video(path: Path, frames: int = FRAMES, bitrate: str = "4M", keyint: int = 2 * FPS,
                bframes: int | None = None) -> Path:
    """The scene as a 1080p25 H.264 file an ordinary IP camera would send (main profile,
    4 Mbit/s, a keyframe every `keyint` frames, 2 s by default), x264 through ffmpeg.
    `bframes`: x264's B-frames (None: the preset's, 3; IP cameras send 0)."""
    photos, background = _photos(), _background()
    encoder = subprocess.Popen(
        ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{WIDTH}x{HEIGHT}",
         "-r", str(FPS), "-i", "-", "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main",
         "-pix_fmt", "yuv420p", "-b:v", bitrate, "-maxrate", bitrate, "-bufsize", "8M", "-g", str(keyint),
         "-keyint_min", str(keyint), "-sc_threshold", "0"]
        + (["-bf", str(bframes)] if bframes is not None else [])
        + ["-threads", "2", str(path)], stdin=subprocess.PIPE)
    for index in range(frames):
        encoder.stdin.write(frame(index, photos, background).tobytes())
    encoder.stdin.close()
    assert encoder.wait(timeout=600) == 0, "ffmpeg failed to encode the scene"
    return path


if __name__ == "__main__":
    import sys
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "scene1080.mp4")
    write_video(out)
    print(write_pictures(out.parent / "scene1080"))
