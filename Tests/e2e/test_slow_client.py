"""A client that never reads must not slow the others down or make the server buffer."""

import contextlib
import os
import threading
import time

from conftest import FrameLog, check_frame_pairs, receive_frames, ws_handshake_raw

FPS = 30
NORMAL_CLIENTS = 3
WARMUP_S = 4.0          # long enough for the stalled socket's kernel buffers to fill
WINDOW_S = 8.0
MIN_FPS_RATIO = 0.95
# The server's whole budget with faces on: about 135 MiB before issue 28, plus the
# 68-point landmark model held compact (about 10 MB, Faces/FaceShapeModel.swift).
# The growth bound is what catches frames piling up behind the stalled client.
MAX_RSS_MIB = 165
MAX_RSS_GROWTH_MIB = 20


def test_slow_client_does_not_hold_back_others(sightline):
    server = sightline(source=f"demo?size=640x480&fps={FPS}")
    server.wait_live()
    skips_start = server.state()["clientSkips"]

    stalled = ws_handshake_raw(server.port, rcvbuf=4096)   # never read from again
    stop = threading.Event()
    logs = [FrameLog() for _ in range(NORMAL_CLIENTS)]
    threads = []
    rss = []
    with contextlib.ExitStack() as stack:
        stack.callback(stalled.close)
        for log in logs:
            ws = stack.enter_context(server.ws())
            t = threading.Thread(target=receive_frames, args=(ws, log),
                                 kwargs={"timeout": WARMUP_S + WINDOW_S + 15, "stop": stop},
                                 daemon=True)
            t.start()
            threads.append(t)

        time.sleep(WARMUP_S)
        server.assert_alive()
        st0 = server.state()
        t0 = time.time()
        rss.append(server.rss_kib())
        clients_ws = st0["clients"]["ws"]
        end = time.monotonic() + WINDOW_S
        while time.monotonic() < end:
            time.sleep(0.5)
            server.assert_alive()
            rss.append(server.rss_kib())
        t1 = time.time()
        st1 = server.state()
        stop.set()
        for t in threads:
            t.join(timeout=5)

    dt = t1 - t0
    processed_fps = (st1["frames"]["processed"] - st0["frames"]["processed"]) / dt
    assert processed_fps > 0.5 * FPS, \
        f"server processed only {processed_fps:.1f} fps over the window (source {FPS} fps)"
    report = []
    for i, log in enumerate(logs):
        assert log.closed is None, f"normal client {i} was closed: {log.closed}"
        check_frame_pairs(log, f"normal client {i}")
        got = sum(1 for p in log.pairs if t0 <= p[3] <= t1)
        report.append(round(got / dt, 1))
    for i, fps in enumerate(report):
        assert fps >= MIN_FPS_RATIO * processed_fps, (
            f"normal client {i} received {fps} fps, server processed {processed_fps:.1f} fps "
            f"(all clients: {report}; ws clients at window start: {clients_ws}; "
            f"load average {os.getloadavg()}; server: {server.summary()})")

    rss_mib = [k / 1024 for k in rss]
    print(f"slow-client: processed {processed_fps:.1f} fps, clients {report} fps, "
          f"RSS {rss_mib[0]:.1f}..{max(rss_mib):.1f} MiB, clientSkips {skips_start}->{st1['clientSkips']}")
    assert max(rss_mib) < MAX_RSS_MIB, f"server RSS reached {max(rss_mib):.1f} MiB (samples {rss_mib})"
    growth = max(rss_mib) - rss_mib[0]
    assert growth <= MAX_RSS_GROWTH_MIB, \
        f"server RSS grew by {growth:.1f} MiB in {WINDOW_S:.0f} s (samples {[round(m, 1) for m in rss_mib]})"

    assert st1["clientSkips"] > skips_start, (
        f"clientSkips did not grow ({skips_start} -> {st1['clientSkips']}) although one client "
        f"never read for {WARMUP_S + WINDOW_S:.0f} s")
    # While it stays connected, the stalled client (buffers full since the warm-up) gets
    # none of the window's frames, and clientSkips counts "frames a slow client did not get".
    processed = st1["frames"]["processed"] - st0["frames"]["processed"]
    skipped = st1["clientSkips"] - st0["clientSkips"]
    if st1["clients"]["ws"] > NORMAL_CLIENTS:
        assert skipped >= 0.5 * processed, (
            f"clientSkips grew by only {skipped} during the {WINDOW_S:.0f} s window in which the "
            f"stalled client (still connected: clients {st1['clients']}) could not receive any of "
            f"the {processed} processed frames; bytesSent {st0['bytesSent']} -> {st1['bytesSent']}")
    server.assert_alive()
