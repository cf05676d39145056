"""A scripted stand-in for the server side of /ws?video=h264, to test the page's player alone.

It serves web/ and a small /api/state, and on /ws?video=h264 streams the frame-code video
(frame_code.py) encoded with libx264 through PyAV, per frame the JSON the contract describes (the
template box at the patch's true place, so boxes and pictures agree exactly) and then the access
unit. Faults the real server never makes can be scripted per stream, by frame number (0 = the
first frame sent on that connection):
  corrupt      the access unit replaced by bytes of the same length that are no H.264
  orphan       an extra binary message with no JSON before it (a copy of the access unit)
  no_binary    the JSON sent, its access unit never
  wrong_size   the access unit sent one byte short of what the JSON says
After corrupt / no_binary / wrong_size the encoder is asked for a keyframe a few frames later,
as the real server does after a skip. /ws (JPEG) sends the same frames as JPEG.
"""
import asyncio
import fractions
import io
import json
import mimetypes
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import av
from PIL import Image
from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

import frame_code

WEB_ROOT = Path(__file__).resolve().parents[2] / "web"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self' ws: wss:; frame-ancestors 'none'")
KEYFRAME_AFTER_FAULT = 3  # frames after a fault until the encoder makes a keyframe


class Encoder:
    """libx264 with the real server's low-latency shape: no B-frames, zerolatency, Annex B."""

    def __init__(self, fps, gop):
        self.context = av.CodecContext.create("libx264", "w")
        self.context.width, self.context.height = frame_code.WIDTH, frame_code.HEIGHT
        self.context.pix_fmt = "yuv420p"
        self.context.time_base = fractions.Fraction(1, fps)
        self.context.framerate = fractions.Fraction(fps, 1)
        self.context.options = {"preset": "ultrafast", "tune": "zerolatency", "bf": "0", "g": str(gop),
                                "profile": "high", "crf": "23", "sc_threshold": "0"}
        self.context.open()
        self.pts = 0

    def encode(self, rgb, key=False):
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
        frame.pts = self.pts
        self.pts += 1
        if key:
            frame.pict_type = av.video.frame.PictureType.I
        packets = self.context.encode(frame)
        assert len(packets) == 1, "zerolatency gives one access unit per frame"
        return bytes(packets[0]), packets[0].is_keyframe


def codec_string(access_unit):
    """avc1.PPCCLL from the SPS of a keyframe's access unit."""
    data = access_unit
    i = 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            return "avc1.64001f"
        nal = data[i + 3]
        if nal & 0x1F == 7:
            return "avc1." + data[i + 4:i + 7].hex()
        i += 3


class FakeH264Server:
    def __init__(self, fps=30, gop=60, faults=None):
        self.fps = fps
        self.gop = gop
        self.faults = faults or {}  # kind -> set of frame numbers
        self.port = None
        self.url = None
        self.loop = None
        self.thread = None
        self.sent = []  # per connection: list of (seq, key, kind) sent
        self.frames = [frame_code.make_frame(k) for k in range(frame_code.PERIOD)]
        self._jpegs = None
        self._stop = None

    # --- HTTP -----------------------------------------------------------------

    def _state(self):
        return {"source": {"state": "live", "name": "frame-code (fake)", "width": 640, "height": 480},
                "fps": {"capture": self.fps, "processed": self.fps, "sent": self.fps},
                "drops": {"superseded": 0, "late": 0, "error": 0}, "clientSkips": 0,
                "clients": {"ws": len(self.sent), "mjpeg": 0}, "frames": {"sent": 0}, "stages": {},
                "templates": [],
                "video": {"viewers": {"jpeg": 0, "h264": 1}, "encodeMs": {"p50": 2.5, "p99": None, "count": 10},
                          "bytesPerFrame": {"jpeg": 40000.0, "h264": 5000.0},
                          "keyframes": {"scheduled": 1, "requested": 2}, "skipsToKeyframe": 0,
                          "renditions": [{"name": "main", "width": 640, "height": 480, "encoding": True,
                                          "viewers": 1}]}}

    def _respond(self, status, body, content_type):
        headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))),
                           ("Content-Security-Policy", CSP), ("Cache-Control", "no-store")])
        return Response(status, "OK" if status == 200 else "Not Found", headers, body)

    def _process_request(self, connection, request):
        path = urlsplit(request.path).path
        if path in ("/ws",):
            return None  # the upgrade
        if path == "/api/state":
            return self._respond(200, json.dumps(self._state()).encode(), "application/json")
        if path == "/api/session":
            return self._respond(200, b'{"signedIn": false, "role": "viewer"}', "application/json")
        if path.startswith("/api/"):
            return self._respond(200, b"[]", "application/json")
        name = "index.html" if path == "/" else path.lstrip("/")
        file = (WEB_ROOT / name).resolve()
        if WEB_ROOT.resolve() not in file.parents or not file.is_file():
            return self._respond(404, b"not found", "text/plain")
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if file.suffix == ".js":
            content_type = "text/javascript"
        return self._respond(200, file.read_bytes(), content_type)

    # --- WebSocket ------------------------------------------------------------------

    def _meta(self, seq, index):
        cx, cy = frame_code.patch_centre(index)
        half = frame_code.PATCH_SIZE / 2
        box = {"x": (cx - half) / frame_code.WIDTH, "y": (cy - half) / frame_code.HEIGHT,
               "w": frame_code.PATCH_SIZE / frame_code.WIDTH, "h": frame_code.PATCH_SIZE / frame_code.HEIGHT}
        return {"type": "frame", "seq": seq, "capturedAt": time.time(), "width": 640, "height": 480,
                "detections": [{"kind": "template", "label": "code", "score": 0.99, "scale": 1, "angle": 0,
                                "box": box}]}

    async def _handler(self, websocket):
        query = parse_qs(urlsplit(websocket.request.path).query)
        h264 = query.get("video", ["jpeg"])[0] == "h264"
        log = []
        self.sent.append(log)
        encoder = Encoder(self.fps, self.gop) if h264 else None
        key_at = 0  # force a keyframe at this frame number
        start = time.monotonic()
        n = 0
        seq = 1000
        try:
            while True:
                await asyncio.sleep(max(0.0, start + n / self.fps - time.monotonic()))
                index = n % frame_code.PERIOD
                meta = self._meta(seq, index)
                if not h264:
                    jpeg = self._jpeg(index)
                    meta["jpegBytes"] = len(jpeg)
                    await websocket.send(json.dumps(meta))
                    await websocket.send(jpeg)
                else:
                    unit, key = encoder.encode(self.frames[index], key=(n == key_at))
                    meta["video"] = {"format": "h264", "key": key, "bytes": len(unit)}
                    if key:
                        meta["video"]["codec"] = codec_string(unit)
                    kind = "ok"
                    if n in self.faults.get("orphan", ()):
                        await websocket.send(unit)
                        kind = "orphan-before"
                    await websocket.send(json.dumps(meta))
                    if n in self.faults.get("no_binary", ()):
                        kind = "no_binary"
                    elif n in self.faults.get("wrong_size", ()):
                        await websocket.send(unit[:-1])
                        kind = "wrong_size"
                    elif n in self.faults.get("corrupt", ()):
                        garbage = bytes((0x00, 0x00, 0x00, 0x01, 0x41)) + bytes((i * 151 + 7) % 256 for i in range(len(unit) - 5))
                        await websocket.send(garbage[:len(unit)])
                        kind = "corrupt"
                    else:
                        await websocket.send(unit)
                    if kind in ("no_binary", "wrong_size", "corrupt"):
                        key_at = n + KEYFRAME_AFTER_FAULT
                    log.append((seq, key, kind))
                n += 1
                seq += 1
        except Exception:
            return

    def _jpeg(self, index):
        if self._jpegs is None:
            self._jpegs = {}
        if index not in self._jpegs:
            buffer = io.BytesIO()
            Image.fromarray(self.frames[index]).save(buffer, "JPEG", quality=90)
            self._jpegs[index] = buffer.getvalue()
        return self._jpegs[index]

    # --- lifecycle ------------------------------------------------------------------

    def start(self):
        ready = threading.Event()

        async def main():
            self._stop = asyncio.Event()
            async with serve(self._handler, "127.0.0.1", 0, process_request=self._process_request,
                             max_size=None, compression=None) as server:
                self.port = server.sockets[0].getsockname()[1]
                self.url = f"http://127.0.0.1:{self.port}"
                ready.set()
                await self._stop.wait()

        def run():
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(main())

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def stop(self):
        if self.loop and self._stop:
            self.loop.call_soon_threadsafe(self._stop.set)
            self.thread.join(5)
