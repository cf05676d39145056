#!/usr/bin/env python3
"""Sightline with a relay against Sightline serving the viewers itself (issue 27's figures).

  scripts/relaybench.py [--readers 10] [--seconds 20] [--source demo]

1. nginx with the RTMP module on a loopback port; Sightline publishes to it (--publish) and
   `--readers` ffmpeg processes read rtmp:// back from nginx. Measured over `--seconds`:
   Sightline's CPU (cores), the publisher thread's CPU (what publishing costs with the encoder
   already running), frames published a second.
2. The same Sightline without a relay, `--readers` WebSocket clients on /ws?video=h264
   (scripts/loadtest.py): its CPU.
Prints one JSON object. Loopback only; every run bounded. Needs nginx-light, libnginx-mod-rtmp,
ffmpeg and the Python packages of Tests/requirements.txt.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "Tests" / "support"))
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
sys.path.insert(0, str(REPO / "scripts"))
from relay import NginxRTMP  # noqa: E402
import importlib  # noqa: E402

loadtest = importlib.import_module("loadtest")
TOKEN = "relaybench-token-0123456789abcdef"


def api_state(port):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/state", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--source", default="demo")
    parser.add_argument("--bin", default=os.environ.get("SIGHTLINE_BIN", str(REPO / ".build/release/sightline")))
    args = parser.parse_args()
    args.readers = max(1, min(args.readers, 50))
    args.seconds = max(5, min(args.seconds, 600))
    work = Path(tempfile.mkdtemp(prefix="sightline-relaybench-"))
    relay = NginxRTMP(work / "nginx").start()
    port = loadtest.free_port()
    server = subprocess.Popen([args.bin, "serve", "--source", args.source, "--host", "127.0.0.1", "--port", str(port),
                               "--data-dir", str(work / "data"), "--web-root", str(REPO / "web"), "--publish", relay.url()],
                              env={**os.environ, "SIGHTLINE_TOKEN": TOKEN}, stdout=subprocess.DEVNULL,
                              stderr=open(work / "server.log", "wb"))
    readers = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if (api_state(port).get("publish") or [{}])[0].get("state") == "publishing":
                    break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            sys.exit(f"not publishing within 30 s; see {work}/server.log")
        for _ in range(args.readers):
            readers.append(subprocess.Popen(["ffmpeg", "-v", "error", "-i", relay.url(), "-c", "copy", "-f", "null", "-"],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(4)
        s0, cpu0, threads0, t0 = api_state(port), loadtest.cpu_seconds(server.pid), loadtest.thread_cpu_seconds(server.pid), time.monotonic()
        time.sleep(args.seconds)
        s1, cpu1, threads1, t1 = api_state(port), loadtest.cpu_seconds(server.pid), loadtest.thread_cpu_seconds(server.pid), time.monotonic()
        alive = sum(r.poll() is None for r in readers)
        span = t1 - t0
        with_relay = {
            "cores": round((cpu1 - cpu0) / span, 3),
            "coresByThread": {k: round((v - threads0.get(k, 0)) / span, 3) for k, v in threads1.items() if v - threads0.get(k, 0) > 0},
            "publishedFps": round((s1["publish"][0]["frames"] - s0["publish"][0]["frames"]) / span, 2),
            "publishDrops": s1["publish"][0]["drops"] - s0["publish"][0]["drops"],
            "readersStillReading": alive,
        }
    finally:
        for r in readers:
            r.terminate()
        for r in readers:
            try:
                r.wait(timeout=5)
            except subprocess.TimeoutExpired:
                r.kill()
        loadtest.stop(server)
        relay.stop()
    direct = subprocess.run([sys.executable, str(REPO / "scripts" / "loadtest.py"), "--spawn", "--bin", args.bin,
                             "--source", args.source, "--video", "h264", "--clients", str(args.readers),
                             "--seconds", str(args.seconds), "--warmup", "4"],
                            capture_output=True, text=True, timeout=args.seconds + 120)
    direct_summary = json.loads(direct.stdout)
    direct_cores = direct_summary["server"]["cores"]
    print(json.dumps({
        "source": args.source, "readers": args.readers, "seconds": args.seconds,
        "withRelay": with_relay,
        "direct": {"cores": direct_cores, "coresByThread": direct_summary["server"].get("coresByThread"),
                   "receivedFps": direct_summary["receivedFps"]},
        "ratio": round(with_relay["cores"] / direct_cores, 3) if direct_cores else None,
    }, indent=2))


if __name__ == "__main__":
    main()
