#!/usr/bin/env python3
"""Real cameras at real resolutions (issue 39's figures): Sightline reading an ordinary IP
camera's H.264 over RTSP, against FFmpeg decoding the same stream, in one run.

The camera: a camera-like H.264 file (scripts/make-camera-video.py: 1920x1080 or 3840x2160,
25 fps, main profile, 4 Mbit/s at 1080p, a keyframe every 2 s, no B-frames; made once and
kept in --cache) handed out as it is, in real time and looped without end, by GStreamer's
gst-rtsp-server (Tests/e2e/gst_rtsp_server.py copy), one server per camera.

Sightline: `sightline serve` on a free loopback port with the camera as its source and on
its defaults (a template: the coffee cup cut from the video's first frame; faces on;
clips on), plus any SERVE-ARGS after `--`. With --cameras K, one process serves K cameras
(`cameras:` in a config file written here), each with its own RTSP server.

Once every camera is live, viewers connect (--viewers N on /ws?video=h264, --jpeg-viewers
N on /ws, spread over the cameras; each reads and discards) and, with --floor same (the
default), the floor starts beside it: `ffmpeg -threads 1 -rtsp_transport tcp -i URL -f null
-` decoding camera 0's stream, and `ffmpeg -c copy` relaying it (--no-relay: not). After
--warmup seconds, over --seconds it measures:
  - Sightline's whole-process cores (/proc/PID/stat utime+stime) and per thread
    (/proc/PID/task/*/stat, threads of one name summed; `(exited threads)` is the rest);
  - each camera's processed and captured fps (frames.processed and frames.captured of
    /api/cameras/NAME/state, counted over the window) and its frames dropped;
  - the floor's cores (and the fps FFmpeg decoded), the RTSP servers' and this script's
    own cores (the viewers), and how busy the whole machine was (/proc/stat), so that
    other work on the machine shows;
  - each viewer kind's received fps and Mbit/s.
Prints a table and the ratio of Sightline's cores to the one-thread decode's (with K
cameras, to K times it). --floor after measures the decode alone once Sightline has
stopped (no contention on a small machine); --floor none skips it.

  scripts/camerabench.py [--size 1920x1080|3840x2160] [--seconds 30] [--warmup 8]
      [--viewers N] [--jpeg-viewers N] [--cameras K] [--floor same|after|none] [--no-relay]
      [--video FILE.mp4 [--template PNG]] [--video-seconds 30] [--bitrate 4M] [--keyint 50]
      [--wait-idle SECONDS] [--bin PATH] [--json] [--keep] [-- SERVE-ARGS...]

  scripts/camerabench.py                          # 1080p, nobody watching
  scripts/camerabench.py --viewers 10             # 10 H.264 viewers
  scripts/camerabench.py --cameras 4              # 4 cameras in one process
  scripts/camerabench.py --size 3840x2160         # a 4K camera
  scripts/camerabench.py -- --no-clips            # serve flags after --

--bin defaults to $SIGHTLINE_BIN, else .build/release/sightline. Loopback only; every wait
and the window are bounded; every process it started is stopped at the end, on an error
and on Ctrl-C or SIGTERM. Needs ffmpeg (libx264), Debian's python3-gi with
gst-rtsp-server (scripts/setup.sh --tests), and numpy, Pillow, scikit-image and websockets
in this Python (Tests/requirements.txt).
"""

from __future__ import annotations

import argparse
import ctypes
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
HZ = os.sysconf("SC_CLK_TCK")
MAX_SECONDS = 600
MAX_VIEWERS = 50
MAX_CAMERAS = 16


def log(message: str) -> None:
    print(f"[camerabench] {message}", file=sys.stderr, flush=True)


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGTERM when this script dies, however it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(port: int, path: str, timeout: float = 5):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as answer:
        return json.loads(answer.read())


def process_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def thread_seconds(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, tail = (task / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue  # the thread ended while being read
        name = head.split("(", 1)[1]
        fields = tail.split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / HZ
    return out


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (all cores, every process)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / HZ


def rss_mib(pid: int) -> float | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def own_seconds() -> float:
    t = os.times()
    return t.user + t.system


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"WIDTHxHEIGHT, not {text!r}")
    return w, h


def camera_video(args, work: Path) -> tuple[Path, Path]:
    """The camera's file and its template, made (once, into --cache) unless given."""
    if args.video:
        video = Path(args.video).resolve()
        if not video.is_file():
            sys.exit(f"no such video: {video}")
        if args.template:
            return video, Path(args.template).resolve()
        # A template cut from the middle of the first frame (a sixth of each side).
        template = work / "template.png"
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(video), "-frames:v", "1",
                        "-vf", "crop=iw/6:ih/6:iw*5/12:ih*5/12", str(template)], check=True, timeout=120)
        return video, template
    width, height = args.size
    bitrate = args.bitrate or ("12M" if width * height > 1920 * 1080 else "4M")
    keyint = args.keyint or 50
    cache = Path(args.cache).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    stem = cache / f"camera-{width}x{height}-{args.video_seconds:g}s-{bitrate}-k{keyint}"
    video, template = stem.with_name(stem.name + ".mp4"), stem.with_name(stem.name + ".png")
    if not (video.is_file() and template.is_file()):
        log(f"making {video} (once; kept for later runs)")
        partial = stem.with_name(stem.name + ".partial.mp4")
        subprocess.run([sys.executable, str(REPO / "scripts" / "make-camera-video.py"), str(partial),
                        "--size", f"{width}x{height}", "--seconds", str(args.video_seconds), "--bitrate", bitrate,
                        "--keyint", str(keyint), "--template", str(template)], check=True, timeout=3600)
        partial.rename(video)
    return video, template


class Viewer(threading.Thread):
    """One WebSocket viewer that reads and discards; counts binary messages and bytes."""

    def __init__(self, kind: str, port: int, path: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.kind, self.port, self.path, self.stop = kind, port, path, stop
        self.lock = threading.Lock()
        self.frames = 0
        self.bytes = 0
        self.error: str | None = None
        self.connected = threading.Event()

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.frames, self.bytes

    def run(self) -> None:
        from websockets.sync.client import connect
        try:
            with connect(f"ws://127.0.0.1:{self.port}{self.path}", origin=f"http://127.0.0.1:{self.port}",
                         max_size=None, open_timeout=20, close_timeout=2) as ws:
                self.connected.set()
                while not self.stop.is_set():
                    try:
                        message = ws.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    if isinstance(message, bytes):
                        with self.lock:
                            self.frames += 1
                            self.bytes += len(message)
        except Exception as error:  # noqa: BLE001 - reported, not raised
            if not self.stop.is_set():
                self.error = f"{type(error).__name__}: {error}"
        finally:
            self.connected.set()


class Ffmpeg:
    """An ffmpeg reading the camera's stream (decode or relay), frames counted from -progress."""

    def __init__(self, name: str, args: list[str], log_path: Path):
        self.name = name
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(["ffmpeg", "-nostdin", "-v", "error", "-progress", "pipe:1", "-stats_period", "1",
                                      *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, preexec_fn=die_with_parent)
        self.frame = 0
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # ends when ffmpeg exits
            if line.startswith("frame="):
                try:
                    with self.lock:
                        self.frame = int(line.split("=", 1)[1])
                except ValueError:
                    pass

    def frames(self) -> int:
        with self.lock:
            return self.frame

    def stop(self) -> None:
        stop_process(self.proc)
        self.reader.join(timeout=5)
        self.log.close()


def stop_process(proc: subprocess.Popen | None, timeout: float = 15) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_live(port: int, server: subprocess.Popen, names_wanted: int, timeout: float, work: Path) -> list[str]:
    """Waits until the server lists every camera as live with frames processed; their names."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"sightline exited ({server.returncode}) before going live; see {work}/server.log")
        try:
            cameras = get_json(port, "/api/cameras", timeout=2)["cameras"]
            last = ", ".join(f"{c['name']} {c['state']}" for c in cameras)
            if len(cameras) >= names_wanted and all(c["state"] == "live" for c in cameras):
                names = [c["name"] for c in cameras]
                if all(get_json(port, f"/api/cameras/{n}/state")["frames"]["processed"] > 0 for n in names):
                    return names
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.25)
    sys.exit(f"cameras not live within {timeout:.0f} s ({last}); see {work}/server.log")


def camera_counters(port: int, names: list[str]) -> dict[str, dict]:
    out = {}
    for name in names:
        state = get_json(port, f"/api/cameras/{name}/state")
        drops = state.get("drops", {})
        video = state.get("video", {})
        out[name] = {"processed": state["frames"]["processed"], "captured": state["frames"]["captured"],
                     "late": drops.get("late", 0), "superseded": drops.get("superseded", 0),
                     "error": drops.get("error", 0), "fps": state.get("fps", {}),
                     "faces": state.get("faces", {}), "source": state.get("source", {}),
                     "clientSkips": state.get("clientSkips", 0),
                     "skipsToKeyframe": video.get("skipsToKeyframe", 0),
                     "encoded": {r["name"]: r.get("frames", 0) for r in video.get("renditions", [])},
                     "h264Viewers": video.get("h264Viewers", [])}
    return out


def wait_idle(limit: float, busy_below: float = 0.25, over: float = 5) -> None:
    """Waits until the machine's busy cores over `over` seconds are below `busy_below`, at most
    `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        b0, t0 = machine_busy_seconds(), time.monotonic()
        time.sleep(over)
        busy = (machine_busy_seconds() - b0) / (time.monotonic() - t0)
        if busy < busy_below:
            log(f"machine idle ({busy:.2f} cores busy)")
            return
        if time.monotonic() >= deadline:
            log(f"machine still busy ({busy:.2f} cores) after {limit:.0f} s; going on")
            return
        log(f"machine busy ({busy:.2f} cores); waiting")


def measure_decode_alone(url: str, seconds: float, work: Path) -> dict:
    decode = Ffmpeg("decode", ["-threads", "1", "-rtsp_transport", "tcp", "-i", url, "-f", "null", "-"],
                    work / "ffmpeg-decode-after.log")
    try:
        time.sleep(4)
        c0, f0, t0 = process_seconds(decode.proc.pid), decode.frames(), time.monotonic()
        time.sleep(seconds)
        c1, f1, t1 = process_seconds(decode.proc.pid), decode.frames(), time.monotonic()
    finally:
        decode.stop()
    return {"cores": (c1 - c0) / (t1 - t0), "fps": (f1 - f0) / (t1 - t0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=(1920, 1080), help="the camera's size (default 1920x1080)")
    ap.add_argument("--seconds", type=float, default=30, help=f"measurement window (default 30, at most {MAX_SECONDS})")
    ap.add_argument("--warmup", type=float, default=8, help="seconds after everything started (default 8)")
    ap.add_argument("--viewers", type=int, default=0, help="H.264 WebSocket viewers (/ws?video=h264)")
    ap.add_argument("--jpeg-viewers", type=int, default=0, help="JPEG WebSocket viewers (/ws)")
    ap.add_argument("--cameras", type=int, default=1, help="cameras in the one process, each its own RTSP server")
    ap.add_argument("--floor", choices=["same", "after", "none"], default="same",
                    help="the ffmpeg one-thread decode: beside Sightline (default), alone afterwards, or not")
    ap.add_argument("--no-relay", action="store_true", help="no ffmpeg -c copy relay beside Sightline")
    ap.add_argument("--video", help="serve this H.264 MP4/MKV instead of a made one")
    ap.add_argument("--template", help="with --video: the template (default: a crop of its first frame)")
    ap.add_argument("--video-seconds", type=float, default=30, help="length of the made video (looped; default 30)")
    ap.add_argument("--bitrate", help="made video's bitrate (default 4M; 12M at 4K)")
    ap.add_argument("--keyint", type=int, help="made video's frames between keyframes (default 50)")
    ap.add_argument("--cache", default=os.environ.get("SIGHTLINE_BENCH_CACHE", "~/.cache/sightline-camerabench"),
                    help="where made videos are kept (default ~/.cache/sightline-camerabench)")
    ap.add_argument("--bin", default=os.environ.get("SIGHTLINE_BIN", str(REPO / ".build/release/sightline")))
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, data) at the end")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="first wait (at most this long) for the machine to be idle: others' builds skew figures")
    ap.add_argument("--config-yaml", default="", metavar="YAML",
                    help="more of the config file, as YAML lines (for example 'faces: {fineEverySeconds: 3}')")
    ap.add_argument("serve_args", nargs="*", help="more `sightline serve` flags, after --")
    args = ap.parse_args()
    args.seconds = min(max(args.seconds, 1), MAX_SECONDS)
    args.warmup = min(max(args.warmup, 0), 120)
    args.viewers = min(max(args.viewers, 0), MAX_VIEWERS)
    args.jpeg_viewers = min(max(args.jpeg_viewers, 0), MAX_VIEWERS)
    args.cameras = min(max(args.cameras, 1), MAX_CAMERAS)
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"no sightline binary at {args.bin} (--bin or SIGHTLINE_BIN)")

    from rtsp_server import RtspServer, gst_problem
    problem = gst_problem("copy")
    if problem:
        sys.exit(f"no RTSP server: {problem}")

    # SIGTERM ends the run as Ctrl-C does: through the finally below.
    def interrupted(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)

    work = Path(tempfile.mkdtemp(prefix="sightline-camerabench-"))
    rtsp: list = []
    server = None
    floors: list[Ffmpeg] = []
    viewers: list[Viewer] = []
    stop = threading.Event()
    failed = True
    try:
        video, template = camera_video(args, work)
        probe = json.loads(subprocess.run(
            ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
             "stream=width,height,r_frame_rate,profile,bit_rate,has_b_frames", "-of", "json", str(video)],
            capture_output=True, text=True, check=True, timeout=60).stdout)["streams"][0]

        if args.wait_idle > 0:
            wait_idle(min(args.wait_idle, 3600))
        for index in range(args.cameras):
            rtsp.append(RtspServer("copy", work / f"rtsp{index}", name="cam", video=video).start(timeout=120))
        urls = [r.url for r in rtsp]
        log(f"{args.cameras} RTSP camera(s) serving {video.name}: {', '.join(urls)}")

        config = work / "sightline.yaml"
        if args.cameras == 1:
            config.write_text(f"source: {{spec: \"{urls[0]}\"}}\n")
        else:
            config.write_text("cameras:\n" + "".join(f"  cam{i}:\n    source: {{spec: \"{url}\"}}\n"
                                                    for i, url in enumerate(urls)))
        if args.config_yaml:
            config.write_text(config.read_text() + args.config_yaml.strip() + "\n")
        port = free_port()
        command = [args.bin, "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                   "--data-dir", str(work / "data"), "--web-root", str(REPO / "web"),
                   "--template", f"{template}=template", *args.serve_args]
        log("starting " + " ".join(command))
        server_log = open(work / "server.log", "wb")
        server = subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=server_log, preexec_fn=die_with_parent)
        server_log.close()
        names = wait_live(port, server, args.cameras, 60, work)
        log(f"live: {', '.join(names)}")

        if args.floor == "same":
            floors.append(Ffmpeg("decode", ["-threads", "1", "-rtsp_transport", "tcp", "-i", urls[0],
                                            "-f", "null", "-"], work / "ffmpeg-decode.log"))
        if not args.no_relay:
            floors.append(Ffmpeg("relay", ["-rtsp_transport", "tcp", "-i", urls[0], "-c", "copy", "-f", "null", "-"],
                                 work / "ffmpeg-relay.log"))

        def path(kind: str, index: int) -> str:
            query = "?video=h264" if kind == "h264" else ""
            return f"/ws{query}" if args.cameras == 1 else f"/cam/{names[index % len(names)]}/ws{query}"

        kinds = ["h264"] * args.viewers + ["jpeg"] * args.jpeg_viewers
        for index, kind in enumerate(kinds):
            viewer = Viewer(kind, port, path(kind, index), stop)
            viewers.append(viewer)
            viewer.start()
        deadline = time.monotonic() + 30
        for viewer in viewers:
            viewer.connected.wait(timeout=max(0.1, deadline - time.monotonic()))
        errors = [v.error for v in viewers if v.error]
        if errors:
            sys.exit(f"viewers failed to connect: {errors[0]}")
        log(f"{len(viewers)} viewer(s) connected; warm-up {args.warmup:g} s, then {args.seconds:g} s measured")
        time.sleep(args.warmup)

        def sample() -> dict:
            return {"t": time.monotonic(), "cpu": process_seconds(server.pid), "threads": thread_seconds(server.pid),
                    "cameras": camera_counters(port, names), "machine": machine_busy_seconds(),
                    "own": own_seconds(),
                    "rtsp": sum(process_seconds(r.proc.pid) for r in rtsp),
                    "floors": {f.name: (process_seconds(f.proc.pid), f.frames()) for f in floors},
                    "viewers": [v.counts() for v in viewers]}

        before = sample()
        end = before["t"] + args.seconds
        while time.monotonic() < end:
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
            if server.poll() is not None:
                sys.exit(f"sightline exited ({server.returncode}) during the window; see {work}/server.log")
            for floor in floors:
                if floor.proc.poll() is not None:
                    sys.exit(f"ffmpeg {floor.name} exited ({floor.proc.returncode}); see {work}/ffmpeg-{floor.name}.log")
        after = sample()
        rss = rss_mib(server.pid)
        state = get_json(port, "/api/state")
        stop.set()
        viewer_errors = [v.error for v in viewers if v.error]

        span = after["t"] - before["t"]
        result = {
            "camera": {"video": str(video), "width": probe.get("width"), "height": probe.get("height"),
                       "fps": probe.get("r_frame_rate"), "profile": probe.get("profile"),
                       "bitrateKbps": round(int(probe["bit_rate"]) / 1000) if str(probe.get("bit_rate", "")).isdigit()
                       else None,
                       "bFrames": probe.get("has_b_frames"), "template": str(template)},
            "cameras": args.cameras, "viewersH264": args.viewers, "viewersJpeg": args.jpeg_viewers,
            "seconds": round(span, 2), "warmup": args.warmup, "serveArgs": args.serve_args, "bin": args.bin,
            "sightline": {
                "cores": (after["cpu"] - before["cpu"]) / span,
                "rssMiB": rss,
                "faceDetector": state.get("faces", {}).get("detector"),
                "clips": state.get("clips", {}).get("state"),
            },
        }
        threads = {name: (after["threads"][name] - before["threads"].get(name, 0.0)) / span
                   for name in after["threads"]}
        threads["(exited threads)"] = max(0.0, result["sightline"]["cores"] - sum(threads.values()))
        result["sightline"]["coresByThread"] = dict(sorted(((k, v) for k, v in threads.items() if v >= 0.0005),
                                                           key=lambda kv: -kv[1]))
        result["perCamera"] = {}
        for name in names:
            a, b = before["cameras"][name], after["cameras"][name]
            result["perCamera"][name] = {
                "processedFps": (b["processed"] - a["processed"]) / span,
                "capturedFps": (b["captured"] - a["captured"]) / span,
                "droppedLate": b["late"] - a["late"], "droppedSuperseded": b["superseded"] - a["superseded"],
                "droppedError": b["error"] - a["error"],
                "facePassesPerSecond": b["faces"].get("passesPerSecond"),
                "faceCoresByPart": {part: round((seconds - a["faces"].get("passSeconds", {}).get(part, 0)) / span, 4)
                                    for part, seconds in b["faces"].get("passSeconds", {}).items()},
                "facePassCounts": {k: v - a["faces"].get("passCounts", {}).get(k, 0)
                                   for k, v in b["faces"].get("passCounts", {}).items()},
                "sourceState": b["source"].get("state"),
                "encodedFps": {k: (v - a["encoded"].get(k, 0)) / span for k, v in b["encoded"].items()
                               if v - a["encoded"].get(k, 0) > 0},
                "jpegViewerSkips": b["clientSkips"] - a["clientSkips"],
                "h264SkipsToKeyframe": b["skipsToKeyframe"] - a["skipsToKeyframe"],
                "h264ViewersOnLow": sum(1 for v in b["h264Viewers"] if v.get("rendition") == "low"),
            }
        result["floor"] = {}
        for floor in floors:
            (c0, f0), (c1, f1) = before["floors"][floor.name], after["floors"][floor.name]
            result["floor"][floor.name] = {"cores": (c1 - c0) / span, "fps": (f1 - f0) / span}
        result["rtspServerCores"] = (after["rtsp"] - before["rtsp"]) / span
        result["benchClientCores"] = (after["own"] - before["own"]) / span
        result["machineBusyCores"] = (after["machine"] - before["machine"]) / span
        for kind in ("h264", "jpeg"):
            rates = [((v1[0] - v0[0]) / span, (v1[1] - v0[1]) * 8 / span / 1e6)
                     for v, v0, v1 in zip(viewers, before["viewers"], after["viewers"]) if v.kind == kind]
            if rates:
                result[f"viewers_{kind}"] = {"count": len(rates), "meanFps": sum(r[0] for r in rates) / len(rates),
                                             "minFps": min(r[0] for r in rates),
                                             "meanMbps": sum(r[1] for r in rates) / len(rates)}
        if viewer_errors:
            result["viewerErrors"] = viewer_errors[:5]

        # Everything started here is stopped before a decode is measured alone.
        for viewer in viewers:
            viewer.join(timeout=5)
        for floor in floors:
            floor.stop()
        floors = []
        stop_process(server, timeout=30)
        if args.floor == "after":
            log(f"sightline stopped; the decode alone for {args.seconds:g} s")
            result["floor"]["decode"] = {**measure_decode_alone(urls[0], args.seconds, work), "measured": "after"}
        elif "decode" in result["floor"]:
            result["floor"]["decode"]["measured"] = "same run"
        decode = result["floor"].get("decode", {}).get("cores")
        if decode:
            result["ratioToDecode"] = result["sightline"]["cores"] / (decode * args.cameras)
        print_table(result, names)
        if args.json:
            print(json.dumps(result, indent=2))
        failed = False
        return 0
    except KeyboardInterrupt:
        log("interrupted; stopping everything")
        return 130
    finally:
        stop.set()
        for viewer in viewers:
            viewer.join(timeout=5)
        for floor in floors:
            floor.stop()
        stop_process(server, timeout=30)
        for r in rtsp:
            r.stop()
        if args.keep or failed:
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def print_table(r: dict, names: list[str]) -> None:
    cam = r["camera"]
    print(f"camera: {cam['width']}x{cam['height']} at {cam['fps']} fps, H.264 {cam['profile']}, "
          f"{cam['bitrateKbps'] or '?'} kbit/s, {'B-frames' if cam['bFrames'] else 'no B-frames'}, served as is over RTSP "
          f"(gst-rtsp-server copy); {r['cameras']} camera(s)")
    print(f"sightline serve --template <cup> {' '.join(r['serveArgs'])}".rstrip()
          + f": faces {r['sightline']['faceDetector']}, clips {r['sightline']['clips']}; "
          f"viewers {r['viewersH264']} H.264 + {r['viewersJpeg']} JPEG; {r['seconds']:.1f} s measured after "
          f"{r['warmup']:g} s warm-up")
    print()
    print(f"{'':34} {'cores':>6}  notes")
    s = r["sightline"]
    print(f"{'sightline (whole process)':34} {s['cores']:6.3f}  {s['rssMiB']:.0f} MiB resident")
    for name, cores in s["coresByThread"].items():
        if cores >= 0.005:
            print(f"  {name:32} {cores:6.3f}")
    decode = r["floor"].get("decode")
    if decode:
        print(f"{'ffmpeg -threads 1 decode':34} {decode['cores']:6.3f}  {decode['fps']:.1f} fps decoded, "
              f"{decode['measured']}")
    relay = r["floor"].get("relay")
    if relay:
        print(f"{'ffmpeg -c copy relay':34} {relay['cores']:6.3f}  {relay['fps']:.1f} fps copied")
    print(f"{'gst-rtsp-server (the cameras)':34} {r['rtspServerCores']:6.3f}")
    print(f"{'this script (viewers)':34} {r['benchClientCores']:6.3f}")
    others = r["machineBusyCores"] - s["cores"] - sum(f["cores"] for k, f in r["floor"].items()
                                                      if f.get("measured") != "after") \
        - r["rtspServerCores"] - r["benchClientCores"]
    print(f"{'machine busy (all processes)':34} {r['machineBusyCores']:6.3f}  of {os.cpu_count()}; "
          f"{max(0.0, others):.3f} by other processes")
    print()
    for name in names:
        c = r["perCamera"][name]
        encoded = ", ".join(f"{k} {v:.1f}" for k, v in c["encodedFps"].items()) or "none"
        print(f"camera {name}: processed {c['processedFps']:.2f} fps (captured {c['capturedFps']:.2f}; dropped "
              f"{c['droppedLate']} late, {c['droppedSuperseded']} superseded, {c['droppedError']} errors); "
              f"face passes {c['facePassesPerSecond']}/s; H.264 encoded fps: {encoded}")
        if c.get("faceCoresByPart"):
            parts = ", ".join(f"{k} {v:.3f}" for k, v in sorted(c["faceCoresByPart"].items(), key=lambda kv: -kv[1])
                              if v >= 0.0005)
            counts = ", ".join(f"{k} {v / r['seconds']:.1f}" for k, v in c.get("facePassCounts", {}).items() if v)
            print(f"  face passes by part, cores: {parts}; a second: {counts}")
        if c["h264SkipsToKeyframe"] or c["h264ViewersOnLow"] or c["jpegViewerSkips"]:
            print(f"  viewers fell behind: {c['h264SkipsToKeyframe']} H.264 moves to a keyframe, "
                  f"{c['h264ViewersOnLow']} H.264 viewer(s) now on the low rendition, "
                  f"{c['jpegViewerSkips']} JPEG frames skipped")
    for kind, label in (("h264", "H.264"), ("jpeg", "JPEG")):
        v = r.get(f"viewers_{kind}")
        if v:
            print(f"{v['count']} {label} viewer(s): received {v['meanFps']:.2f} fps each (min {v['minFps']:.2f}), "
                  f"{v['meanMbps']:.2f} Mbit/s each")
    if r.get("viewerErrors"):
        print(f"viewer errors: {r['viewerErrors']}")
    if "ratioToDecode" in r:
        k = f" x {r['cameras']} cameras" if r["cameras"] > 1 else ""
        print(f"\nratio: sightline {s['cores']:.3f} cores / ffmpeg one-thread decode {decode['cores']:.3f}{k}"
              f" = {r['ratioToDecode']:.2f}x")
    if others > 0.15:
        print(f"note: other processes used {others:.2f} cores during the window; the figures may be low")


if __name__ == "__main__":
    sys.exit(main())
