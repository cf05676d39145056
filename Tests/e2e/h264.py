"""Reading what /ws?video=h264 sends (DESIGN.md): Annex B NAL units, the
Sightline SEI with each frame's boxes, and a client that pairs each JSON
text message with the access unit after it."""

import json
import time
import uuid

SIGHTLINE_UUID = uuid.UUID("1c9042a8-8563-404c-b2a4-f8dd707b1bbd").bytes


def nal_units(data: bytes):
    """(type, bytes) of each NAL unit of an Annex B stream, header first."""
    starts, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for n, start in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(data)
        unit = data[start:end].rstrip(b"\x00")
        if unit:
            units.append((unit[0] & 0x1F, unit))
    return units


def unescape(payload: bytes) -> bytes:
    out, zeros = bytearray(), 0
    for byte in payload:
        if zeros >= 2 and byte == 3:
            zeros = 0
            continue
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def sightline_json(unit: bytes):
    """The JSON of a Sightline user_data_unregistered message in an SEI unit, or None."""
    rbsp, at = unescape(unit[1:]), 0
    while at < len(rbsp) - 1:
        kind = size = 0
        while rbsp[at] == 0xFF:
            kind, at = kind + 255, at + 1
        kind, at = kind + rbsp[at], at + 1
        while rbsp[at] == 0xFF:
            size, at = size + 255, at + 1
        size, at = size + rbsp[at], at + 1
        payload, at = rbsp[at:at + size], at + size
        if kind == 5 and payload[:16] == SIGHTLINE_UUID:
            return json.loads(payload[16:].decode("utf-8"))
    return None


def sightline_seis(access_unit: bytes):
    """(index of the unit, JSON) of every Sightline SEI, and the index of the first slice."""
    units = nal_units(access_unit)
    found = [(n, sightline_json(u)) for n, (t, u) in enumerate(units) if t == 6]
    first_slice = next(n for n, (t, _) in enumerate(units) if 1 <= t <= 5)
    return [(n, j) for n, j in found if j is not None], first_slice


class H264Log:
    """What an H.264 /ws client received: (meta, access unit, receive time) per frame."""

    def __init__(self):
        self.frames = []
        self.errors = []


def receive_h264(ws, log: H264Log, *, seconds: float | None = None, frames: int | None = None,
                 timeout: float = 10.0) -> H264Log:
    """Reads JSON + access unit pairs for `seconds` or until `frames` pairs; every
    break of the pairing is recorded in log.errors."""
    deadline = time.monotonic() + (seconds if seconds is not None else 3600)
    meta = None
    # Ends between pairs, so the next call starts on a JSON message.
    while meta is not None or (time.monotonic() < deadline and (frames is None or len(log.frames) < frames)):
        message = ws.recv(timeout=timeout)
        if isinstance(message, str):
            if meta is not None:
                log.errors.append(f"JSON of seq {meta.get('seq')} without its access unit")
            meta = json.loads(message)
            if meta.get("type") != "frame":
                meta = None
            continue
        if meta is None:
            log.errors.append("an access unit without its JSON")
            continue
        if len(message) != meta["video"]["bytes"]:
            log.errors.append(f"seq {meta['seq']}: {len(message)} bytes, JSON says {meta['video']['bytes']}")
        log.frames.append((meta, bytes(message), time.monotonic()))
        meta = None
    return log


def decode_all(access_units):
    """Decodes the access units in order with FFmpeg's h264 decoder (PyAV), each on
    its own packet as a browser's VideoDecoder gets them. Returns (pictures, problems):
    problems are decoder errors and what FFmpeg notes when a picture's reference is
    missing ("Frame num gap", at its debug level) or concealed: a broken picture."""
    import av
    import av.logging

    decoder = av.CodecContext.create("h264", "r")
    pictures, problems = [], []
    previous = av.logging.get_level()
    av.logging.set_level(av.logging.DEBUG)
    try:
        with av.logging.Capture() as logs:
            for n, unit in enumerate(access_units):
                try:
                    pictures += decoder.decode(av.Packet(unit))
                except av.error.FFmpegError as error:
                    problems.append(f"access unit {n}: {error}")
            pictures += decoder.decode(None)
    finally:
        av.logging.set_level(previous)
    for level, name, message in logs:
        text = message.strip()
        if level <= av.logging.ERROR or any(w in text.lower() for w in ("frame num gap", "missing", "concealing", "no frame")):
            problems.append(f"{name}: {text}")
    return pictures, problems


def length_prefixed_units(data: bytes) -> list[tuple[int, bytes]]:
    """(type, unit) of each NAL unit of an AVCC access unit (4-byte big-endian lengths), as MP4
    samples and FLV (rtmp://) carry them."""
    units, at = [], 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        unit = data[at + 4:at + 4 + size]
        if unit:
            units.append((unit[0] & 0x1F, unit))
        at += 4 + size
    return units
