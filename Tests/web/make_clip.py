#!/usr/bin/env python3
"""Makes an event clip the way the server's contract describes one, to test the page's clip
player (web/clip.js) on a real file: libx264 (High profile, no B-frames, a keyframe every 30
frames), each access unit with a Sightline SEI (user_data_unregistered, UUID
1c9042a8-8563-404c-b2a4-f8dd707b1bbd, then the frame's JSON) inserted before its first slice,
muxed by libavformat into fragmented MP4 (movflags=frag_keyframe+empty_moov+default_base_moof).

Every frame shows a bright square at a place that depends on its index (square_at), and its SEI
puts a template detection box exactly there, so a picture drawn with another frame's boxes is
seen to disagree. A small face detection sits in the bottom-left corner, where the square never
goes, so each SEI is longer than 255 bytes (its size takes two bytes).

Usage: make_clip.py OUT.mp4 [--frames 60]   prints a JSON manifest (size, fps, start, squares).
Needs PyAV (av) and numpy. Used by Tests/web/clipfile.test.mjs and Tests/browser/test_clip_player.py.
"""
import argparse
import fractions
import json
import sys

import av
import numpy as np

SEI_UUID = bytes.fromhex("1c9042a88563404cb2a4f8dd707b1bbd")
WIDTH, HEIGHT, FPS, GOP = 320, 240, 30, 30
SQUARE = 40
START = 1763802000.0  # capturedAt of frame 0 (Unix seconds)
FACE_BOX = {"x": 0.02, "y": 0.92, "w": 0.06, "h": 0.07}


def square_at(index):
    """Top-left (x, y) in pixels of frame `index`'s square: it jumps about, never near the bottom-left face."""
    return 16 + (index * 53) % 248, 16 + (index * 29) % 120


def square_box(index):
    x, y = square_at(index)
    return {"x": x / WIDTH, "y": y / HEIGHT, "w": SQUARE / WIDTH, "h": SQUARE / HEIGHT}


def picture(index):
    """RGB frame: a dim gradient that drifts, and the white square."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    image = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    image[..., 0] = (20 + (xs + index * 2) % 50).astype(np.uint8)
    image[..., 1] = (20 + ys % 40).astype(np.uint8)
    image[..., 2] = 40
    x, y = square_at(index)
    image[y:y + SQUARE, x:x + SQUARE] = 255
    return image


def frame_json(index):
    return {"seq": index, "capturedAt": START + index / FPS, "width": WIDTH, "height": HEIGHT,
            "detections": [
                {"kind": "template", "label": "square", "score": 0.99, "scale": 1, "angle": 0,
                 "box": square_box(index)},
                {"kind": "face", "id": 7, "score": 0.9, "box": FACE_BOX, "roll": 10.0, "yaw": -5.0,
                 "landmarks": {"rightEye": [0.035, 0.94], "leftEye": [0.065, 0.94], "nose": [0.05, 0.955],
                               "mouthRight": [0.04, 0.97], "mouthLeft": [0.06, 0.97]}},
            ]}


def add_emulation_prevention(rbsp):
    """H.264 7.4.1: a 0x03 after every two zero bytes that are followed by a byte <= 3."""
    out = bytearray()
    zeros = 0
    for b in rbsp:
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def sei_coded_number(value):
    return b"\xff" * (value // 255) + bytes([value % 255])


def sightline_sei(payload_json):
    """An SEI NAL unit (header included, no start code) with the Sightline user_data_unregistered message."""
    payload = SEI_UUID + json.dumps(payload_json, separators=(",", ":")).encode()
    rbsp = sei_coded_number(5) + sei_coded_number(len(payload)) + payload + b"\x80"
    return b"\x06" + add_emulation_prevention(rbsp)


def nal_starts(data):
    """[(start of the start code, start of the NAL unit)] of an Annex B access unit."""
    found = []
    i = data.find(b"\x00\x00\x01")
    while i >= 0:
        begin = i - 1 if i > 0 and data[i - 1] == 0 else i
        found.append((begin, i + 3))
        i = data.find(b"\x00\x00\x01", i + 3)
    return found


def nal_units(data):
    starts = nal_starts(data)
    units = []
    for k, (_, nal) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(data)
        units.append(data[nal:end])
    return units


def insert_before_first_slice(access_unit, nal):
    for begin, start in nal_starts(access_unit):
        if access_unit[start] & 0x1F in (1, 5):
            return access_unit[:begin] + b"\x00\x00\x00\x01" + nal + access_unit[begin:]
    raise ValueError("access unit without a slice")


def encode(frames):
    """[(Annex B access unit, is keyframe)] from libx264 with the server's shape (no B-frames)."""
    context = av.CodecContext.create("libx264", "w")
    context.width, context.height = WIDTH, HEIGHT
    context.pix_fmt = "yuv420p"
    context.time_base = fractions.Fraction(1, FPS)
    context.framerate = fractions.Fraction(FPS, 1)
    context.options = {"preset": "veryfast", "tune": "zerolatency", "bf": "0", "g": str(GOP),
                       "keyint_min": str(GOP), "sc_threshold": "0", "profile": "high", "crf": "20"}
    context.open()
    units = []
    for index in range(frames):
        frame = av.VideoFrame.from_ndarray(picture(index), format="rgb24").reformat(format="yuv420p")
        frame.pts = index
        units += [(bytes(p), p.is_keyframe) for p in context.encode(frame)]
    units += [(bytes(p), p.is_keyframe) for p in context.encode(None)]
    assert len(units) == frames, f"{len(units)} access units for {frames} frames"
    return units


def make_clip(path, frames=60):
    units = encode(frames)
    output = av.open(str(path), "w", format="mp4",
                     options={"movflags": "frag_keyframe+empty_moov+default_base_moof"})
    stream = output.add_stream("h264", rate=FPS)
    stream.width, stream.height = WIDTH, HEIGHT
    stream.pix_fmt = "yuv420p"
    stream.time_base = fractions.Fraction(1, FPS)
    # Annex B parameter sets as extradata: the mov muxer writes the avcC from them and turns each
    # access unit into length-prefixed NAL units (the SPS and PPS stay inline in keyframes).
    parameter_sets = [n for n in nal_units(units[0][0]) if n[0] & 0x1F in (7, 8)]
    stream.codec_context.extradata = b"".join(b"\x00\x00\x00\x01" + n for n in parameter_sets)
    keyframes = []
    for index, (unit, key) in enumerate(units):
        packet = av.Packet(insert_before_first_slice(unit, sightline_sei(frame_json(index))))
        packet.pts = packet.dts = index
        packet.time_base = fractions.Fraction(1, FPS)
        packet.is_keyframe = key
        packet.stream = stream
        output.mux(packet)
        if key:
            keyframes.append(index)
    output.close()
    return {"path": str(path), "frames": frames, "width": WIDTH, "height": HEIGHT, "fps": FPS,
            "start": START, "square": SQUARE, "keyframes": keyframes,
            "squares": [list(square_at(i)) for i in range(frames)]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    json.dump(make_clip(args.out, args.frames), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
