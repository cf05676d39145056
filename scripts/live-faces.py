#!/usr/bin/env python3
"""Live face evaluation: moving video made from the labelled shared photos, scored as a viewer sees it.

  scripts/live-faces.py make OUT.avi [--seconds 24] [--fps 25] [--shared ../shared] [--labels MY.json]
  scripts/live-faces.py score OUT.avi [--seconds 20] [--bin .build/release/sightline] [--server-arg=...] [--misses F]
  scripts/live-faces.py python-loop OUT.avi [--input-width 640]   (the same scores for OpenCV's YuNet on
      every frame; needs the opencv-python-headless wheel, which the project does not install)

`make` shows the four labelled photos of ../shared/testdata/faces/faces.json (18 faces) one
after another for 3 s each, cut from one to the next; during its 3 s each photo turns
steadily through 50 degrees of roll (-25 to +25, about 17 degrees a second, a head tilting),
zooms from 1.0 to 1.5 and drifts 60 px. Each frame carries its index as a 16-bit code in its
top-left corner (as scripts/make-face-pan.py draws it), and OUT.truth.json holds every face of
every frame: its box (normalized, the labelled box turned and zoomed with the photo), its roll
(the labelled roll minus the turn; degrees, clockwise positive), whether it is wholly inside
the frame, and a key that names the face within this appearance of its photo. With --labels,
the photos are your own (a file in faces.json's format, the photos beside it), shown in its order.

`score` starts `sightline serve --source file:OUT.avi` on a free loopback port, reads /ws
with one WebSocket client for --seconds, reads each frame's code and scores the face boxes
of that frame against its truth:
- found: faces wholly inside the frame boxed at IoU >= 0.4 (greedy pairing), as a share;
- missed boxed off the mark: faces wholly inside the frame whose nearest box overlaps them by IoU
  0.1-0.4 only (a box trailing a moving, zooming or turning face), as a share;
- boxes on no face, per frame: face boxes whose IoU with every face in the frame (wholly
  inside or not) is below 0.1;
- roll error (|reported - true|, degrees) of the found faces: median and p90;
- frames until first boxed: per face and appearance, frames from the first frame it is wholly
  inside to the first received frame in which it is found (median, max; faces never found
  count as the appearance's length);
- id switches: within an appearance, how often the id on a found face changes;
- boxes on no face right after cuts: on the first two frames of each appearance but the first.
It prints one JSON object. `python-loop` computes the same figures for a plain loop that runs
OpenCV's FaceDetectorYN on every frame of the file (no tracker), the baseline of issue 13.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "Tests" / "e2e"))
sys.path.insert(0, str(REPO / "scripts"))
from scenes import jpeg_bytes, write_mjpeg_avi  # noqa: E402
from loadtest import cpu_seconds, free_port, stop  # noqa: E402  (a process's CPU seconds, a free loopback port, SIGTERM then kill)

import importlib  # noqa: E402

pan = importlib.import_module("make-face-pan")

WIDTH, HEIGHT = 640, 480
PHOTOS = ["2007_007763.jpg", "2008_002079.jpg", "2008_001009.jpg", "2008_001322.jpg"]
HOLD_S, TURN_DEG, ZOOM_TO, DRIFT_PX = 3.0, 50.0, 1.5, 60.0


def wrap(degrees: float) -> float:
    return (degrees + 180.0) % 360.0 - 180.0


def make(args) -> None:
    if args.labels:
        # Photos of your own: every image of a file in faces.json's format, beside it.
        images = json.loads(args.labels.read_text())["images"]
        photos = [(Image.open(args.labels.parent / im["file"]).convert("RGB"), im["faces"]) for im in images]
    else:
        labels = {im["file"]: im for im in json.loads((args.shared / "testdata/faces/faces.json").read_text())["images"]}
        photos = [(Image.open(args.shared / "testdata/faces" / name).convert("RGB"), labels[name]["faces"])
                  for name in PHOTOS]
    hold = int(HOLD_S * args.fps)
    count = int(args.seconds * args.fps)
    jpegs, truth = [], []
    for index in range(count):
        appearance, k = divmod(index, hold)
        photo, faces = photos[appearance % len(photos)]
        u = k / max(1, hold - 1)                       # 0 .. 1 through the appearance
        turn = -TURN_DEG / 2 + TURN_DEG * u             # degrees counter-clockwise on screen
        fit = min(WIDTH / photo.width, HEIGHT / photo.height)
        zoom = fit * (1.0 + (ZOOM_TO - 1.0) * u)
        direction = appearance * 2.1                     # each appearance drifts its own way
        shift = (DRIFT_PX * u * math.cos(direction), DRIFT_PX * u * math.sin(direction))
        theta = math.radians(turn)
        cos, sin = math.cos(theta), math.sin(theta)
        cx, cy = photo.width / 2, photo.height / 2

        def to_frame(x: float, y: float) -> tuple[float, float]:
            # Screen turn counter-clockwise by `turn` (y points down), zoom, centre, drift.
            dx, dy = (x - cx) * zoom, (y - cy) * zoom
            return (WIDTH / 2 + shift[0] + cos * dx + sin * dy, HEIGHT / 2 + shift[1] - sin * dx + cos * dy)

        # Inverse map for PIL: frame pixel -> photo pixel.
        a, b = cos / zoom, -sin / zoom
        d, e = sin / zoom, cos / zoom
        ox, oy = WIDTH / 2 + shift[0], HEIGHT / 2 + shift[1]
        coeffs = (a, b, cx - a * ox - b * oy, d, e, cy - d * ox - e * oy)
        frame = photo.transform((WIDTH, HEIGHT), Image.AFFINE, coeffs, resample=Image.BILINEAR, fillcolor=(96, 100, 98))
        pan.draw_code(frame, index)
        jpegs.append(jpeg_bytes(frame, quality=90))
        entries = []
        for number, face in enumerate(faces):
            x, y, w, h = face["box"]
            fx, fy = to_frame(x + w / 2, y + h / 2)
            fw, fh = w * zoom, h * zoom
            box = [fx - fw / 2, fy - fh / 2, fw, fh]
            if box[0] + box[2] <= 0 or box[1] + box[3] <= 0 or box[0] >= WIDTH or box[1] >= HEIGHT:
                continue
            inside = box[0] >= 0 and box[1] >= pan.CODE_CELL and box[0] + box[2] <= WIDTH and box[1] + box[3] <= HEIGHT
            entries.append({"box": [box[0] / WIDTH, box[1] / HEIGHT, box[2] / WIDTH, box[3] / HEIGHT],
                            "roll": round(wrap(face["roll"] - turn), 2), "inside": inside,
                            "key": f"{appearance}:{number}"})
        truth.append(entries)
    write_mjpeg_avi(args.out, jpegs, WIDTH, HEIGHT, args.fps)
    args.out.with_suffix(".truth.json").write_text(json.dumps({"fps": args.fps, "width": WIDTH, "height": HEIGHT,
                                                               "holdFrames": hold, "frames": truth}))
    inside = sum(sum(1 for f in t if f["inside"]) for t in truth)
    print(f"{args.out}: {count} frames, {count // hold} appearances, {inside / count:.1f} faces wholly inside a frame",
          file=sys.stderr)


def iou(a, b) -> float:
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(0.0, w) * max(0.0, h)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Scorer:
    """Scores frames (by index) of face boxes against the truth, in the order received."""

    def __init__(self, truth: dict):
        self.frames = truth["frames"]
        self.hold = truth["holdFrames"]
        self.scored = 0
        self.visible = 0
        self.found = 0
        self.stray = 0
        self.roll_errors = []
        self.first_seen = {}    # key -> first frame index wholly inside
        self.first_found = {}   # key -> first frame index found
        self.last_id = {}       # key -> id on the face when last found
        self.switches = 0
        self.last_index = None
        self.after_cuts = 0     # frames scored among the first two of an appearance (after a cut)
        self.stray_after_cuts = 0
        self.missed_lagging = 0  # visible faces not found whose best box overlaps by IoU 0.1-0.4
        self.misses = []        # each face wholly inside and not found: where, how large, how tilted

    def add(self, index: int, boxes: list[dict]) -> None:
        """`boxes`: [{"box": [x, y, w, h], "roll": float | None, "id": int | None}] normalized."""
        if self.last_index is not None and index <= self.last_index:
            return  # the file looped: score one pass only
        self.last_index = index
        truth = self.frames[index]
        self.scored += 1
        for face in truth:
            if face["inside"]:
                self.first_seen.setdefault(face["key"], index)
        left = list(range(len(boxes)))
        for face in truth:
            if not face["inside"]:
                continue
            self.visible += 1
            best = max(left, key=lambda i: iou(boxes[i]["box"], face["box"]), default=None)
            if best is None or iou(boxes[best]["box"], face["box"]) < 0.4:
                overlap = 0.0 if best is None else iou(boxes[best]["box"], face["box"])
                if overlap >= 0.1:
                    self.missed_lagging += 1
                self.misses.append({"frame": index, "ofAppearance": index % self.hold, "key": face["key"],
                                    "widthPx": round(face["box"][2] * WIDTH), "roll": face["roll"],
                                    "bestIoU": round(overlap, 2)})
                continue
            left.remove(best)
            self.found += 1
            self.first_found.setdefault(face["key"], index)
            got = boxes[best]
            if got.get("roll") is not None:
                self.roll_errors.append(abs(wrap(got["roll"] - face["roll"])))
            if got.get("id") is not None:
                previous = self.last_id.get(face["key"])
                if previous is not None and previous != got["id"]:
                    self.switches += 1
                self.last_id[face["key"]] = got["id"]
        stray = sum(1 for i in range(len(boxes)) if all(iou(boxes[i]["box"], f["box"]) < 0.1 for f in truth))
        self.stray += stray
        if index % self.hold < 2 and index >= self.hold:
            self.after_cuts += 1
            self.stray_after_cuts += stray

    def summary(self) -> dict:
        delays = []
        for key, seen in self.first_seen.items():
            if self.last_index is None or seen > self.last_index:
                continue
            end = (seen // self.hold + 1) * self.hold - 1
            if end > self.last_index:
                continue  # the appearance was not received to its end
            found = self.first_found.get(key)
            delays.append((found - seen) if found is not None else (end - seen + 1))
        return {
            "framesScored": self.scored,
            "facesFound": round(self.found / self.visible, 3) if self.visible else None,
            # the faces not found: boxed off the mark (IoU 0.1-0.4: a box trailing the face) or not at all
            "missedBoxedOffTheMark": round(self.missed_lagging / self.visible, 3) if self.visible else None,
            "boxesOnNoFacePerFrame": round(self.stray / self.scored, 3) if self.scored else None,
            "rollErrorDeg": {"median": percentile(self.roll_errors, 0.5), "p90": percentile(self.roll_errors, 0.9),
                             "count": len(self.roll_errors)},
            "framesUntilBoxed": {"median": percentile(delays, 0.5), "max": max(delays) if delays else None,
                                 "faces": len(delays)},
            "idSwitches": self.switches,
            "boxesOnNoFaceRightAfterCuts": {"frames": self.after_cuts, "boxes": self.stray_after_cuts},
        }


async def read_stream(port: int, seconds: float, scorer: Scorer) -> int:
    from websockets.asyncio.client import connect
    received = 0
    end = time.monotonic() + seconds
    async with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10, max_size=16 << 20, compression=None,
                       proxy=None) as ws:
        meta = None
        while time.monotonic() < end:
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=max(0.1, min(5.0, end - time.monotonic())))
            except asyncio.TimeoutError:
                continue
            if isinstance(message, str):
                meta = json.loads(message)
                continue
            if meta is None:
                continue
            index = pan.read_code(Image.open(io.BytesIO(message)))
            if index < len(scorer.frames):
                boxes = [{"box": [d["box"][k] for k in ("x", "y", "w", "h")], "roll": d.get("roll"), "id": d.get("id")}
                         for d in meta.get("detections", []) if d.get("kind") == "face"]
                scorer.add(index, boxes)
                received += 1
            meta = None
    return received


def score(args) -> None:
    truth = json.loads(args.video.with_suffix(".truth.json").read_text())
    scorer = Scorer(truth)
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="sightline-live-faces-")
    cmd = [args.bin, "serve", "--source", f"file:{args.video}", "--host", "127.0.0.1", "--port", str(port),
           "--data-dir", data_dir] + args.server_arg
    err = open(Path(data_dir) / "stderr.log", "wb")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"server did not start; see {err.name}")
                time.sleep(0.1)
        used = cpu_seconds(proc.pid)
        started = time.monotonic()
        received = asyncio.run(read_stream(port, args.seconds, scorer))
        cores = (cpu_seconds(proc.pid) - used) / (time.monotonic() - started)
    finally:
        stop(proc)
    result = {"video": str(args.video), "seconds": args.seconds, "framesReceived": received,
              "cores": round(cores, 3), **scorer.summary()}
    if args.misses:
        args.misses.write_text("\n".join(json.dumps(m) for m in scorer.misses) + "\n")
    print(json.dumps(result))
    return result


def python_loop(args) -> None:
    import cv2
    truth = json.loads(args.video.with_suffix(".truth.json").read_text())
    scorer = Scorer(truth)
    capture = cv2.VideoCapture(str(args.video))
    scale = args.input_width / WIDTH
    size = (args.input_width, round(HEIGHT * scale))
    detector = cv2.FaceDetectorYN.create(str(args.model), "", size, 0.6, 0.3, 5000)
    started, used = time.monotonic(), time.process_time()
    frames = 0
    while True:
        ok, image = capture.read()
        if not ok:
            break
        index = pan.read_code(Image.fromarray(cv2.cvtColor(image, cv2.COLOR_BGR2RGB)))
        _, faces = detector.detect(cv2.resize(image, size, interpolation=cv2.INTER_AREA) if scale != 1 else image)
        boxes = []
        for f in (faces if faces is not None else []):
            f = f[:14] / scale
            x, y, w, h = f[:4]
            eyes = (f[4], f[5], f[6], f[7])  # right eye (image left), left eye (image right)
            roll = math.degrees(math.atan2(eyes[3] - eyes[1], eyes[2] - eyes[0]))
            boxes.append({"box": [x / WIDTH, y / HEIGHT, w / WIDTH, h / HEIGHT], "roll": roll, "id": None})
        if index < len(scorer.frames):
            scorer.add(index, boxes)
        frames += 1
    elapsed = time.monotonic() - started
    result = {"video": str(args.video), "framesRead": frames, "msPerFrame": round(elapsed / max(1, frames) * 1000, 2),
              "cpuSecondsPerFrame": round((time.process_time() - used) / max(1, frames), 4), **scorer.summary()}
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    m.add_argument("--seconds", type=float, default=24)
    m.add_argument("--fps", type=int, default=25)
    m.add_argument("--shared", type=Path, default=Path(os.environ.get("SIGHTLINE_SHARED", REPO.parent / "shared")))
    m.add_argument("--labels", type=Path, help="photos of your own instead: a JSON file in faces.json's format "
                   "({\"images\": [{\"file\", \"faces\": [{\"box\": [x, y, w, h], \"roll\"}]}]}), photos beside it")
    s = sub.add_parser("score")
    s.add_argument("video", type=Path)
    s.add_argument("--seconds", type=float, default=20)
    s.add_argument("--bin", default=os.environ.get("SIGHTLINE_BIN", str(REPO / ".build/release/sightline")))
    s.add_argument("--server-arg", action="append", default=[])
    s.add_argument("--misses", type=Path, help="write each face not found (frame, width, roll, best IoU) as JSON lines")
    p = sub.add_parser("python-loop")
    p.add_argument("video", type=Path)
    p.add_argument("--model", type=Path, default=REPO / "models" / "face_detection_yunet_2023mar_320.onnx")
    p.add_argument("--input-width", type=int, default=WIDTH,
                   help="the network's input width (the frame is shrunk to it; Sightline uses 320)")
    args = ap.parse_args()
    if args.command == "make":
        if not 1 <= args.seconds <= 600:
            ap.error("--seconds must be 1..600")
        make(args)
    elif args.command == "score":
        if not 1 <= args.seconds <= 600:
            ap.error("--seconds must be 1..600")
        score(args)
    else:
        python_loop(args)


if __name__ == "__main__":
    main()
