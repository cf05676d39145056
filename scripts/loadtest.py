#!/usr/bin/env python3
"""Sightline load test: N WebSocket clients on /ws, capture-to-receipt latency and fps.

Examples:
  scripts/loadtest.py --spawn                       # start .build/release/sightline with demo
  scripts/loadtest.py --url http://127.0.0.1:8080 --clients 10 --seconds 60
  scripts/loadtest.py --spawn --video h264 --clients 100   # /ws?video=h264 (access units, not JPEGs)
  scripts/loadtest.py --url http://127.0.0.1:8090 --pid PID  # another server on /ws (scripts/peer-loop.py)
  scripts/make-face-pan.py /tmp/pan.avi && scripts/loadtest.py --spawn --source file:/tmp/pan.avi \
      --truth /tmp/pan.truth.json --server-arg=--template=config/demo-template.png

Prints one JSON summary on stdout (progress on stderr). Loopback only; bounded in clients
and time. Latency is receipt time of a frame's JPEG minus its capturedAt, which is only
meaningful with the server on this machine (same clock). With --truth (a video made by
scripts/make-face-pan.py), the first client also reads each frame's code from its JPEG and
scores the face boxes it received against that frame's ground truth (IoU >= 0.4).
Needs: pip install websockets  (see Tests/requirements.txt)
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_CLIENTS = 200
MAX_SECONDS = 3600


def log(msg: str) -> None:
    print(f"[loadtest] {msg}", file=sys.stderr, flush=True)


def percentile(sorted_vals, q):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TLS_CONTEXT = None  # set with --tls: trusts the spawned server's own certificate


def get_state(host: str, port: int):
    conn = (http.client.HTTPSConnection(host, port, timeout=5, context=TLS_CONTEXT) if TLS_CONTEXT
            else http.client.HTTPConnection(host, port, timeout=5))
    try:
        conn.request("GET", "/api/state")
        resp = conn.getresponse()
        body = resp.read(4 * 1024 * 1024)
        if resp.status != 200:
            raise RuntimeError(f"/api/state -> HTTP {resp.status}")
        return json.loads(body)
    finally:
        conn.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict:
    """CPU seconds by thread name (threads of one name summed): sightline.sink.h264 is the
    H.264 encoder, sightline.lws the service thread that sends to every client."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, tail = (task / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        name = head.split("(", 1)[1]
        fields = tail.split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def rss_mib(pid: int):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Client:
    def __init__(self, index: int):
        self.index = index
        self.pairs = 0
        self.bytes = 0
        self.latencies = []      # seconds, receipt of JPEG - capturedAt
        self.errors = []
        self.closed = None
        self.first = None
        self.last = None
        self.last_seq = None
        self.boxed_frames = 0    # frames counted for faces boxed a frame (client 0 only)
        self.boxed_faces = 0
        self.face_frames = 0     # frames scored against --truth (client 0 only)
        self.faces_visible = 0
        self.faces_found = 0
        self.frames_all_found = 0
        self.face_log = []       # (frame index, faces visible, faces found) per scored frame


TRUTH = None  # frames of face boxes from --truth, indexed by the frame code
TRUTH_FPS = 25


def iou(a, b):
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(0.0, w) * max(0.0, h)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def score_faces(c: "Client", meta: dict, jpeg: bytes) -> None:
    """Matches the frame's face boxes against its ground truth (greedy, IoU >= 0.4)."""
    import io
    from PIL import Image
    sys.path.insert(0, str(REPO / "scripts"))
    import importlib
    pan = importlib.import_module("make-face-pan")
    index = pan.read_code(Image.open(io.BytesIO(jpeg)))
    truth = TRUTH[index % len(TRUTH)]
    boxes = [[d["box"][k] for k in ("x", "y", "w", "h")] for d in meta.get("detections", []) if d.get("kind") == "face"]
    found = 0
    for t in truth:
        best = max(range(len(boxes)), key=lambda i: iou(boxes[i], t), default=None)
        if best is not None and iou(boxes[best], t) >= 0.4:
            found += 1
            boxes.pop(best)
    c.face_frames += 1
    c.faces_visible += len(truth)
    c.faces_found += found
    c.frames_all_found += found == len(truth)
    c.face_log.append((index % len(TRUTH), len(truth), found))


def appear_delays(log, fps):
    """Seconds from the first received frame that shows faces after one that showed none
    to the first frame with a face boxed, per appearance."""
    delays, onset, previous_visible = [], None, None
    for index, visible, found in log:
        if visible and previous_visible == 0:
            onset = index
        if onset is not None and found:
            delays.append(round(((index - onset) % len(TRUTH)) / fps, 2))
            onset = None
        previous_visible = visible
    return delays


HANDSHAKES = None  # asyncio.Semaphore, made in run()


async def run_client(c: Client, ws_url: str, t_start: float, t_end: float) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    try:
        # A few handshakes at a time: the server takes at most 16 unfinished
        # connections from one address and closes the rest at once.
        async with HANDSHAKES:
            ws = await connect(ws_url, open_timeout=10, close_timeout=3, max_size=16 * 1024 * 1024,
                               compression=None, proxy=None, user_agent_header="sightline-loadtest",
                               **({"ssl": TLS_CONTEXT} if TLS_CONTEXT else {}))
        async with ws:
            pending = None
            while True:
                remaining = t_end - time.time()
                if remaining <= 0:
                    break
                try:
                    msg = await asyncio.wait_for(ws.recv(), timeout=min(remaining, 5.0))
                except asyncio.TimeoutError:
                    if t_end - time.time() > 0:
                        c.errors.append("no message for 5 s")
                    continue
                now = time.time()
                if isinstance(msg, str):
                    try:
                        meta = json.loads(msg)
                    except ValueError:
                        c.errors.append("non-JSON text message")
                        continue
                    if pending is not None:
                        c.errors.append(f"JSON seq {pending.get('seq')} without its JPEG")
                    pending = meta if meta.get("type") == "frame" else None
                    continue
                if pending is None:
                    c.errors.append("JPEG without its JSON")
                    continue
                meta, pending = pending, None
                expected = meta["video"]["bytes"] if "video" in meta else meta.get("jpegBytes")
                if expected != len(msg):
                    c.errors.append(f"seq {meta.get('seq')}: the JSON says {expected} bytes, got {len(msg)}")
                seq = meta.get("seq")
                if c.last_seq is not None and isinstance(seq, int) and seq <= c.last_seq:
                    c.errors.append(f"seq went from {c.last_seq} to {seq}")
                c.last_seq = seq
                if now < t_start:
                    continue           # warm-up
                c.pairs += 1
                c.bytes += len(msg)
                c.first = c.first or now
                c.last = now
                if c.index == 0:
                    c.boxed_frames += 1
                    c.boxed_faces += sum(1 for d in meta.get("detections", []) if d.get("kind") == "face")
                if TRUTH is not None and c.index == 0:
                    score_faces(c, meta, msg)
                cap = meta.get("capturedAt")
                if isinstance(cap, (int, float)):
                    c.latencies.append(now - cap)
    except ConnectionClosed as e:
        c.closed = str(e)
    except (OSError, asyncio.TimeoutError) as e:
        c.errors.append(f"connection failed: {e!r}")
    finally:
        del c.errors[20:]


async def run(args, host: str, port: int, pid):
    global HANDSHAKES
    HANDSHAKES = asyncio.Semaphore(8)
    ws_url = f"{'wss' if TLS_CONTEXT else 'ws'}://{host}:{port}/ws" + ("?video=h264" if args.video == "h264" else "")
    clients = [Client(i) for i in range(args.clients)]
    t_start = time.time() + args.warmup
    t_end = t_start + args.seconds
    state0 = None
    rss = []

    cpu = {}

    async def sampler():
        nonlocal state0
        await asyncio.sleep(max(0.0, t_start - time.time()))
        state0 = await asyncio.to_thread(get_state, host, port)
        state0["_t"] = time.time()
        if pid is not None:
            cpu["start"] = (cpu_seconds(pid), time.monotonic())
            cpu["threads"] = thread_cpu_seconds(pid)
        while time.time() < t_end:
            if pid is not None:
                v = rss_mib(pid)
                if v is not None:
                    rss.append(v)
            await asyncio.sleep(min(1.0, max(0.0, t_end - time.time())))

    log(f"{args.clients} clients on {ws_url} for {args.seconds:.0f} s (+{args.warmup:.0f} s warm-up)")
    await asyncio.gather(sampler(), *(run_client(c, ws_url, t_start, t_end) for c in clients))
    if pid is not None and "start" in cpu:
        used, began = cpu["start"]
        elapsed = time.monotonic() - began
        state_cores = (cpu_seconds(pid) - used) / elapsed
        threads_now = thread_cpu_seconds(pid)
        thread_cores = {name: round((threads_now[name] - cpu["threads"].get(name, 0.0)) / elapsed, 3)
                        for name in threads_now if threads_now[name] - cpu["threads"].get(name, 0.0) > 0}
    else:
        state_cores, thread_cores = None, None
    state1 = await asyncio.to_thread(get_state, host, port)
    state1["_t"] = time.time()
    state1["_cores"] = state_cores
    state1["_threadCores"] = thread_cores
    return clients, state0, state1, rss


def spawn(args):
    global TLS_CONTEXT
    binary = Path(args.bin)
    if not binary.is_file():
        sys.exit(f"server binary not found at {binary}; build it or pass --bin")
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="sightline-loadtest-")
    cmd = [str(binary), "serve", "--source", args.source, "--host", "127.0.0.1", "--port", str(port),
           "--data-dir", data_dir, "--web-root", str(REPO / "web")] + args.server_arg
    if args.tls:
        config = Path(data_dir) / "tls.yaml"
        config.write_text("tls: {auto: true}\n")
        cmd += ["--config", str(config)]
    err = open(Path(data_dir) / "stderr.log", "wb")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    if args.tls:
        import ssl
        cert = Path(data_dir) / "tls" / "cert.pem"
        for _ in range(300):
            if cert.is_file():
                break
            time.sleep(0.1)
        TLS_CONTEXT = ssl.create_default_context(cafile=str(cert))
        TLS_CONTEXT.check_hostname = False  # the certificate names the host; loopback by address here
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with {proc.returncode}; see {err.name}")
        try:
            get_state("127.0.0.1", port)
            break
        except (OSError, RuntimeError, http.client.HTTPException, ValueError):
            time.sleep(0.2)
    else:
        stop(proc)
        sys.exit(f"server not ready in 30 s; see {err.name}")
    log(f"spawned pid {proc.pid} on port {port}: {' '.join(cmd)}")
    return proc, port, err.name


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


def delta(a, b, key):
    try:
        return {k: b[key][k] - a[key][k] for k in b[key]}
    except (KeyError, TypeError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080", help="server base URL (loopback only)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=60.0, help="measurement window")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds connected before measuring")
    ap.add_argument("--spawn", action="store_true", help="start the server itself (ignores --url)")
    ap.add_argument("--bin", default=os.environ.get("SIGHTLINE_BIN", str(REPO / ".build/release/sightline")))
    ap.add_argument("--source", default="demo", help="source for --spawn")
    ap.add_argument("--tls", action="store_true", help="with --spawn: HTTPS/WSS with a self-signed certificate (tls: auto)")
    ap.add_argument("--video", choices=["jpeg", "h264"], default="jpeg", help="what the clients ask /ws for")
    ap.add_argument("--pid", type=int, help="with --url: the server's process, for its CPU and memory "
                    "(scripts/peer-loop.py prints its own)")
    ap.add_argument("--truth", type=Path, help="ground truth of a video made by scripts/make-face-pan.py")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="extra argument for the spawned server (repeatable), e.g. --server-arg=--quality=70")
    args = ap.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS:
        ap.error(f"--clients must be 1..{MAX_CLIENTS}")
    if not 1 <= args.seconds <= MAX_SECONDS:
        ap.error(f"--seconds must be 1..{MAX_SECONDS}")
    args.warmup = min(max(args.warmup, 0.0), 30.0)
    if args.truth:
        global TRUTH
        global TRUTH_FPS
        loaded = json.loads(args.truth.read_text())
        TRUTH, TRUTH_FPS = loaded["frames"], loaded["fps"]

    proc = None
    stderr_log = None
    if args.spawn:
        proc, port, stderr_log = spawn(args)
        host = "127.0.0.1"
    else:
        u = urlparse(args.url)
        host, port = u.hostname, u.port or 80
        if host not in LOOPBACK:
            ap.error(f"refusing non-loopback host {host!r}")
    try:
        clients, s0, s1, rss = asyncio.run(run(args, host, port, proc.pid if proc else args.pid))
    finally:
        rc = stop(proc) if proc else None

    lat = sorted(v for c in clients for v in c.latencies)
    per_client = []
    for c in clients:
        span = (c.last - c.first) if c.first and c.last and c.last > c.first else 0
        per_client.append({
            "client": c.index, "pairs": c.pairs,
            "fps": round(c.pairs / args.seconds, 2),
            "fpsWhileReceiving": round((c.pairs - 1) / span, 2) if span else 0.0,
            "mbps": round(c.bytes * 8 / args.seconds / 1e6, 2),
            "errors": c.errors[:5], "closed": c.closed,
        })
    fps = [p["fps"] for p in per_client]
    dt = (s1["_t"] - s0["_t"]) if s0 else None
    frames = delta(s0, s1, "frames") if s0 else None
    # What the face passes did over the window (/api/state faces.passSeconds, passCounts).
    faces0, faces1 = (s0 or {}).get("faces"), s1.get("faces")
    pass_seconds = delta(faces0, faces1, "passSeconds")
    summary = {
        "url": f"{'https' if TLS_CONTEXT else 'http'}://{host}:{port}", "spawned": bool(proc), "clients": args.clients,
        "video": args.video,
        "seconds": args.seconds,
        "latencyMs": {
            "count": len(lat),
            "p50": round(percentile(lat, 0.50) * 1000, 2) if lat else None,
            "p99": round(percentile(lat, 0.99) * 1000, 2) if lat else None,
            "max": round(lat[-1] * 1000, 2) if lat else None,
        },
        "receivedFps": {"min": min(fps), "mean": round(sum(fps) / len(fps), 2), "max": max(fps)},
        # Face boxes a received frame carried, mean over the first client's frames.
        "facesBoxedPerFrame": round(clients[0].boxed_faces / clients[0].boxed_frames, 2)
        if clients and clients[0].boxed_frames else None,
        "perClient": per_client,
        "server": {
            "cores": round(s1["_cores"], 3) if s1.get("_cores") is not None else None,
            "coresByThread": s1.get("_threadCores"),
            "fps": s1.get("fps"),
            "processedFpsOverRun": round(frames["processed"] / dt, 2) if frames and dt else None,
            "framesDelta": frames,
            "dropsDelta": delta(s0, s1, "drops") if s0 else None,
            "clientSkipsDelta": (s1.get("clientSkips", 0) - s0.get("clientSkips", 0)) if s0 else None,
            "latency": s1.get("latency"),
            "stages": s1.get("stages"),
            "clients": s1.get("clients"),
            "video": {k: v for k, v in (s1.get("video") or {}).items() if k != "h264Viewers"},
            "faces": s1.get("faces"),
            # Face detections per second on the detector's own thread (beside the pipeline).
            "faceDetectionsPerSecond": round(
                (s1["stages"]["faceDetect"]["count"] - s0["stages"]["faceDetect"]["count"]) / dt, 2)
            if s0 and dt and "faceDetect" in s1.get("stages", {}) and "faceDetect" in s0.get("stages", {}) else None,
            # Cores by part of the face passes over the window.
            "faceCoresByPart": {part: round(seconds / dt, 4) for part, seconds in pass_seconds.items()}
            if pass_seconds and dt else None,
            "facePassCounts": delta(faces0, faces1, "passCounts"),
        },
        "errors": sum(len(c.errors) for c in clients),
    }
    if TRUTH is not None:
        c = clients[0]
        summary["faces"] = {
            "framesScored": c.face_frames, "visible": c.faces_visible, "found": c.faces_found,
            "foundShare": round(c.faces_found / c.faces_visible, 3) if c.faces_visible else None,
            "framesWithEveryFace": round(c.frames_all_found / c.face_frames, 3) if c.face_frames else None,
            "appearDelaysS": appear_delays(c.face_log, TRUTH_FPS),
        }
    if proc:
        summary["server"]["rssMiB"] = {
            "start": round(rss[0], 1) if rss else None,
            "max": round(max(rss), 1) if rss else None,
            "end": round(rss[-1], 1) if rss else None,
        }
        summary["server"]["exitCode"] = rc
        summary["server"]["stderrLog"] = stderr_log
    print(json.dumps(summary, indent=2))
    return 1 if summary["errors"] or (proc and rc not in (0, -signal.SIGTERM)) else 0


if __name__ == "__main__":
    sys.exit(main())
