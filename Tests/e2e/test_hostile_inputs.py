"""Every hostile input of the access issue, sent over and over for a few seconds, gets its
status, while a viewer keeps getting at least 95 % of the frames the server processed."""

import base64
import socket
import threading
import time

from conftest import HOST, TOKEN, FrameLog, receive_frames

WINDOW_S = 6.0
MIN_RATIO = 0.95
ROUNDS = 200  # bound on the hostile loop (it also stops when the window ends)


def exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Sends raw bytes and returns the answer: until its Content-Length is read, the
    server closes, or the timeout."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            return b""
        answer = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(answer) < 65536:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            answer += chunk
            head, found, body = answer.partition(b"\r\n\r\n")
            if found:
                lengths = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")]
                if lengths and len(body) >= lengths[0]:
                    break
        return answer


def status(answer: bytes):
    return int(answer.split(b" ")[1]) if answer.startswith(b"HTTP/1.") else None


def hostile_inputs(port: int):
    """(name, raw request, the status it must get; None: closed without an answer)."""
    own = f"{HOST}:{port}"
    key = base64.b64encode(b"hostile-e2e-key!").decode()
    upgrade = f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    png_header = b"\x89PNG\r\n\x1a\n"
    return [
        ("foreign Origin on /ws", f"GET /ws HTTP/1.1\r\nHost: {own}\r\n{upgrade}Origin: http://evil.example\r\n\r\n", 403),
        ("Origin null on /ws", f"GET /ws HTTP/1.1\r\nHost: {own}\r\n{upgrade}Origin: null\r\n\r\n", 403),
        ("rebinding Host", f"GET /snapshot.jpg HTTP/1.1\r\nHost: evil.example:{port}\r\n\r\n", 421),
        ("foreign Origin change", f"DELETE /api/templates/demo HTTP/1.1\r\nHost: {own}\r\nOrigin: http://evil.example\r\n"
                                  f"Authorization: Bearer {TOKEN}\r\n\r\n", 403),
        ("no credential change", f"DELETE /api/templates/demo HTTP/1.1\r\nHost: {own}\r\n\r\n", 401),
        ("long URL", f"GET /api/state?pad={'a' * 9000} HTTP/1.1\r\nHost: {own}\r\n\r\n", 414),
        ("large headers", f"GET /api/state HTTP/1.1\r\nHost: {own}\r\nCookie: c={'c' * 9000}\r\n\r\n", 431),
        ("no Host", "GET /api/state HTTP/1.1\r\n\r\n", 400),
        ("chunked upload", f"POST /api/templates?name=x HTTP/1.1\r\nHost: {own}\r\nAuthorization: Bearer {TOKEN}\r\n"
                           f"Transfer-Encoding: chunked\r\nContent-Type: image/png\r\n\r\n8\r\n", 411),
        ("broken upload", (f"POST /api/templates?name=x HTTP/1.1\r\nHost: {own}\r\nAuthorization: Bearer {TOKEN}\r\n"
                           f"Content-Type: image/png\r\nContent-Length: 40\r\n\r\n").encode() + png_header + b"\0" * 32, 422),
        ("NUL in the path", f"GET /a\0b HTTP/1.1\r\nHost: {own}\r\n\r\n", None),
        ("headers past 16 KiB", f"GET /api/state HTTP/1.1\r\nHost: {own}\r\nCookie: c={'c' * 20000}\r\n\r\n", None),
        ("garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", None),
    ]


def test_hostile_inputs_get_their_status_and_viewers_keep_the_rate(sightline):
    server = sightline(source="demo?size=640x480&fps=30")
    server.wait_live()
    inputs = hostile_inputs(server.port)
    # Each once, checked, before the load.
    for name, raw, expected in inputs:
        answer = exchange(server.port, raw.encode("latin-1") if isinstance(raw, str) else raw)
        got = status(answer)
        if expected is None:
            assert got is None or 400 <= got < 500, (name, answer[:200])
        else:
            assert got == expected, (name, answer[:300])

    stop = threading.Event()
    sent = [0]
    problems = []

    def attack():
        for _ in range(ROUNDS):
            for name, raw, expected in inputs:
                if stop.is_set():
                    return
                answer = exchange(server.port, raw.encode("latin-1") if isinstance(raw, str) else raw)
                if expected is not None and status(answer) != expected:
                    problems.append((name, answer[:120]))
                sent[0] += 1

    with server.ws() as ws:
        receive_frames(ws, FrameLog(), pairs=10, timeout=20)   # warm up
        before = server.state()["frames"]["processed"]
        attacker = threading.Thread(target=attack, daemon=True)
        attacker.start()
        log = receive_frames(ws, FrameLog(), seconds=WINDOW_S, timeout=WINDOW_S + 10)
        after = server.state()["frames"]["processed"]
        stop.set()
        attacker.join(timeout=30)
    processed = after - before
    assert not problems, problems[:5]
    assert sent[0] >= len(inputs), f"only {sent[0]} hostile requests went out"
    assert processed > 0
    ratio = len(log.pairs) / processed
    assert ratio >= MIN_RATIO, (f"the viewer got {len(log.pairs)} of {processed} processed frames ({ratio:.2f}) "
                                f"while {sent[0]} hostile requests came in")
    print(f"{sent[0]} hostile requests in {WINDOW_S:.0f} s; viewer got {len(log.pairs)} of {processed} processed frames")
