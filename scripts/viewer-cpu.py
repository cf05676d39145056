#!/usr/bin/env python3
"""Server CPU for N viewers of /ws?video=fmp4 (MSE) against N of /ws?video=h264 (WebCodecs): the
cost of muxing a fragment per frame per viewer. Starts `sightline serve` on a frame-code video
(Tests/browser/frame_code.py, 640x480, 30 fps) on loopback, connects N WebSocket clients that read
everything, and reads the server's CPU time from /proc before and after each window.

    SIGHTLINE_BIN=.build/release/sightline python3 scripts/viewer-cpu.py [--viewers 10] [--seconds 10]
"""
import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "Tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "Tests" / "browser"))
import frame_code  # noqa: E402
import websocket  # noqa: E402
from test_page import SightlineServer, server_binary  # noqa: E402


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(server, mode, viewers, seconds):
    stop = threading.Event()
    received = [0] * viewers

    def read(i):
        ws = websocket.create_connection(f"ws://127.0.0.1:{server.port}/ws?video={mode}", timeout=5)
        while not stop.is_set():
            received[i] += len(ws.recv_data()[1])
        ws.close()

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(viewers)]
    for t in threads:
        t.start()
    time.sleep(2.0)  # joined, past the first keyframe
    before, start = cpu_seconds(server.process.pid), time.monotonic()
    bytes_before = sum(received)
    time.sleep(seconds)
    used, span = cpu_seconds(server.process.pid) - before, time.monotonic() - start
    bits = (sum(received) - bytes_before) * 8 / span / viewers
    stop.set()
    for t in threads:
        t.join(timeout=5)
    return used / span, bits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--viewers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sightline-viewer-cpu-"))
    video, patch = folder / "frame-code.mp4", folder / "patch.png"
    frame_code.write_video(video, frame_code.PERIOD * 3, fps=30)
    frame_code.write_patch(patch)
    server = SightlineServer(server_binary(), source=f"file:{video}?pace=native",
                             extra_args=["--template", f"{patch}=code"]).start()
    try:
        for mode in ("h264", "fmp4", "h264", "fmp4"):
            cores, bits = measure(server, mode, args.viewers, args.seconds)
            print(f"{args.viewers} viewers on video={mode}: server {cores:.3f} cores, {bits / 1e6:.2f} Mbit/s each")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
