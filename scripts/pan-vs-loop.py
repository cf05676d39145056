#!/usr/bin/env python3
"""Sightline against the plain loop on one video, in alternating pairs (issue 41's figure).

  scripts/pan-vs-loop.py VIDEO [--pairs 5] [--seconds 30] [--clients 10] [--bin .build/release/sightline]
                         [--server-arg=--template=config/demo-template.png] [--server-arg=--no-clips]

Each pair runs `scripts/peer-loop.py VIDEO` (YuNet-320 on every frame, one JPEG, no tracking)
and then Sightline on the same video (`scripts/loadtest.py --spawn`, with the template and
without clips unless --server-arg says otherwise), each with the same number of JPEG viewers
on /ws for the same time, and prints one JSON line per pair (both processes' cores and
capture-to-receipt p99, their ratio, Sightline's cores by thread and its face worker's by
part) and a summary line. The loop's cost moves by up to a third from run to run on a shared
machine, so only pairs run back to back compare; the summary gives their range and median.

Make a pan of your own first: `scripts/make-face-crowd.py pan.avi --faces people`.
Needs the loop's Python packages (pip install opencv-python-headless websockets). Loopback
only; every run is bounded by --seconds.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from loadtest import free_port, stop  # noqa: E402  (the load test's own: a free loopback port, SIGTERM then kill)

DEFAULT_SERVER_ARGS = ["--template=config/demo-template.png", "--no-clips"]


def loadtest(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "loadtest.py"), *args],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"loadtest failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout[done.stdout.index("{"):])


def loop_run(video: Path, seconds: float, clients: int) -> dict:
    port = free_port()
    loop = subprocess.Popen([sys.executable, str(REPO / "scripts" / "peer-loop.py"), str(video), "--port", str(port),
                             "--seconds", str(seconds + 15)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 20
        while True:
            if loop.poll() is not None:
                raise SystemExit(f"the loop stopped: {loop.stderr.read()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the loop did not listen within 20 s")
                time.sleep(0.2)
        return loadtest("--url", f"http://127.0.0.1:{port}", "--pid", str(loop.pid), "--clients", str(clients),
                        "--seconds", str(seconds))
    finally:
        stop(loop)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("video", type=Path)
    ap.add_argument("--pairs", type=int, default=5, help="1-20")
    ap.add_argument("--seconds", type=float, default=30, help="each run's window, 5-300")
    ap.add_argument("--clients", type=int, default=10, help="1-50")
    ap.add_argument("--bin", default=str(REPO / ".build" / "release" / "sightline"))
    ap.add_argument("--server-arg", action="append", default=None,
                    help="Sightline's serve arguments (default: the demo template, --no-clips)")
    args = ap.parse_args()
    if not args.video.is_file():
        ap.error(f"no video at {args.video} (scripts/make-face-crowd.py makes one)")
    if not 1 <= args.pairs <= 20 or not 5 <= args.seconds <= 300 or not 1 <= args.clients <= 50:
        ap.error("--pairs 1-20, --seconds 5-300, --clients 1-50")
    server_args = args.server_arg if args.server_arg is not None else DEFAULT_SERVER_ARGS
    ratios, under = [], 0
    for pair in range(1, args.pairs + 1):
        loop = loop_run(args.video.resolve(), args.seconds, args.clients)
        ours = loadtest("--spawn", "--bin", args.bin, "--source", f"file:{args.video.resolve()}",
                        "--clients", str(args.clients), "--seconds", str(args.seconds),
                        *[f"--server-arg={a}" for a in server_args])
        ratio = ours["server"]["cores"] / loop["server"]["cores"]
        ratios.append(ratio)
        under += ours["latencyMs"]["p99"] <= loop["latencyMs"]["p99"]
        print(json.dumps({
            "pair": pair, "loopCores": loop["server"]["cores"], "sightlineCores": ours["server"]["cores"],
            "ratio": round(ratio, 3), "loopP99Ms": loop["latencyMs"]["p99"], "sightlineP99Ms": ours["latencyMs"]["p99"],
            "sightlineByThread": {k: v for k, v in ours["server"].get("coresByThread", {}).items() if v},
            "faceCoresByPart": ours["server"].get("faceCoresByPart"),
        }), flush=True)
    print(json.dumps({"pairs": len(ratios), "ratioMin": round(min(ratios), 3), "ratioMedian": round(statistics.median(ratios), 3),
                      "ratioMax": round(max(ratios), 3), "p99UnderTheLoops": under}))


if __name__ == "__main__":
    main()
