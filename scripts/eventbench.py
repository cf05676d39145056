#!/usr/bin/env python3
"""Sightline events benchmark, against a real mosquitto broker on loopback.

Makes a 640x480 video at 30 fps where three logos come and go on staggered
schedules (up to three tracked at once), then:
  1. runs the server on it with events off, then on (MQTT to the broker), for
     --seconds each, and reports the process CPU (cores) and processed fps/drops
     of both runs;
  2. in the "on" run, measures event latency at a paho-mqtt subscriber: receipt
     time of each `new`/`update` message minus its `frame_time` (the capture
     time of the frame that made it; same machine, same clock);
  3. stops the broker for --outage-seconds and reports CPU, resident memory and
     the publisher's queue and drop counters before and after.

  scripts/eventbench.py [--bin .build/release/sightline] [--seconds 60] [--outage-seconds 60]
  scripts/eventbench.py --video my.avi --template a.png=a --template b.png=b   # your own input

Prints one JSON summary on stdout (progress on stderr). Loopback only, bounded in time.
Needs: mosquitto (Debian), pip install paho-mqtt pillow (Tests/requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
SHARED = REPO.parent / "shared" / "testdata" / "templates"


def log(message: str) -> None:
    print(f"[eventbench] {message}", file=sys.stderr, flush=True)


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(q * (len(values) - 1)))))]


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_video(directory: Path, logos: list[Path], fps: int = 30, seconds: int = 12):
    """Three logos, each in view 6 s of every 12 (starting 0, 2 and 4 s in), drifting."""
    from PIL import Image
    from scenes import jpeg_bytes, textured_background, write_mjpeg_avi
    images = []
    for path in logos:
        image = Image.open(path).convert("RGB")
        images.append(image.resize((100, max(20, int(100 * image.height / image.width)))))
    background = textured_background(640, 480)
    frames = []
    for n in range(fps * seconds):
        t = n / fps
        frame = background.copy()
        for i, image in enumerate(images):
            if 2 * i <= t < 2 * i + 6:
                frame.paste(image, (40 + 200 * i + int(6 * (t - 2 * i)), 120 + 60 * i))
        frames.append(jpeg_bytes(frame))
    path = directory / "three-logos.avi"
    write_mjpeg_avi(path, frames, 640, 480, fps)
    templates = []
    for i, image in enumerate(images):
        template = directory / f"logo{i}.png"
        image.save(template)
        templates.append(f"{template}=logo{i}")
    return path, templates


class Broker:
    def __init__(self, directory: Path):
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.config = directory / "mosquitto.conf"
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        directory.chmod(0o755)
        self.process = None

    def start(self):
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.process = subprocess.Popen([binary, "-c", str(self.config)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def get(port: int, path: str):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return json.loads(answer.read())


class Server:
    def __init__(self, binary: str, work: Path, name: str, video: Path, templates: list[str], config: str):
        self.port = free_port()
        (work / f"{name}.yaml").write_text(config)
        source = str(video) if str(video).startswith("demo") else f"file:{video}"   # demo[?...]: the synthetic scene
        args = [binary, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--source", source,
                "--data-dir", str(work / f"data-{name}"), "--config", str(work / f"{name}.yaml"), "--no-faces"]
        for template in templates:
            args += ["--template", template]
        self.log = open(work / f"{name}.log", "wb")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if get(self.port, "/api/state")["source"].get("state") == "live":
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"server {name} did not go live; see {work / (name + '.log')}")

    def measure(self, seconds: float) -> dict:
        state0 = get(self.port, "/api/state")
        cpu0, t0 = cpu_seconds(self.process.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = cpu_seconds(self.process.pid), time.monotonic()
        state1 = get(self.port, "/api/state")
        drops = {k: state1["drops"][k] - state0["drops"].get(k, 0) for k in state1["drops"]}
        return {"cores": round((cpu1 - cpu0) / (t1 - t0), 3), "processedFps": state1["fps"]["processed"],
                "drops": drops, "rssMiB": round(rss_mib(self.process.pid), 1)}

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(REPO / ".build" / "release" / "sightline"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--outage-seconds", type=float, default=60)
    parser.add_argument("--video", help="your own video (with --template for what to find in it)")
    parser.add_argument("--template", action="append", default=[], help="PATH=NAME, with --video")
    args = parser.parse_args()
    if not 5 <= args.seconds <= 600 or not 0 <= args.outage_seconds <= 600:
        parser.error("--seconds must be 5-600 and --outage-seconds 0-600")
    import paho.mqtt.client as mqtt

    work = Path(tempfile.mkdtemp(prefix="sightline-eventbench-"))
    if args.video:
        video, templates = Path(args.video), args.template
    else:
        logos = [SHARED / "opencv-logo.png", SHARED / "LinuxLogo.jpg", SHARED / "WindowsLogo.jpg"]
        video, templates = make_video(work, logos)
    broker = Broker(work / "broker")
    broker.start()
    events = "events:\n  minSeconds: 0.5\n  endAfterSeconds: 1\n"
    result = {"video": str(video), "templates": len(templates), "seconds": args.seconds}

    log(f"events off, {args.seconds:.0f} s")
    off = Server(args.bin, work, "off", video, templates, "events:\n  enabled: false\n")
    time.sleep(3)
    result["eventsOff"] = off.measure(args.seconds)
    off.stop()

    latencies, kinds, lock = [], {}, threading.Lock()

    def on_message(client, userdata, message):
        received = time.time()
        if message.topic != "sightline/events":
            return
        payload = json.loads(message.payload)
        with lock:
            kinds[payload["type"]] = kinds.get(payload["type"], 0) + 1
            if payload["type"] in ("new", "update"):
                latencies.append((received - payload["after"]["frame_time"]) * 1000)

    subscriber = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="eventbench")
    subscriber.on_connect = lambda c, u, f, rc, p: c.subscribe("sightline/#", qos=1)
    subscriber.on_message = on_message
    subscriber.connect("127.0.0.1", broker.port)
    subscriber.loop_start()

    log(f"events on with MQTT, {args.seconds:.0f} s")
    config = events + f"mqtt:\n  host: 127.0.0.1\n  port: {broker.port}\n  queueLimit: 500\n  statsSeconds: 10\n"
    on = Server(args.bin, work, "on", video, templates, config)
    time.sleep(3)
    with lock:
        latencies.clear()
    result["eventsOn"] = on.measure(args.seconds)
    with lock:
        result["latencyMs"] = {"messages": len(latencies), "types": dict(kinds),
                               "p50": round(percentile(latencies, 0.5) or 0, 1),
                               "p99": round(percentile(latencies, 0.99) or 0, 1),
                               "max": round(max(latencies, default=0), 1)}
    result["addedCpuPercent"] = round(100 * (result["eventsOn"]["cores"] - result["eventsOff"]["cores"])
                                      / max(result["eventsOff"]["cores"], 1e-6), 1)
    subscriber.loop_stop()
    subscriber.disconnect()

    if args.outage_seconds > 0:
        log(f"broker stopped, {args.outage_seconds:.0f} s")
        broker.stop()
        time.sleep(2)
        before = on.measure(5)
        stats_before = get(on.port, "/api/events/stats")["mqtt"]
        during = on.measure(args.outage_seconds)
        stats_after = get(on.port, "/api/events/stats")["mqtt"]
        result["brokerDown"] = {"first5s": before, "after": during,
                                "queuedEvents": [stats_before["queuedEvents"], stats_after["queuedEvents"]],
                                "dropped": [stats_before["dropped"], stats_after["dropped"]]}
    on.stop()
    broker.stop()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
