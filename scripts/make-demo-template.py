#!/usr/bin/env python3
"""Makes config/demo-template.png, the demo scene's default template.

A 96x96 badge of bold, asymmetric shapes (a disc, a bar, a block) so
TM_CCOEFF_NORMED locks onto it at every scale the matcher tries; standard library only.
Run once; the PNG is committed. Usage: scripts/make-demo-template.py [OUT]
"""
import argparse
import math
import struct
import zlib

SIZE = 96


def pixel(x, y):
    """Bold shapes (features 12 px and up) so the badge survives the
    matcher's 0.35x shrink and its 1.25x scale steps without aliasing."""
    cx, cy = x - 47.5, y - 47.5
    r = math.hypot(cx, cy)
    # Navy background, one big orange disc with a navy core.
    rgb = (30, 40, 120)
    if r < 40:
        rgb = (250, 150, 30)
    if r < 18:
        rgb = (30, 40, 120)
    # A thick white bar across the upper left and a black block lower right.
    if 14 <= y < 30 and 6 <= x < 58:
        rgb = (245, 245, 245)
    if 60 <= y < 88 and 62 <= x < 90:
        rgb = (15, 15, 15)
    # Dark frame.
    if x < 4 or y < 4 or x > 91 or y > 91:
        rgb = (15, 15, 15)
    return rgb


def png(width, height, rows):
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(row) for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    parser = argparse.ArgumentParser(description="Makes the demo scene's default template (a 96x96 PNG).")
    parser.add_argument("out", nargs="?", default="config/demo-template.png", help="where to write it")
    out = parser.parse_args().out
    rows = []
    for y in range(SIZE):
        row = []
        for x in range(SIZE):
            row.extend(pixel(x, y))
        rows.append(row)
    with open(out, "wb") as f:
        f.write(png(SIZE, SIZE, rows))


if __name__ == "__main__":
    main()
