"""MJPEG streams last as long as the client wants them: /stream.mjpg and /?action=stream
each watched for 12 s, well past the 5 s at which libwebsockets used to close every stream
(its content timeout, armed after the request), keep coming to the end at the rate they
began with, and ffmpeg (what Home Assistant, OBS and many NVRs use) reads 10 s of it
without an error. The rates are printed; the checks compare the stream with itself."""

import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import HOST

WATCH_S = 12.0
EDGE_S = 4.0     # the first and the last this many seconds are compared
FPS = 20


def count_parts(port: int, path: str, seconds: float, times: list, errors: list) -> None:
    """Reads the stream for `seconds` (bounded), noting when each part's boundary arrived."""
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection((HOST, port), timeout=5) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUser-Agent: e2e-long\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    raise AssertionError(f"{path}: closed before the head")
                head += chunk
            status = head.split(b" ", 2)[1]
            assert status == b"200", head[:200]
            marker = b"--sightlineframe\r\n"
            tail = head[head.index(b"\r\n\r\n") + 4:]
            while time.monotonic() < deadline:
                s.settimeout(max(0.05, min(5.0, deadline - time.monotonic())))
                try:
                    chunk = s.recv(1 << 20)
                except socket.timeout:
                    continue
                if not chunk:
                    errors.append(f"{path}: the server closed the stream after "
                                  f"{WATCH_S - (deadline - time.monotonic()):.1f} s")
                    return
                data = tail + chunk
                now = time.monotonic()
                times.extend([now] * data.count(marker))
                tail = data[-(len(marker) - 1):]  # too short to hold a whole marker: none counted twice
    except Exception as error:  # reported by the test, with the path
        errors.append(f"{path}: {error!r}")


def test_mjpeg_streams_keep_their_rate_past_the_old_5_second_cut_and_ffmpeg_reads_10(sightline):
    server = sightline(source=f"demo?fps={FPS}")
    server.wait_live()
    results = {path: ([], []) for path in ("/stream.mjpg", "/?action=stream")}
    readers = [threading.Thread(target=count_parts, args=(server.port, path, WATCH_S, *results[path]))
               for path in results]
    ffmpeg = shutil.which("ffmpeg")
    decoder = None
    if ffmpeg:
        decoder = subprocess.Popen([ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", "-t", "10",
                                    "-i", f"http://{HOST}:{server.port}/stream.mjpg", "-f", "null", "-"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.monotonic()
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(WATCH_S + 15)
    for path, (times, errors) in results.items():
        assert not errors, errors
        first = [t for t in times if t - started < EDGE_S]
        last = [t for t in times if t - started >= WATCH_S - EDGE_S]
        print(f"{path}: {len(times)} parts in {WATCH_S:.0f} s (the demo makes {FPS} a second), "
              f"{len(first)} in the first {EDGE_S:.0f} s, {len(last)} in the last")
        # Still open and still flowing at the end, as fast as at the start.
        assert first and last, f"{path}: {len(first)} parts in the first {EDGE_S:.0f} s, {len(last)} in the last"
        assert len(last) >= 0.8 * len(first), \
            f"{path}: {len(first)} parts in the first {EDGE_S:.0f} s, {len(last)} in the last"
    server.assert_alive()
    if decoder is None:
        pytest.skip("ffmpeg is not installed (Debian's ffmpeg): the 20 s ffmpeg read was not checked")
    out, err = decoder.communicate(timeout=30)
    assert decoder.returncode == 0, f"ffmpeg exited {decoder.returncode}: {err.decode(errors='replace')[-2000:]}"
    assert not err.strip(), f"ffmpeg reported: {err.decode(errors='replace')[-2000:]}"
