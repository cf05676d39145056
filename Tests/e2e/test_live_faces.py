"""The live face evaluation of issue 13 on a short clip, against the real server with a real
WebSocket client: the labelled shared photos turning through 50 degrees, zooming and drifting,
cut from one to the next (scripts/live-faces.py makes the clip and scores what /ws sends,
frame by frame, by the code drawn in each frame). The clip is made at 10 fps (the faces turn
1.7 degrees a frame, as the full video's 17 degrees a second at 10 detection passes a second)
and played at 6 fps, so every frame can get a detection pass even on a slow machine: the test
scores finding and following, not this machine's speed. Thresholds are set from measured runs
with room to spare (found 0.968, no stray box, first boxed after a median of 0 frames, every
face boxed, roll median 2.7 degrees on this machine, the same on every run, and under two busy
loops beside it); the full video's figures belong in the note."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import http_get, metric

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True

REPO = Path(__file__).resolve().parents[2]


def live_faces():
    spec = importlib.util.spec_from_file_location("live_faces", REPO / "scripts" / "live-faces.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_faces_are_found_at_once_gone_at_a_cut_and_keep_their_ids(sightline, testdata, tmp_path):
    faces = testdata / "faces" / "faces.json"
    if not faces.is_file():
        pytest.skip(f"labelled photos not found at {faces}")
    clip = tmp_path / "turn.avi"
    subprocess.run([sys.executable, str(REPO / "scripts" / "live-faces.py"), "make", str(clip), "--fps", "10",
                    "--seconds", "9", "--shared", str(testdata.parent)], check=True, timeout=120)
    module = live_faces()
    truth = json.loads(clip.with_suffix(".truth.json").read_text())
    scorer = module.Scorer(truth)
    server = sightline(source=f"file:{clip}?fps=6")
    import asyncio
    received = asyncio.run(module.read_stream(server.port, 16.0, scorer))
    result = scorer.summary()
    print(json.dumps(result))
    assert received >= 60, result
    assert result["facesFound"] >= 0.85, result
    assert result["boxesOnNoFacePerFrame"] <= 0.1, result
    assert result["boxesOnNoFaceRightAfterCuts"]["frames"] >= 2, result
    assert result["boxesOnNoFaceRightAfterCuts"]["boxes"] == 0, result
    # Found at once: a new face boxed within 2 frames of appearing (median). The slowest face is
    # a tilted one that only a fine pass finds (about four times a usual pass's work): on a quiet
    # machine it is boxed within 2-5 frames, but how many frames its fine pass takes is the
    # machine's speed (6-8 frames with builds and browsers beside it, 11 with `make test`'s four
    # e2e workers), so the test asks that every face that appeared was boxed, and prints the
    # slowest; `scripts/live-faces.py` on the full video gives the figure.
    assert result["framesUntilBoxed"]["median"] <= 2, result
    never_boxed = sorted(set(scorer.first_seen) - set(scorer.first_found))
    assert never_boxed == [], (never_boxed, result)
    assert result["rollErrorDeg"]["median"] <= 4.5, result
    assert result["idSwitches"] == 0, result
    # /api/state and /metrics count the kinds of passes: a quick pass on the first frame and on
    # each cut's frame (three pictures in the clip), and three fine passes after each.
    faces = server.state()["faces"]
    assert faces["sceneCuts"] >= 2, faces
    assert faces["cutFramePasses"] >= faces["sceneCuts"] + 1, faces
    assert faces["finePasses"] >= 3 * (faces["sceneCuts"] + 1), faces
    assert faces["passes"] > faces["finePasses"] + faces["cutFramePasses"], faces
    metrics = http_get(server.port, "/metrics")[2].decode()
    assert metric(metrics, "sightline_face_cut_frame_passes_total") == faces['cutFramePasses']
    # Where the worker's passes spent their time, part by part, and what they read: the frame-wide
    # detection ran on every pass, the first face of each new picture was read by a crop, and
    # /metrics gives the same seconds as /api/state.
    parts, counts = faces["passSeconds"], faces["passCounts"]
    assert set(parts) == {"read", "detect", "crops", "personCheck", "attributes", "other", "recognition"}, parts
    assert parts["detect"] > 0 and parts["crops"] > 0, parts
    assert 0 < counts["passes"] <= faces["passes"], (counts, faces)
    assert counts["rereads"] >= faces["sceneCuts"] + 1 and counts["cropForwards"] >= counts["rereads"], counts
    # /metrics is read after /api/state: its seconds are the same or later.
    assert metric(metrics, "sightline_face_pass_seconds_total", '{part="detect"}') >= parts["detect"] - 1e-3
    server.stop_checked()
