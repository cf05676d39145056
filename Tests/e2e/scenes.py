"""Test videos made on the spot: frames drawn with Pillow, written as an MJPEG AVI
(a container FFmpeg reads as `file:`), with what each frame shows.

The AVI writer is the minimal RIFF layout (avih, one video stream, movi, idx1);
no video tool is needed on the machine.
"""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path

from PIL import Image, ImageDraw


def _chunk(fourcc: bytes, data: bytes) -> bytes:
    pad = b"\0" if len(data) % 2 else b""
    return fourcc + struct.pack("<I", len(data)) + data + pad


def _list(kind: bytes, data: bytes) -> bytes:
    return b"LIST" + struct.pack("<I", len(data) + 4) + kind + data


def write_mjpeg_avi(path: Path, jpegs: list[bytes], width: int, height: int, fps: int) -> None:
    """Writes `jpegs` (one per frame) as an MJPEG AVI at `fps`."""
    biggest = max(len(j) for j in jpegs)
    avih = struct.pack("<10I4I", int(1_000_000 / fps), biggest * fps, 0, 0x10, len(jpegs), 0, 1,
                       biggest, width, height, 0, 0, 0, 0)
    strh = (b"vids" + b"MJPG" + struct.pack("<IHHIIIIIIiI", 0, 0, 0, 0, 1, fps, 0, len(jpegs), biggest, -1, 0)
            + struct.pack("<4h", 0, 0, width, height))
    strf = struct.pack("<IiiHH4sIiiII", 40, width, height, 1, 24, b"MJPG", width * height * 3, 0, 0, 0, 0)
    hdrl = _list(b"hdrl", _chunk(b"avih", avih) + _list(b"strl", _chunk(b"strh", strh) + _chunk(b"strf", strf)))
    movi_body = b""
    index = b""
    for jpeg in jpegs:
        offset = 4 + len(movi_body)  # from the 'movi' fourcc
        movi_body += _chunk(b"00dc", jpeg)
        index += b"00dc" + struct.pack("<III", 0x10, offset, len(jpeg))
    body = hdrl + _list(b"movi", movi_body) + _chunk(b"idx1", index)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body) + 4) + b"AVI " + body)


def textured_background(width: int, height: int, seed: int = 7) -> Image.Image:
    """Soft random blobs: something for JPEG to encode, nothing a template or face matches."""
    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), (118, 124, 120))
    draw = ImageDraw.Draw(image)
    for _ in range(60):
        x, y = rng.randrange(width), rng.randrange(height)
        r = rng.randrange(10, 60)
        shade = rng.randrange(90, 160)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=(shade, shade + rng.randrange(-8, 8), shade - 6))
    return image


def jpeg_bytes(image: Image.Image, quality: int = 85) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def comings_and_goings(path: Path, template: Image.Image, face: Image.Image, *, fps: int = 10,
                       width: int = 640, height: int = 480, head_seconds: float = 1.5) -> list[dict]:
    """An 11 s loop: 1.5 s empty (`head_seconds`), the template for 3 s (drifting right), 1.5 s
    empty, the face for 3 s, 2 s empty. Returns per frame: {"template": box|None, "face": box|None},
    boxes normalized [x, y, w, h]."""
    background = textured_background(width, height)
    timeline = [(head_seconds, None), (3.0, "template"), (1.5, None), (3.0, "face"), (2.0, None)]
    frames, truth = [], []
    for seconds, what in timeline:
        count = int(round(seconds * fps))
        for i in range(count):
            image = background.copy()
            entry = {"template": None, "face": None}
            if what == "template":
                x, y = 120 + 4 * i, 150
                image.paste(template, (x, y))
                entry["template"] = [x / width, y / height, template.width / width, template.height / height]
            elif what == "face":
                x, y = 220 + 2 * i, 90
                image.paste(face, (x, y))
                entry["face"] = [x / width, y / height, face.width / width, face.height / height]
            frames.append(jpeg_bytes(image))
            truth.append(entry)
    write_mjpeg_avi(path, frames, width, height, fps)
    return truth
