#!/usr/bin/env python3
"""The plain loop Sightline's template figure is held against (issue 39): a Python/OpenCV
loop that reads a video at its own frame rate (looping at its end) and finds one template in
every frame the way the iOS tutorial does: the frame in gray shrunk by 0.35, the template at
nine scales (1, 1.25^1..4, 0.75^1..4) matched with TM_CCOEFF_NORMED, the best place over 0.7
kept. Nothing is sent: Sightline is measured beside it with nobody watching.

  scripts/template-loop.py VIDEO TEMPLATE [--seconds 30]

Prints its CPU use (cores over the time it ran) and the frames it matched a second.
Needs: OpenCV for Python (pip install opencv-python-headless, or Debian's python3-opencv).
"""

from __future__ import annotations

import argparse
import resource
import time

import cv2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("video")
    ap.add_argument("template")
    ap.add_argument("--seconds", type=float, default=30, help="how long to run (at most 600)")
    args = ap.parse_args()
    seconds = min(600.0, max(1.0, args.seconds))
    cv2.setNumThreads(1)
    template = cv2.imread(args.template, cv2.IMREAD_GRAYSCALE)
    assert template is not None, f"cannot read {args.template}"
    scales = [1.0] + [1.25 ** n for n in range(1, 5)] + [0.75 ** n for n in range(1, 5)]
    shrink = 0.35
    capture = cv2.VideoCapture(args.video)
    fps = capture.get(cv2.CAP_PROP_FPS) or 25
    interval = 1 / fps
    start = time.monotonic()
    next_at = start
    frames = found = 0
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    while time.monotonic() - start < seconds:
        ok, frame = capture.read()
        if not ok:
            capture.set(cv2.CAP_PROP_POS_FRAMES, 0)
            continue
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        small = cv2.resize(gray, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA)
        best = (0.0, None)
        for scale in scales:
            side = shrink * scale
            t = cv2.resize(template, None, fx=side, fy=side, interpolation=cv2.INTER_AREA)
            if t.shape[0] < 6 or t.shape[1] < 6 or t.shape[0] > small.shape[0] or t.shape[1] > small.shape[1]:
                continue
            _, score, _, place = cv2.minMaxLoc(cv2.matchTemplate(small, t, cv2.TM_CCOEFF_NORMED))
            if score > best[0]:
                best = (score, place)
        frames += 1
        found += best[0] >= 0.7
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.monotonic()
    elapsed = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime
    print(f"template loop: {cpu / elapsed:.3f} cores, {frames / elapsed:.1f} frames a second matched, "
          f"template found in {found} of {frames}")


if __name__ == "__main__":
    main()
