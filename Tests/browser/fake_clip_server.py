"""A stand-in for the server side of the Events card's clips, to test the page's clip player alone.

It serves web/, a small /api/state, and /api/events with three events over a clip made by
Tests/web/make_clip.py (60 frames, a white square that jumps about, each frame's SEI boxing it):
  with-clip    a template event from frame 15 to frame 45, best frame 20, with its clip
  no-clip      the same event without a clip (the page shows the best-frame snapshot)
  broken-clip  an event whose clip.mp4 answers 404 (the page falls back to the snapshot)
Snapshots and crops are JPEGs of the clip's picture at the best frame. Anything else under /api/
answers [] and /ws 404 (the page's live view is not under test here).
"""
import io
import json
import mimetypes
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]
WEB_ROOT = REPO / "web"
import make_clip  # noqa: E402  (Tests/web, on the import path by pytest.ini; needs PyAV and numpy)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
       "connect-src 'self' ws: wss:; frame-ancestors 'none'")
BEST = 20
FIRST, LAST = 15, 45  # the event's own span, in frames


def event(event_id, clip=None):
    start = make_clip.START
    answer = {"id": event_id, "camera": "main", "kind": "template", "label": "square",
              "startTime": start + FIRST / make_clip.FPS, "startSeq": FIRST,
              "lastTime": start + LAST / make_clip.FPS, "lastSeq": LAST,
              "endTime": start + LAST / make_clip.FPS, "frames": LAST - FIRST + 1, "score": 0.99,
              "box": make_clip.square_box(LAST),
              "best": {"seq": BEST, "time": start + BEST / make_clip.FPS, "score": 0.99,
                       "box": make_clip.square_box(BEST)},
              "width": make_clip.WIDTH, "height": make_clip.HEIGHT}
    if clip:
        answer["clip"] = clip
    return answer


class FakeClipServer:
    def __init__(self):
        self.work = tempfile.TemporaryDirectory(prefix="sightline-clip-page-")
        path = Path(self.work.name) / "clip.mp4"
        self.manifest = make_clip.make_clip(path)
        self.clip_bytes = path.read_bytes()
        clip = {"start": make_clip.START, "duration": self.manifest["frames"] / make_clip.FPS,
                "bytes": len(self.clip_bytes), "frames": self.manifest["frames"], "complete": True}
        self.events = [event("1763802000.500000-withcl", clip), event("1763801990.500000-noclip"),
                       event("1763801980.500000-broken", clip)]
        self.ids = {"with-clip": self.events[0]["id"], "no-clip": self.events[1]["id"],
                    "broken-clip": self.events[2]["id"]}
        self.snapshot = self._jpeg(BEST)
        self.requests = []
        self.httpd = None
        self.thread = None
        self.url = None

    def _jpeg(self, index):
        from PIL import Image
        buffer = io.BytesIO()
        Image.fromarray(make_clip.picture(index)).save(buffer, "JPEG", quality=92)
        return buffer.getvalue()

    def _state(self):
        return {"source": {"state": "live", "name": "clip test (fake)", "width": 320, "height": 240},
                "fps": {"capture": 30, "processed": 30, "sent": 30},
                "drops": {"superseded": 0, "late": 0, "error": 0}, "clientSkips": 0,
                "clients": {"ws": 0, "mjpeg": 0}, "frames": {"sent": 0}, "stages": {}, "templates": []}

    def answer(self, path):
        """(status, content type, body) for a GET of `path`."""
        self.requests.append(path)
        if path == "/api/state":
            return 200, "application/json", json.dumps(self._state()).encode()
        if path == "/api/session":
            return 200, "application/json", b'{"signedIn": false, "role": "viewer"}'
        if path == "/api/events":
            return 200, "application/json", json.dumps({"events": self.events}).encode()
        for item in self.events:
            base = f"/api/events/{item['id']}"
            if path == base:
                return 200, "application/json", json.dumps({"event": item}).encode()
            if path in (base + "/snapshot.jpg", base + "/crop.jpg"):
                return 200, "image/jpeg", self.snapshot
            if path == base + "/clip.mp4":
                if item["id"] == self.ids["broken-clip"] or "clip" not in item:
                    return 404, "application/json", b'{"error": "no clip", "detail": "this event has no clip"}'
                return 200, "video/mp4", self.clip_bytes
        if path.startswith("/api/"):
            return 200, "application/json", b"[]"
        name = "index.html" if path == "/" else path.lstrip("/")
        file = (WEB_ROOT / name).resolve()
        if WEB_ROOT.resolve() not in file.parents or not file.is_file():
            return 404, "text/plain", b"not found"
        content_type = "text/javascript" if file.suffix == ".js" else mimetypes.guess_type(file.name)[0]
        return 200, content_type or "application/octet-stream", file.read_bytes()

    def start(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                status, content_type, body = server.answer(urlsplit(self.path).path)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Security-Policy", CSP)
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(5)
        self.work.cleanup()
