"""HTTP/1.1 only: a request asking to upgrade to HTTP/2 (h2c) gets a plain HTTP/1.x answer."""

import json
import socket
import time

from conftest import HOST


def raw_request(port: int, request: bytes, limit: int = 1 << 20) -> bytes:
    with socket.create_connection((HOST, port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        deadline = time.time() + 10
        while time.time() < deadline and len(data) < limit:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def test_h2c_upgrade_is_answered_over_http1(sightline):
    server = sightline("--no-faces", source="demo")
    server.wait_live()
    answer = raw_request(server.port, (
        "GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n").encode())
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.") and b" 200" in status_line, status_line
    assert b"101" not in status_line
    head, body = answer.split(b"\r\n\r\n", 1)
    assert body.startswith(b"{") and b'"fps"' in body, body[:200]
    assert "faces" not in json.loads(body), "faces are off, so /api/state has no faces block"
    # Without a GET to answer, the upgrade is refused plainly.
    answer = raw_request(server.port, (
        "POST /api/templates?name=x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Length: 0\r\n\r\n").encode())
    assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == b"400", answer[:200]
