"""Clients that leave a stream of a camera without signal leave nothing behind (issue 38,
item 2): 200 MJPEG viewers of `/stream.mjpg` and `/cam/NAME/stream.mjpg` that send their
request and go 0.2 s later used to leave 200 sockets in CLOSE-WAIT and the service thread
(`sightline.lws`, shown as `lws`) at a full core, since libwebsockets 4.1 does not read a
socket whose answer is still being written and a stream with no frames writes nothing.
WebSocket viewers that leave the same way are checked too.

Sockets are read from /proc/net/tcp (the server's port, state 08 = CLOSE-WAIT), the thread's
CPU time from /proc/PID/task/TID/stat. Everything on 127.0.0.1; every loop bounded."""

import base64
import json
import os
import socket
import time

import pytest

from conftest import HOST, http_get

DEPARTURES = 200
BATCH = 10               # clients at a time (under the 16 unfinished connections an address may have)
CLOSE_WAIT = "08"
SETTLE_S = 5.0           # the server has this long to close what the clients left
IDLE_SHARE = 0.10        # the service thread may use at most this share of a core ...
IDLE_WINDOW_S = 1.0      # ... over this window once the clients are gone (a spinning one takes all of it)


def close_wait_sockets(port: int) -> int:
    """Sockets of the server's listening port in CLOSE-WAIT (the peer's FIN unanswered)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == CLOSE_WAIT:
                count += 1
    return count


def service_thread_ticks(pid: int) -> int:
    """utime + stime (clock ticks) of the server's libwebsockets service thread."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name in ("lws", "sightline.lws"):
            fields = stat[stat.rindex(")") + 2:].split()
            return int(fields[11]) + int(fields[12])
    raise AssertionError(f"no sightline.lws thread in /proc/{pid}/task")


def service_thread_share(pid: int, window: float = IDLE_WINDOW_S) -> float:
    """The share of one core the service thread used over `window` seconds."""
    before = service_thread_ticks(pid)
    start = time.monotonic()
    time.sleep(window)
    used = (service_thread_ticks(pid) - before) / os.sysconf("SC_CLK_TCK")
    return used / (time.monotonic() - start)


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def leave_quickly(port: int, requests: list[bytes], stay: float = 0.2) -> list[bytes]:
    """Opens one connection per request and sends it, reads what comes for `stay` seconds,
    then closes them all (as many `curl --max-time 0.2` at once). What each got, in order."""
    sockets, got = [], []
    try:
        for request in requests:
            s = socket.create_connection((HOST, port), timeout=5)
            sockets.append(s)
            s.sendall(request)
            got.append(b"")
        deadline = time.monotonic() + stay
        for i, s in enumerate(sockets):
            while time.monotonic() < deadline and len(got[i]) < 65536:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    chunk = s.recv(4096)
                except (socket.timeout, OSError):
                    break
                if not chunk:
                    break
                got[i] += chunk
                if b"\r\n\r\n" in got[i]:
                    break
        time.sleep(max(0.0, deadline - time.monotonic()))
    finally:
        for s in sockets:
            s.close()
    return got


def depart(port: int, make_request, count: int = DEPARTURES, batch: int = BATCH) -> list[bytes]:
    """`count` clients that each send `make_request(i)` and leave 0.2 s later, `batch` at a time."""
    answers = []
    for first in range(0, count, batch):
        answers += leave_quickly(port, [make_request(i) for i in range(first, min(count, first + batch))])
    return answers


def settled(server, baseline_fds: int):
    """Waits (bounded) for no CLOSE-WAIT socket on the port; then the service thread's share of a core."""
    deadline = time.monotonic() + SETTLE_S
    left = close_wait_sockets(server.port)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = close_wait_sockets(server.port)
    share = service_thread_share(server.pid)
    return left, share, fds(server.pid) - baseline_fds


@pytest.fixture
def no_signal(sightline):
    server = sightline(source="file:/nonexistent.avi")
    state = server.state()
    assert state["source"]["state"] != "live", f"the source should have no signal: {state['source']}"
    return server


def test_mjpeg_viewers_leaving_a_camera_without_signal_leave_no_socket_and_no_spinning_thread(no_signal):
    server = no_signal
    status, _, body = http_get(server.port, "/api/cameras")
    assert status == 200, body
    name = json.loads(body)["cameras"][0]["name"]
    baseline = fds(server.pid)
    paths = ["/stream.mjpg", f"/cam/{name}/stream.mjpg"]
    heads = depart(server.port, lambda i: f"GET {paths[i % 2]} HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n\r\n".encode())
    for path, head in zip(paths, heads):
        assert head.startswith(b"HTTP/1.1 200") and b"multipart/x-mixed-replace" in head, (path, head[:300])
    left, share, extra_fds = settled(server, baseline)
    assert left == 0, (f"{left} sockets still in CLOSE-WAIT {SETTLE_S:.0f} s after {DEPARTURES} MJPEG clients left "
                       f"({extra_fds} more fds than before)")
    assert share < IDLE_SHARE, (f"the service thread used {share:.0%} of a core over {IDLE_WINDOW_S:.0f} s "
                                f"after the clients left (at most {IDLE_SHARE:.0%})")
    assert extra_fds <= 2, f"{extra_fds} more file descriptors than before the clients came"
    # And a new viewer is still served its stream's head.
    head, = leave_quickly(server.port, [f"GET /stream.mjpg HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n\r\n".encode()], 1.0)
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    server.assert_alive()


def test_websocket_viewers_leaving_a_camera_without_signal_leave_no_socket_and_no_spinning_thread(no_signal):
    server = no_signal
    baseline = fds(server.pid)
    def upgrade(_):
        key = base64.b64encode(os.urandom(16)).decode()
        return (f"GET /ws HTTP/1.1\r\nHost: {HOST}:{server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    answers = depart(server.port, upgrade, DEPARTURES // 2)
    assert answers[0].startswith(b"HTTP/1.1 101"), answers[0][:300]
    left, share, extra_fds = settled(server, baseline)
    assert left == 0, f"{left} sockets still in CLOSE-WAIT after {DEPARTURES // 2} WebSocket viewers left"
    assert share < IDLE_SHARE, f"the service thread used {share:.0%} of a core after the viewers left"
    assert extra_fds <= 2, f"{extra_fds} more file descriptors than before the viewers came"


def test_mjpeg_viewers_that_leave_a_live_stream_are_closed_and_uncounted(sightline):
    """With frames flowing, departed MJPEG viewers are closed too, and /api/state stops counting them."""
    server = sightline(source="demo")
    server.wait_live()
    baseline = fds(server.pid)
    depart(server.port, lambda _: f"GET /stream.mjpg HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n\r\n".encode(), 20)
    left, _, extra_fds = settled(server, baseline)
    assert left == 0, f"{left} sockets in CLOSE-WAIT"
    deadline = time.monotonic() + SETTLE_S
    clients = server.state().get("clients", {})
    while time.monotonic() < deadline and clients.get("mjpeg") != 0:
        time.sleep(0.2)
        clients = server.state().get("clients", {})
    assert clients.get("mjpeg") == 0, f"MJPEG viewers still counted: {clients}"
