#!/usr/bin/env python3
"""Sightline clips and recording benchmark: what keeping video costs.

Makes a 640x480 video (default 25 fps) where three logos come and go on staggered
schedules (eventbench.py's), then runs the server on it three times for --seconds
each, no viewer connected:
  1. events on, clips off (`events.clips: false`): the baseline;
  2. events on, clips on (the default);
  3. events and clips on, and continuous recording (`record.enabled`).
For each: process CPU (cores), CPU by thread name (/proc/PID/task/*), bytes each
thread wrote through write(2) (/proc/PID/task/*/io wchar: which thread writes the
files; the pipeline's should be ~0), processed fps, resident memory; for clips,
clips completed and the time from an event's end to its clip being complete
(`lastCompletedAfterEndSeconds`, sampled every second), bytes of clips written;
for recording, bytes written per hour of video.

  scripts/clipbench.py [--bin .build/release/sightline] [--seconds 60] [--fps 25]
  scripts/clipbench.py --video my.avi --template a.png=a    # your own input
  scripts/clipbench.py --video demo                         # the demo scene (30 fps, sensor noise: hard to encode)

Prints one JSON summary on stdout (progress on stderr). Loopback only, bounded in time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eventbench  # noqa: E402  (its video, server and /proc helpers)

REPO = eventbench.REPO


def threads(pid: int) -> dict:
    """Per thread name: CPU seconds and bytes written (summed over threads of one name)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            io = dict(line.split(": ") for line in (task / "io").read_text().splitlines())
        except (OSError, ValueError):
            continue
        entry = out.setdefault(name, {"cpu": 0.0, "wchar": 0})
        entry["cpu"] += cpu
        entry["wchar"] += int(io.get("wchar", 0))
    return out


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.mp4")) if path.is_dir() else 0


def run(args, work: Path, name: str, video: Path, templates: list[str], config: str) -> dict:
    eventbench.log(f"{name}, {args.seconds:.0f} s")
    server = eventbench.Server(args.bin, work, name, video, templates, config)
    data = work / f"data-{name}"
    time.sleep(5)  # past start-up: the first events, the encoder made
    before, t0 = threads(server.process.pid), time.monotonic()
    clips0, rec0 = directory_bytes(data / "events"), directory_bytes(data / "recordings")
    cpu0 = eventbench.cpu_seconds(server.process.pid)
    completion = []
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        time.sleep(1)
        clips = eventbench.get(server.port, "/api/events/stats").get("clips") or {}
        value = clips.get("lastCompletedAfterEndSeconds")
        if value is not None and (not completion or completion[-1] != value):
            completion.append(value)
    elapsed = time.monotonic() - t0
    cpu1, after = eventbench.cpu_seconds(server.process.pid), threads(server.process.pid)
    state = eventbench.get(server.port, "/api/state")
    stats = eventbench.get(server.port, "/api/events/stats")
    by_thread = {}
    for thread, values in after.items():
        start = before.get(thread, {"cpu": 0.0, "wchar": 0})
        cores = (values["cpu"] - start["cpu"]) / elapsed
        wrote = values["wchar"] - start["wchar"]
        if cores >= 0.001 or wrote > 0:
            by_thread[thread] = {"cores": round(cores, 3), "wroteBytes": wrote}
    result = {"cores": round((cpu1 - cpu0) / elapsed, 3), "processedFps": state["fps"]["processed"],
              "rssMiB": round(eventbench.rss_mib(server.process.pid), 1), "threads": by_thread}
    clips = stats.get("clips")
    if clips:
        result["clips"] = {"completed": clips["completed"], "failed": clips["failed"], "lostFrames": clips["lostFrames"],
                           "bytesWritten": directory_bytes(data / "events") - clips0,
                           "preCaptureBytes": clips["preCaptureBytes"],
                           "endToCompleteSeconds": completion}
    if state.get("recording"):
        written = directory_bytes(data / "recordings") - rec0
        result["recording"] = {"bytesWritten": written, "gigabytesPerHour": round(written / elapsed * 3600 / 1e9, 3),
                               "segments": state["recording"]["segments"], "failed": state["recording"]["failed"]}
    server.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(REPO / ".build" / "release" / "sightline"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--video", help="your own video (with --template for what to find in it)")
    parser.add_argument("--template", action="append", default=[], help="PATH=NAME, with --video")
    args = parser.parse_args()
    if not 10 <= args.seconds <= 900:
        parser.error("--seconds must be 10-900")
    work = Path(tempfile.mkdtemp(prefix="sightline-clipbench-"))
    if args.video:
        video, templates = (args.video if args.video.startswith("demo") else Path(args.video)), args.template
    else:
        logos = [eventbench.SHARED / "opencv-logo.png", eventbench.SHARED / "LinuxLogo.jpg",
                 eventbench.SHARED / "WindowsLogo.jpg"]
        video, templates = eventbench.make_video(work, logos, fps=args.fps)
    events = "events:\n  minSeconds: 0.5\n  endAfterSeconds: 1\n"
    result = {"video": str(video), "seconds": args.seconds, "machine": {"cores": os.cpu_count(),
                                                                          "load": os.getloadavg()}}
    result["clipsOff"] = run(args, work, "clips-off", video, templates, events + "  clips: false\n")
    result["clipsOn"] = run(args, work, "clips-on", video, templates, events)
    result["clipsAndRecording"] = run(args, work, "recording", video, templates,
                                      events + "record:\n  enabled: true\n")
    result["clipsAddCores"] = round(result["clipsOn"]["cores"] - result["clipsOff"]["cores"], 3)
    result["recordingAddsCores"] = round(result["clipsAndRecording"]["cores"] - result["clipsOn"]["cores"], 3)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
