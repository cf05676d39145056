#!/usr/bin/env python3
"""The plain loop Sightline's crowd figure is held against (issue 28): a Python/OpenCV
server that reads a video at its frame rate, runs YuNet-320 on every frame, encodes the
frame as a JPEG once and sends every WebSocket viewer on /ws the frame's boxes (JSON with
`seq`, `capturedAt` and `detections`, as Sightline's /ws does) followed by the JPEG; a
viewer still busy with the last frame skips this one. No tracking, ids, attributes,
template or clips: the least a server that boxes faces for viewers does.

  scripts/peer-loop.py VIDEO [--port 8090] [--seconds 60]
  scripts/loadtest.py --url http://127.0.0.1:8090 --clients 10 --seconds 40

Loopback only. Prints its own CPU use (cores, over the time it served) on exit.
Needs: pip install opencv-python-headless websockets (or Debian's python3-opencv 4.6, the
OpenCV Sightline itself links, with numpy<2: `PYTHONPATH=<a folder holding only Debian's
cv2*.so> python scripts/peer-loop.py ...` from a venv with `numpy<2 websockets`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import threading
import time
from pathlib import Path

import cv2
from websockets.asyncio.server import serve

REPO = Path(__file__).resolve().parents[1]


class DnnYuNet:
    """YuNet-2023mar through cv2.dnn on a fixed square input, its outputs decoded as
    OpenCV 4.8's FaceDetectorYN does (score = sqrt(cls * obj), strides 8/16/32, NMS 0.3)."""

    def __init__(self, model: Path, side: int, score: float = 0.6) -> None:
        import numpy as np
        self.np, self.side, self.score = np, side, score
        self.net = cv2.dnn.readNet(str(model))
        self.names = [f"{k}_{s}" for s in (8, 16, 32) for k in ("cls", "obj", "bbox", "kps")]

    def detect(self, image):
        np = self.np
        blob = cv2.dnn.blobFromImage(image)
        self.net.setInput(blob)
        outs = dict(zip(self.names, self.net.forward(self.names)))
        boxes, scores = [], []
        for s in (8, 16, 32):
            cols = self.side // s
            cls, obj = outs[f"cls_{s}"].reshape(-1), outs[f"obj_{s}"].reshape(-1)
            bbox = outs[f"bbox_{s}"].reshape(-1, 4)
            score = np.sqrt(np.clip(cls, 0, 1) * np.clip(obj, 0, 1))
            keep = np.nonzero(score >= self.score)[0]
            for i in keep:
                c, r = i % cols, i // cols
                cx, cy = (c + bbox[i, 0]) * s, (r + bbox[i, 1]) * s
                w, h = np.exp(bbox[i, 2]) * s, np.exp(bbox[i, 3]) * s
                boxes.append([float(cx - w / 2), float(cy - h / 2), float(w), float(h)])
                scores.append(float(score[i]))
        picked = cv2.dnn.NMSBoxes(boxes, scores, self.score, 0.3) if boxes else []
        faces = [boxes[i] + [0.0] * 10 + [scores[i]] for i in np.array(picked).reshape(-1)]
        return 1, faces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("video", type=Path)
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument("--seconds", type=float, default=60, help="serve this long, then exit (at most 3600)")
    ap.add_argument("--model", type=Path, default=REPO / "models" / "face_detection_yunet_2023mar_320.onnx")
    ap.add_argument("--input-width", type=int, default=320)
    ap.add_argument("--quality", type=int, default=80)
    ap.add_argument("--dnn", action="store_true",
                    help="run the model through cv2.dnn and decode its 12 outputs here, as Sightline does, "
                         "instead of cv2.FaceDetectorYN (which OpenCV 4.6 cannot use with the 2023mar model)")
    args = ap.parse_args()
    cv2.setNumThreads(1)

    viewers: dict = {}          # websocket -> (event "idle", latest frame slot)
    stop = threading.Event()
    loop_ready = threading.Event()
    state: dict = {}

    def capture_loop() -> None:
        loop_ready.wait()
        loop = state["loop"]
        capture = cv2.VideoCapture(str(args.video))
        fps = capture.get(cv2.CAP_PROP_FPS) or 25
        ok, image = capture.read()
        if not ok:
            raise SystemExit(f"cannot read {args.video}")
        height, width = image.shape[:2]
        scale = args.input_width / width
        size = (args.input_width, round(height * scale))
        # OpenCV before 4.8 (Debian 12's 4.6) runs the 2023mar model only on
        # sides that are multiples of 32: the picture is padded below to one.
        padded = (size[0] + (-size[0]) % 32, size[1] + (-size[1]) % 32)
        if args.dnn:
            padded = (args.input_width, args.input_width)
            detector = DnnYuNet(args.model, args.input_width)
        else:
            detector = cv2.FaceDetectorYN.create(str(args.model), "", padded, 0.6, 0.3, 5000)
        seq, due = 0, time.monotonic()
        while not stop.is_set():
            ok, image = capture.read()
            if not ok:
                capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
                continue
            captured = time.time()
            seq += 1
            small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
            if padded != size:
                small = cv2.copyMakeBorder(small, 0, padded[1] - size[1], 0, padded[0] - size[0], cv2.BORDER_CONSTANT)
            _, faces = detector.detect(small)
            detections = []
            for f in (faces if faces is not None else []):
                x, y, w, h = (float(v) / scale for v in f[:4])
                detections.append({"kind": "face", "score": round(float(f[14]), 3),
                                   "box": {"x": x / width, "y": y / height, "w": w / width, "h": h / height}})
            jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, args.quality])[1].tobytes()
            meta = json.dumps({"type": "frame", "seq": seq, "capturedAt": captured, "width": width,
                               "height": height, "jpegBytes": len(jpeg), "detections": detections})
            state["frames"] = seq
            loop.call_soon_threadsafe(publish, meta, jpeg)
            due += 1 / fps
            time.sleep(max(0.0, due - time.monotonic()))

    def publish(meta: str, jpeg: bytes) -> None:
        for ws, slot in list(viewers.items()):
            if slot["busy"]:
                continue
            slot["busy"] = True
            asyncio.ensure_future(send(ws, slot, meta, jpeg))

    async def send(ws, slot, meta, jpeg) -> None:
        try:
            await ws.send(meta)
            await ws.send(jpeg)
        except Exception:
            pass
        finally:
            slot["busy"] = False

    async def handler(ws) -> None:
        viewers[ws] = {"busy": False}
        try:
            await ws.wait_closed()
        finally:
            viewers.pop(ws, None)

    def answer_http(connection, request):
        # scripts/loadtest.py asks /api/state before and after; the loop has only a frame count.
        if request.path == "/api/state":
            return connection.respond(200, json.dumps({"framesSent": state.get("frames", 0)}) + "\n")
        return None

    async def run() -> None:
        state["loop"] = asyncio.get_running_loop()
        loop_ready.set()
        async with serve(handler, "127.0.0.1", args.port, max_size=None, process_request=answer_http):
            await asyncio.sleep(min(args.seconds, 3600))
        stop.set()

    started, used = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    worker = threading.Thread(target=capture_loop, daemon=True)
    worker.start()
    asyncio.run(run())
    worker.join(timeout=5)
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    print(json.dumps({"video": str(args.video), "seconds": round(time.monotonic() - started, 1),
                      "cores": round(cpu / (time.monotonic() - started), 3), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
