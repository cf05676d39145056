"""Continuous recording (`record.enabled`, issue 26): segments of the main H.264 rendition in
<data-dir>/recordings, cut at keyframes with no frame between two, listed and served with byte
ranges, pointed to by events, and kept (measured) after a kill -9."""

import json
import time
from pathlib import Path

import pytest

from clipfile import FFPROBE, ffprobe_stream, read_clip, whole_fragment_samples
from conftest import http_get, metric

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True

CONFIG = """record:
  enabled: true
  segmentSeconds: 5
video:
  keyframeSeconds: 1
"""


@pytest.fixture
def ffprobe():
    if FFPROBE is None:
        pytest.skip("ffprobe (Debian's ffmpeg) is not installed: recordings cannot be checked")


def get_json(server, path):
    status, _, body = http_get(server.port, path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def wait_for(what, seconds, description):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.25)
    pytest.fail(f"waited {seconds} s for {description}")


def seqs(path: Path) -> list[int]:
    frames = read_clip(path)
    assert frames and frames[0].keyframe and frames[0].idr, f"{path.name} does not start on an IDR"
    assert all(isinstance(f.sei, dict) for f in frames), f"{path.name}: an access unit without one Sightline SEI"
    return [f.sei["seq"] for f in frames]


def test_segments_follow_each_other_without_a_lost_frame_and_are_served_with_ranges(sightline, tmp_path, ffprobe):
    config = tmp_path / "record.yaml"
    config.write_text(CONFIG)
    server = sightline("--config", config, source="demo")
    server.wait_live()
    listing = wait_for(lambda: (lambda l: l if sum(s["complete"] for s in l["segments"]) >= 2 else None)(
        get_json(server, "/api/recordings")), 30, "two finished segments")
    segments = listing["segments"]
    assert listing["status"]["state"] == "recording" and listing["status"]["failed"] == 0, listing["status"]
    finished = [s for s in segments if s["complete"]]
    directory = server.data_dir / "recordings"
    runs = []
    for segment in finished:
        path = directory / segment["name"]
        assert path.stat().st_size == segment["bytes"], segment
        stream, errors = ffprobe_stream(path)
        assert stream["codec_name"] == "h264" and stream["nb_read_packets"] > 0, (stream, errors)
        runs.append(seqs(path))
        assert abs(segment["duration"] - 5) <= 1.1, f"cut at the first keyframe 5 s in (keyframes every 1 s): {segment}"
    # Each segment starts where the previous one ended: the gap at a boundary is no larger than
    # any gap inside a segment (the H.264 sink may skip a frame when busy; the writer loses none).
    inner = max(b - a for run in runs for a, b in zip(run, run[1:]))
    for previous, following in zip(runs, runs[1:]):
        gap = following[0] - previous[-1]
        assert 1 <= gap <= max(1, inner), f"boundary gap {gap} (inner gaps at most {inner})"
    for a, b in zip(finished, finished[1:]):
        assert a["start"] + a["duration"] <= b["start"] + 0.1, (a, b)

    name = finished[0]["name"]
    data = (directory / name).read_bytes()
    status, headers, body = http_get(server.port, f"/api/recordings/{name}", headers={"Range": "bytes=-500"})
    assert status == 206 and body == data[-500:] and headers.get("content-range") == f"bytes {len(data) - 500}-{len(data) - 1}/{len(data)}"
    status, headers, body = http_get(server.port, f"/api/recordings/{name}")
    assert status == 200 and body == data and headers.get("content-type") == "video/mp4"
    assert http_get(server.port, "/api/recordings/events.mp4")[0] == 400
    assert http_get(server.port, "/api/recordings/1000000000.000_5000.mp4")[0] == 404
    assert http_get(server.port, "/api/recordings?from=soon")[0] == 400

    # An event points into the segments its span lies in.
    event = get_json(server, "/api/events?kind=template&limit=1")["events"][0]
    detail = get_json(server, f"/api/events/{event['id']}")
    names = {s["name"] for s in get_json(server, "/api/recordings")["segments"]}
    refs = detail["recordings"]
    assert refs and all(r["name"] in names and r["path"] == f"/api/recordings/{r['name']}" for r in refs), refs
    assert refs[0]["offset"] >= 0
    state = get_json(server, "/api/state")
    assert state["recording"]["segments"] >= 2 and state["recording"]["bytes"] > 0
    status, _, metrics = http_get(server.port, "/metrics")
    assert metric(metrics.decode(), "sightline_recording_writing") == 1


def test_a_segment_cut_by_kill_9_is_kept_measured_and_served_after_a_restart(sightline, tmp_path, ffprobe):
    config = tmp_path / "record.yaml"
    config.write_text(CONFIG)
    data_dir = tmp_path / "kept"
    server = sightline("--config", config, "--data-dir", data_dir, source="demo")
    server.wait_live()
    def young_segment():
        listing = get_json(server, "/api/recordings")
        status = listing["status"]
        # `current` is omitted while no segment is being written (before the first keyframe, or
        # between closing one segment and opening the next on the same keyframe).
        name = status.get("current")
        if not name or status["segments"] < 1:
            return None
        current = next((s for s in listing["segments"] if s["name"] == name), None)
        # Young enough to be still written after the wait below (segments last 5 s).
        return name if current and current["duration"] < 1.5 else None

    current = wait_for(young_segment, 40, "a finished segment and a young one being written")
    path = data_dir / "recordings" / current
    # Fragments of the current segment reach the disk: wait for one more whole fragment in the
    # file than it held when found (so the cut comes in a segment that has some).
    held = len(whole_fragment_samples(path.read_bytes())[0]) if path.exists() else 0
    wait_for(lambda: path.exists() and len(whole_fragment_samples(path.read_bytes())[0]) > held, 20,
             f"a whole fragment more of {current} on disk (it held {held})")
    server.kill()
    stream, _ = ffprobe_stream(path)
    packets = stream["nb_read_packets"]
    assert packets > 0, "the cut segment plays to its last fragment"

    again = sightline("--config", config, "--data-dir", data_dir, source="demo")
    again.wait_live()
    listed = {s["name"]: s for s in get_json(again, "/api/recordings")["segments"]}
    assert current in listed and not listed[current]["complete"], listed.get(current)
    assert listed[current]["bytes"] == path.stat().st_size
    assert listed[current]["duration"] > 0
    assert all(s["complete"] for n, s in listed.items() if n.count("_") == 1), "finished ones keep their length"
    status, _, body = http_get(again.port, f"/api/recordings/{current}")
    assert status == 200 and body == path.read_bytes()
