"""A client that never reads must not slow the others down or make the server buffer."""

import contextlib
import os
import threading
import time

from conftest import FrameLog, check_frame_pairs, receive_frames, ws_handshake_raw

FPS = 30
NORMAL_CLIENTS = 3
WARMUP_TIMEOUT_S = 20.0  # the stalled socket's kernel buffers fill: clientSkips starts counting
WINDOW_FRAMES = 120      # the window: this many frames processed (4 s at the source's rate)
WINDOW_TIMEOUT_S = 30.0
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
                                 kwargs={"timeout": WARMUP_TIMEOUT_S + WINDOW_TIMEOUT_S + 15, "stop": stop},
                                 daemon=True)
            t.start()
            threads.append(t)

        # The warm-up ends when the stalled client's buffers are full: the server starts
        # skipping it (its own counter), not after a fixed time.
        server.wait_state(lambda st: st["clientSkips"] > skips_start + 10, timeout=WARMUP_TIMEOUT_S,
                          what="clientSkips counting the stalled client's missed frames")
        server.assert_alive()
        st0 = server.state()
        t0 = time.time()
        rss.append(server.rss_kib())
        clients_ws = st0["clients"]["ws"]
        end = time.monotonic() + WINDOW_TIMEOUT_S
        st1 = st0
        while time.monotonic() < end and st1["frames"]["processed"] - st0["frames"]["processed"] < WINDOW_FRAMES:
            time.sleep(0.25)
            server.assert_alive()
            rss.append(server.rss_kib())
            st1 = server.state()
        t1 = time.time()
        stop.set()
        for t in threads:
            t.join(timeout=5)

    dt = t1 - t0
    processed_fps = (st1["frames"]["processed"] - st0["frames"]["processed"]) / dt
    assert st1["frames"]["processed"] - st0["frames"]["processed"] >= WINDOW_FRAMES, \
        f"the server processed only {st1['frames']['processed'] - st0['frames']['processed']} frames in {dt:.0f} s"
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
        f"server RSS grew by {growth:.1f} MiB in {dt:.0f} s (samples {[round(m, 1) for m in rss_mib]})"

    assert st1["clientSkips"] > skips_start, (
        f"clientSkips did not grow ({skips_start} -> {st1['clientSkips']}) although one client "
        f"never read for {dt:.0f} s and more")
    # While it stays connected, the stalled client (buffers full since the warm-up) gets
    # none of the window's frames, and clientSkips counts "frames a slow client did not get".
    processed = st1["frames"]["processed"] - st0["frames"]["processed"]
    skipped = st1["clientSkips"] - st0["clientSkips"]
    if st1["clients"]["ws"] > NORMAL_CLIENTS:
        assert skipped >= 0.5 * processed, (
            f"clientSkips grew by only {skipped} during the {dt:.0f} s window in which the "
            f"stalled client (still connected: clients {st1['clients']}) could not receive any of "
            f"the {processed} processed frames; bytesSent {st0['bytesSent']} -> {st1['bytesSent']}")
    server.assert_alive()
