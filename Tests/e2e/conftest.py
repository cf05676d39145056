"""End-to-end fixtures for Sightline: start the real server binary on a loopback port.

Everything here talks to 127.0.0.1 only, and every wait/read loop is bounded both in
count and in time, so a hung or broken server makes a test fail, never hang.

Run:  pip install -r Tests/requirements.txt && python3 -m pytest Tests/e2e -v

Environment (Tests/support/sightline_paths.py):
  SIGHTLINE_BIN        server binary (default <repo>/.build/release/sightline)
  SIGHTLINE_TEST_DATA  shared test data (default <repo>/../shared/testdata)
  SIGHTLINE_MODELS     face models (default <repo>/../shared/models)

Test modules import the helpers below with `from conftest import ...`, which works with
pytest's default (prepend) import mode; this directory has no __init__.py on purpose.
pytest.ini puts Tests/support, Tests/e2e, Tests/browser and Tests/web on the import path.
On failure the server's command line and stderr tail are attached to the report.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import io
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from sightline_paths import DEFAULT_BIN, DEFAULT_TEST_DATA, REPO, TEST_DATA, WEB_ROOT, YUNET, server_binary, \
    yunet_model  # noqa: F401  (names the test modules import from here)

HOST = "127.0.0.1"
TOKEN = "e2e-test-token-0123456789abcdef"

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CLEAN_EXIT_CODES = (0, -signal.SIGTERM)
MAX_HTTP_BODY = 32 * 1024 * 1024
WS_MAX_MESSAGE = 16 * 1024 * 1024


# --------------------------------------------------------------------------- helpers


def wait_until(check, timeout: float = 15.0, interval: float = 0.1, what: str = "the condition"):
    """Calls `check()` until it returns something truthy, which is returned; fails after `timeout`
    seconds, naming `what` and the last value. For waiting on an event instead of sleeping."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            pytest.fail(f"{what} not reached within {timeout:.0f} s; last: {str(last)[:600]}")
        time.sleep(interval)


def accept_queue(port: int) -> int | None:
    """Connections on 127.0.0.1:`port` that the kernel completed but the server has not yet
    accepted (the listening socket's rx_queue in /proc/net/tcp); None if nothing listens there."""
    try:
        lines = open("/proc/net/tcp").read().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A = LISTEN
            return int(fields[4].split(":")[1], 16)
    return None


def wait_accepted(port: int, timeout: float = 10.0) -> None:
    """Waits until the server has accepted every connection made to it so far (its listening
    socket's accept queue is empty), e.g. before a test relies on it counting them."""
    wait_until(lambda: accept_queue(port) == 0, timeout=timeout, interval=0.02,
               what=f"the server accepting every connection queued on port {port}")


def stream_window(server, seconds: float, timeout: float = 30.0) -> dict:
    """A window measured in the stream, not the wall clock: waits until the server has processed
    `seconds` worth of frames more (at its source's fps) and returns that /api/state. For a test
    that shows something does NOT happen while the stream goes on (a loaded machine slows the
    stream, and a wall-clock window would then see less of it)."""
    start = server.state()
    fps = start.get("source", {}).get("fps") or 30
    frames = max(1, round(seconds * fps))
    begun = start["frames"]["processed"]
    return server.wait_state(lambda s: s["frames"]["processed"] >= begun + frames, timeout=timeout,
                             what=f"{frames} frames more processed ({seconds} s of the stream at {fps} fps)")


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tail(path: Path, limit: int = 8000) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    text = data[-limit:].decode("utf-8", "replace")
    return ("...\n" if len(data) > limit else "") + text


def iou(a: dict, b: dict) -> float:
    """Intersection over union of two {x, y, w, h} boxes."""
    ax2, ay2 = a["x"] + a["w"], a["y"] + a["h"]
    bx2, by2 = b["x"] + b["w"], b["y"] + b["h"]
    iw = max(0.0, min(ax2, bx2) - max(a["x"], b["x"]))
    ih = max(0.0, min(ay2, by2) - max(a["y"], b["y"]))
    inter = iw * ih
    union = a["w"] * a["h"] + b["w"] * b["h"] - inter
    return inter / union if union > 0 else 0.0


def best_detection(meta: dict, label: str, kind: str = "template"):
    """The highest-scoring detection of `kind` with `label` in a frame's JSON, or None."""
    found = [d for d in meta.get("detections", [])
             if d.get("kind") == kind and d.get("label") == label]
    if not found:
        return None
    return max(found, key=lambda d: d.get("score", 0.0))


def decode_jpeg(data: bytes):
    """Decode a JPEG with Pillow (fully, not just the header); returns the image."""
    from PIL import Image

    assert data[:2] == b"\xff\xd8", f"not a JPEG (starts with {data[:8]!r})"
    img = Image.open(io.BytesIO(data))
    assert img.format == "JPEG", f"Pillow says format {img.format}"
    img.load()
    return img


_CAMERA_LABEL = re.compile(r'camera="(?:[^"\\\n]|\\.)*",?')


def without_camera(line: str) -> str:
    """A /metrics sample line with its `camera` label (every camera's series has one, first)
    left out: a one-camera server's lines as the tests name them, `name{other="labels"} value`."""
    return _CAMERA_LABEL.sub("", line, count=1).replace("{}", "")


def metric(text: str, name: str, labels: str = "") -> float:
    """The value of `name` with exactly `labels` (`'{a="b"}'`, besides `camera`) in /metrics `text`."""
    for line in text.splitlines():
        line = without_camera(line)
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name}{labels} not in /metrics")


def http_get(port: int, path: str, timeout: float = 10.0, headers: dict | None = None,
             method: str = "GET", body: bytes | None = None):
    """(status, headers{lower: value}, body) for a request to the server. Bounded read."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read(MAX_HTTP_BODY + 1)
        assert len(data) <= MAX_HTTP_BODY, f"{path}: body larger than {MAX_HTTP_BODY} bytes"
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


ADMIN = {"authorization": f"Bearer {TOKEN}"}


def admin_request(server, method: str, path: str, body=None, headers=None, timeout: float = 10.0):
    """(status, JSON answer, or the raw body when it is not JSON) for a request with the admin
    token (or `headers`); `body` is bytes as they are, or an object sent as JSON."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    status, _, answer = http_get(server.port, path, method=method, body=data,
                                 headers=ADMIN if headers is None else headers, timeout=timeout)
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, answer


def raw_http_get(port: int, raw_path: str, timeout: float = 10.0, max_bytes: int = 4 * 1024 * 1024):
    """Send `GET <raw_path>` byte for byte (no client-side normalisation) and read the
    response until the connection closes, Content-Length is satisfied, `max_bytes` or
    `timeout`. Returns (status, headers{lower: value}, body)."""
    deadline = time.monotonic() + timeout
    req = (f"GET {raw_path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
           f"Connection: close\r\nUser-Agent: sightline-e2e\r\n\r\n").encode("latin-1")
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(req)
        buf = b""
        head_end = -1
        length = None
        while len(buf) < max_bytes and time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
            if head_end < 0:
                head_end = buf.find(b"\r\n\r\n")
                if head_end >= 0:
                    for line in buf[:head_end].split(b"\r\n")[1:]:
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length":
                            length = int(v.strip())
            if head_end >= 0 and length is not None and len(buf) - head_end - 4 >= length:
                break
    assert head_end >= 0, f"GET {raw_path}: no complete HTTP response header, got {buf[:200]!r}"
    lines = buf[:head_end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    assert len(parts) >= 2 and parts[0].startswith("HTTP/"), f"bad status line {lines[0]!r}"
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    body = buf[head_end + 4:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return int(parts[1]), headers, body


def dechunk(data: bytes) -> bytes:
    """Decode a (possibly truncated) chunked body."""
    out = b""
    pos = 0
    for _ in range(100000):
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            break
        size = int(data[pos:eol].split(b";")[0].strip() or b"0", 16)
        if size == 0:
            break
        out += data[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2
    return out


class StreamReader:
    """Bounded incremental reader over a socket; decodes chunked transfer coding."""

    def __init__(self, sock: socket.socket, deadline: float, max_bytes: int):
        self.sock = sock
        self.deadline = deadline
        self.max_bytes = max_bytes
        self.total = 0
        self.raw = b""
        self.buf = b""
        self.chunked = False

    def _fill_raw(self) -> None:
        remaining = self.deadline - time.monotonic()
        assert remaining > 0, "timed out reading the stream"
        assert self.total < self.max_bytes, f"read more than {self.max_bytes} bytes without finding what we need"
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        assert chunk, "server closed the stream"
        self.total += len(chunk)
        self.raw += chunk

    def _fill(self) -> None:
        if not self.chunked:
            self._fill_raw()
            self.buf += self.raw
            self.raw = b""
            return
        for _ in range(10000):
            eol = self.raw.find(b"\r\n")
            if eol >= 0:
                size = int(self.raw[:eol].split(b";")[0].strip() or b"0", 16)
                assert size > 0, "chunked stream ended"
                if len(self.raw) >= eol + 2 + size + 2:
                    self.buf += self.raw[eol + 2:eol + 2 + size]
                    self.raw = self.raw[eol + 2 + size + 2:]
                    return
            self._fill_raw()

    def read_until(self, marker: bytes) -> bytes:
        """Bytes up to and including `marker`."""
        for _ in range(100000):
            i = self.buf.find(marker)
            if i >= 0:
                out, self.buf = self.buf[:i + len(marker)], self.buf[i + len(marker):]
                return out
            self._fill()
        raise AssertionError(f"marker {marker!r} not found")

    def read_exact(self, n: int) -> bytes:
        for _ in range(100000):
            if len(self.buf) >= n:
                out, self.buf = self.buf[:n], self.buf[n:]
                return out
            self._fill()
        raise AssertionError(f"could not read {n} bytes")


def read_mjpeg_parts(port: int, path: str, nparts: int = 2, timeout: float = 15.0,
                     max_bytes: int = 16 * 1024 * 1024):
    """Open a multipart MJPEG stream, read `nparts` parts (bounded), and close it.
    Returns (status, headers, boundary, [(part_headers, jpeg_bytes), ...])."""
    deadline = time.monotonic() + timeout
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall((f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
                   f"User-Agent: sightline-e2e\r\nAccept: */*\r\n\r\n").encode("latin-1"))
        r = StreamReader(s, deadline, max_bytes)
        head = r.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip():
                headers[k.strip().lower()] = v.strip()
        if status != 200:
            return status, headers, None, []
        r.chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        r.buf, r.raw = (b"", r.buf) if r.chunked else (r.buf, b"")
        ctype = headers.get("content-type", "")
        boundary = None
        for param in ctype.split(";")[1:]:
            k, _, v = param.strip().partition("=")
            if k.strip().lower() == "boundary":
                boundary = v.strip().strip('"')
        assert boundary, f"{path}: no boundary in Content-Type {ctype!r}"
        delim = b"--" + boundary.encode("latin-1")
        parts = []
        for _ in range(nparts):
            r.read_until(delim)
            part_head = r.read_until(b"\r\n\r\n").decode("latin-1")
            ph = {}
            for line in part_head.split("\r\n"):
                k, _, v = line.partition(":")
                if k.strip() and v:
                    ph[k.strip().lower()] = v.strip()
            if "content-length" in ph:
                n = int(ph["content-length"])
                assert 0 < n <= max_bytes, f"{path}: implausible part Content-Length {n}"
                jpeg = r.read_exact(n)
            else:
                jpeg = r.read_until(b"\xff\xd9")
            parts.append((ph, jpeg))
        return status, headers, boundary, parts


def ws_connect(port: int, path: str = "/ws", open_timeout: float = 10.0):
    from websockets.sync.client import connect

    return connect(f"ws://{HOST}:{port}{path}", open_timeout=open_timeout, close_timeout=3,
                   max_size=WS_MAX_MESSAGE, compression=None, proxy=None,
                   user_agent_header="sightline-e2e")


def terminate(process, timeout: float = 10.0) -> None:
    """SIGTERM a helper process (a broker, a relay), then SIGKILL if it has not gone within `timeout`."""
    if process and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)


class FrameLog:
    """What a /ws client received: frame pairs plus any protocol violations."""

    def __init__(self):
        self.pairs = []          # (meta dict, jpeg bytes, t_json, t_binary)  t = time.time()
        self.errors = []         # protocol violations (strings)
        self.other_text = []     # JSON messages with a type other than "frame"
        self.closed = None       # ConnectionClosed exception if the server closed us

    def check_ok(self, who: str = "client") -> None:
        assert not self.errors, f"{who}: protocol errors: {self.errors[:5]}"


PAIR_GRACE_S = 5.0


def receive_frames(ws, log: FrameLog, *, pairs: int | None = None, seconds: float | None = None,
                   timeout: float = 30.0, stop: threading.Event | None = None) -> FrameLog:
    """Receive JSON+JPEG pairs on `ws` into `log` until `pairs` pairs, `seconds` elapsed,
    `stop` is set, or `timeout`. Checks message order: a binary always right after its
    "frame" JSON, a "frame" JSON always followed by its binary."""
    from websockets.exceptions import ConnectionClosed

    start = time.monotonic()
    limit = start + min(timeout, seconds if seconds is not None else timeout)
    # A time or stop limit never cuts a pair in half: the JPEG of a JSON already
    # received is waited for (up to this much longer), so the next call starts clean.
    grace = limit + PAIR_GRACE_S
    pending = None
    for _ in range(1000000):
        now = time.monotonic()
        out_of_time = now >= limit or (stop is not None and stop.is_set())
        if out_of_time and (pending is None or now >= grace):
            break
        if pairs is not None and len(log.pairs) >= pairs:
            break
        try:
            msg = ws.recv(timeout=min(1.0, max(0.01, (grace if out_of_time else limit) - now)))
        except TimeoutError:
            continue
        except ConnectionClosed as e:
            log.closed = e
            break
        t = time.time()
        if isinstance(msg, str):
            try:
                meta = json.loads(msg)
            except ValueError as e:
                log.errors.append(f"text message is not JSON ({e}): {msg[:120]!r}")
                continue
            if not isinstance(meta, dict):
                log.errors.append(f"JSON message is not an object: {msg[:120]!r}")
                continue
            if pending is not None:
                log.errors.append(f"JSON seq={pending[0].get('seq')} not followed by its JPEG "
                                  f"(next text: {msg[:120]!r})")
                pending = None
            if meta.get("type") == "frame":
                pending = (meta, t)
            else:
                log.other_text.append(meta)
        else:
            if pending is None:
                log.errors.append(f"binary message of {len(msg)} bytes without a preceding frame JSON")
                continue
            log.pairs.append((pending[0], bytes(msg), pending[1], t))
            pending = None
    return log


def check_frame_pairs(log: FrameLog, who: str = "client") -> None:
    """The per-pair checks every stream test makes: type, seq order, jpegBytes, decode size."""
    log.check_ok(who)
    last_seq = None
    for meta, jpeg, _, _ in log.pairs:
        assert meta.get("type") == "frame"
        for key in ("seq", "capturedAt", "width", "height", "jpegBytes", "detections"):
            assert key in meta, f"{who}: frame JSON lacks {key!r}: {str(meta)[:300]}"
        seq = meta["seq"]
        assert isinstance(seq, int), f"{who}: seq {seq!r} is not an integer"
        if last_seq is not None:
            assert seq > last_seq, f"{who}: seq not strictly increasing: {last_seq} then {seq}"
        last_seq = seq
        assert meta["jpegBytes"] == len(jpeg), \
            f"{who}: seq {seq}: jpegBytes={meta['jpegBytes']} but binary is {len(jpeg)} bytes"
        img = decode_jpeg(jpeg)
        if img.size != (meta["width"], meta["height"]):
            # A frame wider than video.jpegMaxWidth is streamed scaled down, proportions kept;
            # the JSON says the full picture's size (boxes are normalized).
            w, h = img.size
            assert w < meta["width"] and abs(h - meta["height"] * w / meta["width"]) <= 1, \
                f"{who}: seq {seq}: JPEG decodes to {img.size}, JSON says {meta['width']}x{meta['height']}"
        assert isinstance(meta["detections"], list)
        for d in meta["detections"]:
            box = d.get("box")
            assert isinstance(box, dict), f"{who}: seq {seq}: detection without box: {d}"
            eps = 1e-3
            for k in ("x", "y", "w", "h"):
                assert -eps <= box[k] <= 1 + eps, f"{who}: seq {seq}: box not normalized: {d}"
            assert box["x"] + box["w"] <= 1 + eps and box["y"] + box["h"] <= 1 + eps, \
                f"{who}: seq {seq}: box extends past the frame: {d}"


def frames_of(server, path: str, pairs: int) -> FrameLog:
    """`pairs` frames from a WebSocket on `path` (within 30 s), each pair checked."""
    log = FrameLog()
    with ws_connect(server.port, path) as ws:
        receive_frames(ws, log, pairs=pairs, timeout=30)
    check_frame_pairs(log, path)
    assert len(log.pairs) >= pairs, f"{path}: {len(log.pairs)} frames of {pairs}"
    return log


def ws_handshake_raw(port: int, path: str = "/ws", rcvbuf: int = 4096, timeout: float = 10.0):
    """Open a WebSocket by hand on a raw socket with a tiny receive buffer and return the
    socket after the 101 response. The caller then never reads from it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect((HOST, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in buf and time.monotonic() < deadline and len(buf) < 65536:
        chunk = s.recv(1)  # byte by byte: leave any frame bytes in the kernel buffer
        if not chunk:
            break
        buf += chunk
    status_line = buf.split(b"\r\n", 1)[0]
    assert b" 101 " in status_line + b" ", f"raw WebSocket handshake failed: {buf[:300]!r}"
    return s


# --------------------------------------------------------------------------- server


class Server:
    """One running `sightline serve` process."""

    def __init__(self, args, env, workdir: Path, port: int, data_dir: Path, web_root: Path, cwd: Path):
        self.args = args
        self.port = port
        self.data_dir = data_dir
        self.web_root = web_root
        self.workdir = workdir
        self.cwd = cwd
        self.stdout_path = workdir / "stdout.log"
        self.stderr_path = workdir / "stderr.log"
        self._out = open(self.stdout_path, "wb")
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err, cwd=str(cwd))
        self.stopped = False
        self.stop_problem = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{HOST}:{self.port}/ws"

    def stderr_tail(self, limit: int = 8000) -> str:
        return tail(self.stderr_path, limit)

    def describe(self) -> str:
        return (f"command: {' '.join(map(str, self.args))}\ncwd: {self.cwd}\nexit code: {self.proc.poll()}\n"
                f"--- server stderr (tail) ---\n{self.stderr_tail()}")

    def wait_bound(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Reads the port the server bound (started with --port 0) from its log."""
        import re
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(rb"url=https?://[^ ]*:(\d+)/", self.stderr_path.read_bytes())
            if found:
                self.port = int(found.group(1))
                return
            if self.proc.poll() is not None:
                self.stop()
                self.stop_problem = None  # reported here, not again at teardown
                pytest.fail(f"server exited before it was listening\n{self.describe()}")
            time.sleep(0.05)
        self.stop()
        self.stop_problem = None
        pytest.fail(f"server did not say its port within {timeout:.0f} s\n{self.describe()}")

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                self.stop_problem = None  # reported here, not again at teardown
                pytest.fail(f"server exited before it was ready\n{self.describe()}")
            try:
                status, _, _ = http_get(self.port, "/api/state", timeout=2.0)
                if status == 200:
                    return
                last = f"HTTP {status}"
            except (OSError, http.client.HTTPException) as e:
                last = repr(e)
            time.sleep(0.1)
        self.stop()
        self.stop_problem = None
        pytest.fail(f"server not ready within {timeout:.0f} s (last: {last})\n{self.describe()}")

    def wait_live(self, timeout: float = 15.0) -> dict:
        """Poll /api/state until the source is live and frames have been processed."""
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = self.state()
            if (state.get("source", {}).get("state") == "live"
                    and state.get("frames", {}).get("processed", 0) > 0):
                return state
            time.sleep(0.2)
        pytest.fail(f"source not live with processed frames within {timeout:.0f} s; last state: {state}")

    def wait_state(self, ready, timeout: float = 15.0, what: str = "the state") -> dict:
        """Polls /api/state until `ready(state)` is true and returns that state; fails after
        `timeout` with the last one. Waits on the server's own counters instead of sleeping."""
        found = {}

        def check():
            found["state"] = self.state()
            return ready(found["state"])

        try:
            wait_until(check, timeout=timeout, interval=0.1, what=what)
        except pytest.fail.Exception:
            pytest.fail(f"{what} not reached within {timeout:.0f} s; last /api/state: {found.get('state')}")
        return found["state"]

    def summary(self) -> str:
        """A compact view of the server's counters for failure messages."""
        try:
            st = self.state()
            keys = ("source", "fps", "frames", "drops", "clientSkips", "clients", "latency")
            return json.dumps({k: st.get(k) for k in keys}) + f"; load average {os.getloadavg()}"
        except Exception as e:  # noqa: BLE001 - diagnostics only
            return f"<no /api/state: {e!r}; alive={self.alive()}>"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def assert_alive(self) -> None:
        assert self.alive(), f"server died\n{self.describe()}"

    def get(self, path: str, **kw):
        return http_get(self.port, path, **kw)

    def state(self, admin: bool = False) -> dict:
        """/api/state as a viewer, or as an admin (full source specs)."""
        headers = {"Authorization": f"Bearer {TOKEN}"} if admin else None
        status, headers, body = http_get(self.port, "/api/state", timeout=5.0, headers=headers)
        assert status == 200, f"/api/state -> {status}: {body[:300]!r}"
        try:
            return json.loads(body)
        except ValueError as e:
            raise AssertionError(f"/api/state is not JSON ({e}): {body[:300]!r}")

    def rss_kib(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS in /proc status")

    def ws(self, path: str = "/ws"):
        return ws_connect(self.port, path)

    def kill(self) -> None:
        """SIGKILL on purpose (a crash the test makes): teardown expects it."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.stopped = True
        self.stop_problem = None
        self._out.close()
        self._err.close()

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S. Returns a problem string or None."""
        if self.stopped:
            return self.stop_problem
        self.stopped = True
        problem = None
        rc = self.proc.poll()
        if rc is not None:
            problem = f"server had already exited with code {rc} before teardown (crash?)"
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait(timeout=10)
                problem = f"server did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM; killed"
        if problem is None and rc not in CLEAN_EXIT_CODES:
            problem = f"server exited with code {rc} on SIGTERM (expected 0 or -15)"
        self._out.close()
        self._err.close()
        self.stop_problem = problem and f"{problem}\n{self.describe()}"
        return self.stop_problem

    def stop_checked(self) -> None:
        """Stop now and fail the test if the server crashed or did not stop cleanly."""
        problem = self.stop()
        if problem:
            pytest.fail(problem)


class ServerFactory:
    """`sightline(*extra_args, web_root=..., env=...)` starts a server and waits for it."""

    def __init__(self, tmp_path: Path, binary: Path, clips: bool = False):
        self.tmp_path = tmp_path
        self.binary = binary
        self.clips = clips
        self.servers = []

    def __call__(self, *extra_args, source: str | None = "demo", web_root: Path | None = None,
                 env: dict | None = None, wait: bool = True, cwd: Path | None = None) -> Server:
        """Start `sightline serve`; the working directory is the repository unless `cwd`."""
        n = len(self.servers)
        workdir = self.tmp_path / f"server{n}"
        workdir.mkdir(parents=True, exist_ok=True)
        data_dir = workdir / "data"
        web_root = Path(web_root) if web_root is not None else WEB_ROOT
        # Port 0: the server binds a free port itself and logs it, so no other
        # process can take the port between choosing it and binding it.
        args = [str(self.binary), "serve", "--host", HOST, "--port", "0",
                "--data-dir", str(data_dir), "--web-root", str(web_root)]
        if source is not None:
            args += ["--source", source]
        args += [str(a) for a in extra_args]
        # Event clips' pre-capture encodes every frame all the time (a fifth of a core on the demo);
        # a server under test keeps none unless its module watches clips (SERVER_CLIPS = True).
        if not self.clips and "--no-clips" not in args:
            args.append("--no-clips")
        full_env = dict(os.environ)
        full_env["SIGHTLINE_TOKEN"] = TOKEN
        full_env.update(env or {})
        server = Server(args, full_env, workdir, 0, data_dir, web_root, Path(cwd or REPO))
        self.servers.append(server)
        server.wait_bound()
        if wait:
            server.wait_ready()
        return server

    def teardown(self):
        problems = []
        for s in self.servers:
            p = s.stop()
            if p:
                problems.append(p)
        return problems


# --------------------------------------------------------------------------- a full disk


@contextlib.contextmanager
def small_tmpfs(disk: Path, megabytes: int):
    """A `megabytes` MiB tmpfs mounted on the fresh directory `disk` (as root), unmounted
    afterwards; skips the test, saying why, where one cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root to mount a small tmpfs (mount -t tmpfs -o size={megabytes}m tmpfs DIR) for a full disk")
    disk.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(disk)],
                             capture_output=True, text=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (mount said: {mounted.stderr.strip() or mounted.returncode}); "
                    "this test needs a small disk to fill")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def fill_disk(disk: Path, block: str = "64k") -> Path:
    """Writes zeros until the disk is full (dd stops at ENOSPC); returns the filler file."""
    filler = disk / "filler"
    done = subprocess.run(["dd", "if=/dev/zero", f"of={filler}", f"bs={block}"], capture_output=True, text=True,
                          timeout=60)
    assert "No space left on device" in done.stderr, f"dd did not fill the disk: {done.stderr}"
    return filler


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def sightline(tmp_path, request):
    """Factory: `server = sightline("--template", "x.png=x", source="demo")`.
    Servers are stopped at teardown; a crashed or unclean server fails the test. They run with
    `--no-clips` unless the test's module sets `SERVER_CLIPS = True` (the modules about clips,
    recordings and the encoder do; the browser suite runs the defaults)."""
    factory = ServerFactory(tmp_path, server_binary(), clips=getattr(request.module, "SERVER_CLIPS", False))
    request.node._sightline_servers = factory.servers
    yield factory
    problems = factory.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def module_sightline(tmp_path_factory, request):
    """The `sightline` factory for servers that a module's tests share (from a module-scoped
    fixture): for tests that only read from a server, so one start serves them all. Stopped
    after the module's last test; a crashed or unclean server fails that teardown."""
    factory = ServerFactory(tmp_path_factory.mktemp("module-servers"), server_binary(),
                            clips=getattr(request.module, "SERVER_CLIPS", False))
    request.module._sightline_module_servers = factory.servers
    yield factory
    problems = factory.teardown()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach each server's stderr tail to a failing test's report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        servers = getattr(item, "_sightline_servers", []) + getattr(getattr(item, "module", None), "_sightline_module_servers", [])
        for i, s in enumerate(servers):
            report.sections.append((f"sightline server {i} ({report.when})", s.describe()))
