#!/usr/bin/env python3
"""Several cameras in one process (issue 29's figure): N demo cameras at 640x480 and 15 fps
(`cameras:`, each its own seed), faces on, one /cam/NAME/ws viewer on each; prints the
whole process's CPU and resident memory, and each camera's processed fps, the fps its
viewer received, its face passes a second and its share of the shared detection thread.

  scripts/camerasbench.py [--cameras 4] [--seconds 30] [--bin .build/release/sightline] [-- SERVE-ARGS...]

Loopback only; the server runs in a temporary data directory and is stopped at the end.
Needs: pip install websockets
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cameras", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30, help="measurement window (at most 600)")
    ap.add_argument("--bin", default=os.environ.get("SIGHTLINE_BIN", str(REPO / ".build/release/sightline")))
    ap.add_argument("serve_args", nargs="*", help="more `serve` flags, after --")
    args = ap.parse_args()
    seconds = min(max(args.seconds, 1), 600)
    work = Path(tempfile.mkdtemp(prefix="sightline-cameras-"))
    config = work / "cameras.yaml"
    config.write_text("cameras:\n" + "".join(
        f"  cam{i}:\n    source: {{spec: \"demo?fps=15&seed={i + 1}\"}}\n" for i in range(args.cameras)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(work / "server.log", "w")
    server = subprocess.Popen([args.bin, "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                               "--data-dir", str(work / "data"), *args.serve_args],
                              cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    stop = threading.Event()
    received = [0] * args.cameras
    lock = threading.Lock()

    def viewer(index: int) -> None:
        url = f"ws://127.0.0.1:{port}/cam/cam{index}/ws"
        with connect(url, origin=f"http://127.0.0.1:{port}", max_size=None, open_timeout=30) as ws:
            while not stop.is_set():
                try:
                    message = ws.recv(timeout=1)
                except TimeoutError:
                    continue
                if isinstance(message, bytes):
                    with lock:
                        received[index] += 1

    def cpu_ticks() -> int:
        return sum(int(x) for x in Path(f"/proc/{server.pid}/stat").read_text().split()[13:15])

    threads = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        threads = [threading.Thread(target=viewer, args=(i,), daemon=True) for i in range(args.cameras)]
        for thread in threads:
            thread.start()
        time.sleep(5)  # warm-up: every viewer connected, every face tracked
        ticks, start = cpu_ticks(), time.monotonic()
        with lock:
            before = list(received)
        time.sleep(seconds)
        ticks, elapsed = cpu_ticks() - ticks, time.monotonic() - start
        with lock:
            after = list(received)
        listing = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cameras", timeout=5))
        rss = next(int(line.split()[1]) for line in Path(f"/proc/{server.pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS")) / 1024
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
        server.terminate()
        server.wait(timeout=30)
        log.close()
    print(f"{args.cameras} cameras: {ticks / 100 / elapsed:.2f} cores, {rss:.0f} MiB resident, "
          f"face detection {listing['faceDetection']}")
    for index, camera in enumerate(listing["cameras"]):
        print(f"  {camera['name']}: processed {camera['fps']['processed']} fps, viewer received "
              f"{(after[index] - before[index]) / elapsed:.1f} fps, faces {camera.get('faces')}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
