"""Idle connections from one address cannot lock others out: while 1000 connections
from 127.0.0.1 sit idle (and are reopened as the server closes them), a viewer from
127.0.0.2 connects within a second and gets frames, and an admin upload from
127.0.0.3 succeeds."""

import io
import json
import socket
import time

from conftest import HOST, TOKEN, http_get

IDLE = 1000


def from_address(source: str, port: int, timeout=5.0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((HOST, port))
    return s


def keep_idle(port, sockets, until):
    """Reopens idle connections the server closed, until `until` (bounded)."""
    while time.monotonic() < until:
        for i, s in enumerate(sockets):
            if s is None:
                try:
                    sockets[i] = from_address("127.0.0.1", port, timeout=0.2)
                except OSError:
                    sockets[i] = None
        time.sleep(0.05)


def test_idle_connections_from_one_address_do_not_lock_out_others(sightline):
    from websockets.sync.client import connect
    server = sightline(source="demo")
    server.wait_live()
    idle = []
    try:
        for _ in range(IDLE):
            try:
                idle.append(from_address("127.0.0.1", server.port, timeout=0.5))
            except OSError:
                idle.append(None)
        time.sleep(0.3)
        # A viewer from another address: connected within a second, then frames.
        start = time.monotonic()
        sock = from_address("127.0.0.2", server.port)
        with connect(f"ws://{HOST}:{server.port}/ws", sock=sock, open_timeout=5, max_size=16 << 20) as ws:
            opened = time.monotonic() - start
            first = ws.recv(timeout=5)
            assert json.loads(first)["type"] == "frame"
            assert isinstance(ws.recv(timeout=5), bytes)
            keep_idle(server.port, idle, time.monotonic() + 1.0)
            frames = 0
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                if isinstance(ws.recv(timeout=5), bytes):
                    frames += 1
        assert opened < 1.0, f"the viewer waited {opened:.2f} s to connect"
        assert frames >= 20, f"{frames} frames in 2 s"

        # An admin upload from a third address.
        from PIL import Image
        image = Image.effect_noise((64, 48), 50).convert("RGB")
        png = io.BytesIO()
        image.save(png, "PNG")
        body = png.getvalue()
        upload = from_address("127.0.0.3", server.port)
        upload.sendall((f"POST /api/templates?name=during HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
                       + body)
        answer = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            chunk = upload.recv(4096)
            if not chunk:
                break
            answer += chunk
        upload.close()
        assert answer.startswith(b"HTTP/1.1 201"), answer[:200]
        # 127.0.0.1 itself is held to its 16 unfinished connections: the rest were closed at once.
        probe = from_address("127.0.0.4", server.port)
        probe.sendall(f"GET /metrics HTTP/1.1\r\nHost: {HOST}:{server.port}\r\nConnection: close\r\n\r\n".encode())
        metrics = b""
        while (chunk := probe.recv(65536)):
            metrics += chunk
        probe.close()
        refused = [line for line in metrics.decode().splitlines() if line.startswith("sightline_connections_refused_total ")]
        assert refused and float(refused[0].split()[1]) >= IDLE - 16 - 10, refused
    finally:
        for s in idle:
            if s is not None:
                s.close()


def test_requests_libwebsockets_cannot_parse_never_lock_their_address_out(sightline):
    """lws closes a request with a NUL in its path, or headers past its buffer, by itself;
    each used to keep one of the address's 16 unfinished places for good (found by fuzzing)."""
    server = sightline()
    bad = [b"GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n",
           b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: c=" + b"c" * 20000 + b"\r\n\r\n"]
    for raw_request in bad:
        for _ in range(40):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                try:
                    s.sendall(raw_request)
                    s.shutdown(socket.SHUT_WR)
                    s.recv(100)
                except OSError:
                    pass
        status, _, _ = http_get(server.port, "/api/state")
        assert status == 200, f"after 40 of {raw_request[:16]!r} the address is locked out"
