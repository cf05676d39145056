"""Reading an event's clip (issue 26) from the outside: what `ffprobe` says of it, its
access units with the Sightline SEI (PyAV's demuxer gives MP4 samples as 4-byte
length-prefixed NAL units, not Annex B), its top-level MP4 boxes and the samples of
each whole fragment (moof + mdat), and a /ws viewer on its own thread that records
each frame's detections by seq, for comparing with the SEI."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import threading
import time
from pathlib import Path

from h264 import length_prefixed_units, sightline_json

FFPROBE = shutil.which("ffprobe")


# --------------------------------------------------------------------------- ffprobe


def ffprobe_stream(path: Path) -> tuple[dict, str]:
    """`ffprobe -count_packets` of the first video stream: ({codec_name, width, height,
    nb_read_packets (int)}, ffprobe's stderr). Raises when ffprobe cannot open the file."""
    done = subprocess.run([FFPROBE, "-v", "error", "-count_packets", "-select_streams", "v:0",
                           "-show_entries", "stream=codec_name,width,height,nb_read_packets",
                           "-of", "json", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"ffprobe could not read {path.name}: {done.stderr.strip()[-1000:]}"
    streams = json.loads(done.stdout).get("streams") or []
    assert streams, f"ffprobe found no video stream in {path.name}: {done.stdout[:500]}"
    stream = dict(streams[0])
    stream["nb_read_packets"] = int(stream.get("nb_read_packets", 0))
    return stream, done.stderr


def ffprobe_packet_flags(path: Path) -> list[str]:
    """The flags of each video packet in order (`K_` for a keyframe), by ffprobe."""
    done = subprocess.run([FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                           "-of", "csv=p=0", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-1000:]
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


# --------------------------------------------------------------------------- PyAV




class ClipFrame:
    """One access unit of a clip: its NAL unit types, whether the demuxer calls it a
    keyframe, and the JSON of its Sightline SEI (None when it has none, a list when
    it has several)."""

    def __init__(self, keyframe: bool, units: list[tuple[int, bytes]]):
        self.keyframe = keyframe
        self.types = [t for t, _ in units]
        found = [sightline_json(u) for t, u in units if t == 6]
        found = [f for f in found if f is not None]
        self.sei = found[0] if len(found) == 1 else (found or None)

    @property
    def idr(self) -> bool:
        return 5 in self.types


def read_clip(path: Path) -> list[ClipFrame]:
    """Every access unit of the clip's video stream, demuxed by PyAV (libavformat)."""
    import av

    frames = []
    with av.open(str(path)) as container:
        for packet in container.demux(video=0):
            if packet.size:
                frames.append(ClipFrame(bool(packet.is_keyframe), length_prefixed_units(bytes(packet))))
    return frames


def decoded_pictures(path: Path) -> int:
    """How many pictures FFmpeg's decoder gets out of the clip."""
    import av

    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


# --------------------------------------------------------------------------- MP4 boxes


def top_level_boxes(data: bytes) -> list[tuple[str, int, int, bool]]:
    """(type, offset, size, whole) of each top-level box; `whole` False for one cut short."""
    boxes, at = [], 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            if at + 16 > len(data):
                break
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
            header = 16
        elif size == 0:
            size = len(data) - at
        if size < header:
            boxes.append((kind.decode("latin-1"), at, size, False))
            break
        boxes.append((kind.decode("latin-1"), at, size, at + size <= len(data)))
        at += size
    return boxes


def _children(data: bytes, start: int, end: int):
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if size < 8 or at + size > end:
            return
        yield kind.decode("latin-1"), at + 8, at + size
        at += size


def moof_sample_count(data: bytes, offset: int, size: int) -> int:
    """The samples a moof box declares (the sum of its truns' sample_count)."""
    count = 0
    for kind, start, end in _children(data, offset + 8, offset + size):
        if kind != "traf":
            continue
        for inner, istart, iend in _children(data, start, end):
            if inner == "trun" and iend - istart >= 8:
                count += struct.unpack(">I", data[istart + 4:istart + 8])[0]
    return count


def whole_fragment_samples(data: bytes) -> tuple[list[int], bool]:
    """The sample count of each whole fragment (a whole moof followed by its whole
    mdat), and whether anything after the last whole fragment was cut short."""
    boxes = top_level_boxes(data)
    counts, cut, i = [], False, 0
    while i < len(boxes):
        kind, offset, size, whole = boxes[i]
        if kind == "moof":
            following = boxes[i + 1] if i + 1 < len(boxes) else None
            if whole and following and following[0] == "mdat" and following[3]:
                counts.append(moof_sample_count(data, offset, size))
                i += 2
                continue
            cut = True
            break
        if not whole:
            cut = True
            break
        i += 1
    covered = sum(b[2] for b in boxes if b[3])
    return counts, cut or covered < len(data)


# --------------------------------------------------------------------------- /ws viewer


class WsRecorder:
    """A /ws JPEG viewer on its own thread for the whole run: per seq, the frame's
    {capturedAt, width, height, detections}, and the receive time of each frame."""

    def __init__(self, server):
        self.server = server
        self.frames: dict[int, dict] = {}
        self.times: list[float] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.connected = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ws-recorder", daemon=True)
        self.thread.start()
        assert self.connected.wait(15), f"the /ws viewer could not connect: {self.errors}"

    def _run(self):
        from websockets.exceptions import ConnectionClosed

        try:
            ws = self.server.ws()
        except Exception as e:  # noqa: BLE001 - reported by the constructor
            self.errors.append(f"connect: {e!r}")
            return
        self.connected.set()
        with ws:
            pending = None
            while not self.stop_event.is_set():
                try:
                    message = ws.recv(timeout=0.5)
                except TimeoutError:
                    continue
                except ConnectionClosed as e:
                    self.errors.append(f"closed: {e!r}")
                    return
                if isinstance(message, str):
                    meta = json.loads(message)
                    if meta.get("type") == "frame":
                        pending = meta
                    continue
                if pending is None:
                    self.errors.append("a binary message without its JSON")
                    continue
                with self.lock:
                    self.frames[pending["seq"]] = {k: pending.get(k) for k in
                                                   ("capturedAt", "width", "height", "detections")}
                    self.times.append(time.monotonic())
                pending = None

    def frames_since(self, since: float) -> int:
        with self.lock:
            return sum(1 for t in self.times if t >= since)

    def snapshot(self) -> dict[int, dict]:
        with self.lock:
            return dict(self.frames)

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=10)
