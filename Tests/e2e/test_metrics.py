"""/metrics as Prometheus reads it, with two cameras: the page parses with prometheus_client's
text parser (no family twice), every per-camera sample has a `camera` label and both cameras are
there, the server's own series (connections refused or evicted, stalled headers, uptime) are there
once without one; /cam/NAME/metrics is that camera's and the server's; a camera removed at runtime
(DELETE /api/cameras/NAME) is in no later page.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import ADMIN, admin_request, http_get

parser = pytest.importorskip(
    "prometheus_client.parser",
    reason="prometheus_client is not installed (pip install prometheus-client; scripts/setup.sh --tests installs it)")

SERVER_WIDE = {"sightline_connections_refused", "sightline_connections_evicted",
               "sightline_requests_stalled_headers", "sightline_uptime_seconds"}
# Families every camera has whatever its config (counters without their _total).
EVERY_CAMERA = {"sightline_frames_captured", "sightline_frames_processed", "sightline_frames_dropped", "sightline_fps",
                "sightline_clients", "sightline_source_up", "sightline_templates", "sightline_stage_seconds",
                "sightline_capture_to_send_seconds", "sightline_storage_write_failures", "sightline_video_viewers",
                "sightline_video_encode_seconds"}


def write_config(path: Path) -> Path:
    path.write_text(
        "cameras:\n"
        "  front:\n"
        "    source: {spec: \"demo?fps=10\"}\n"
        "  yard:\n"
        "    source: {spec: \"demo?fps=10\"}\n"
        "    faces: {enabled: false}\n")
    return path


def scrape(server, path: str = "/metrics") -> dict:
    """{family name: family} of the page at `path`, parsed by prometheus_client; no family twice."""
    status, headers, body = http_get(server.port, path, headers=ADMIN)
    assert status == 200, body[:300]
    assert headers.get("content-type", "").startswith("text/plain; version=0.0.4"), headers
    families = list(parser.text_string_to_metric_families(body.decode()))
    names = [f.name for f in families]
    assert len(names) == len(set(names)), f"a family twice: {sorted(n for n in names if names.count(n) > 1)}"
    return {f.name: f for f in families}


def cameras_of(families: dict) -> dict:
    """{family: set of `camera` label values} of the per-camera families; asserts every sample of
    those has one and the server's own have none, once."""
    seen = {}
    for name, family in families.items():
        if name in SERVER_WIDE:
            assert len(family.samples) == 1, family.samples
            assert "camera" not in family.samples[0].labels, family.samples
            continue
        assert family.samples, f"{name} has no samples"
        for sample in family.samples:
            assert sample.labels.get("camera"), f"{sample.name}{sample.labels} has no camera label"
        seen[name] = {s.labels["camera"] for s in family.samples}
    return seen


def test_metrics_label_every_camera_and_forget_a_removed_one(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml")
    server = sightline("--config", str(config), "--data-dir", str(tmp_path / "data"), source=None, wait=False)
    server.wait_bound()
    deadline = time.monotonic() + 20
    while True:
        families = scrape(server)
        captured = {s.labels["camera"]: s.value for s in families["sightline_frames_captured"].samples
                    if s.name == "sightline_frames_captured_total"}
        if captured.get("front", 0) > 0 and captured.get("yard", 0) > 0:
            break
        assert time.monotonic() < deadline, f"no frames from both cameras: {captured}"
        time.sleep(0.2)

    assert SERVER_WIDE <= families.keys(), SERVER_WIDE - families.keys()
    seen = cameras_of(families)
    for name in EVERY_CAMERA:
        assert seen.get(name) == {"front", "yard"}, (name, seen.get(name))
    assert set().union(*seen.values()) == {"front", "yard"}
    assert families["sightline_frames_captured"].type == "counter"
    assert families["sightline_stage_seconds"].type == "histogram"
    # Histograms recorded live: each camera's buckets end in +Inf, equal to its _count.
    for camera in ("front", "yard"):
        samples = [s for s in families["sightline_stage_seconds"].samples
                   if s.labels["camera"] == camera and s.labels["stage"] == "convert"]
        inf = [s.value for s in samples if s.name.endswith("_bucket") and s.labels["le"] == "+Inf"]
        count = [s.value for s in samples if s.name.endswith("_count")]
        assert inf == count and count[0] > 0, samples

    # One camera's page: its series, still labelled, and the server's.
    yard = scrape(server, "/cam/yard/metrics")
    assert SERVER_WIDE <= yard.keys()
    assert set().union(*cameras_of(yard).values()) == {"yard"}

    # Removed at runtime: in no later page, the other camera's and the server's series stay.
    status, answer = admin_request(server, "DELETE", "/api/cameras/yard")
    assert status == 200, answer
    after = scrape(server)
    assert SERVER_WIDE <= after.keys()
    seen = cameras_of(after)
    assert set().union(*seen.values()) == {"front"}, seen
    for name in EVERY_CAMERA:
        assert seen.get(name) == {"front"}, (name, seen.get(name))
    assert http_get(server.port, "/cam/yard/metrics", headers=ADMIN)[0] == 404
