#!/usr/bin/env python3
"""Write the frame-code test video and its template patch (see Tests/browser/frame_code.py):
every frame shows its index mod 64 as a row of blocks and a patch at a place that says the same.

  python3 scripts/make_frame_code_video.py OUT_DIR [--frames N] [--fps F]
  sightline serve --source file:OUT_DIR/frame-code.mp4 --template OUT_DIR/frame-code-patch.png=code
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "browser"))
import frame_code  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--frames", type=int, default=frame_code.PERIOD * 3)
    parser.add_argument("--fps", type=int, default=30)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    video, patch = args.out_dir / "frame-code.mp4", args.out_dir / "frame-code-patch.png"
    frame_code.write_video(video, args.frames, args.fps)
    frame_code.write_patch(patch)
    print(video)
    print(patch)


if __name__ == "__main__":
    main()
