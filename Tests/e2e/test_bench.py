"""`sightline bench` measures the graph `serve` runs: same stages, same face
detector, same templates, from the same flags (the figures themselves go in
the issue notes; no timing thresholds here)."""

import json
import subprocess

import pytest

from conftest import REPO, http_get, server_binary, YUNET, yunet_model



def run_bench(*args, timeout=120):
    done = subprocess.run([str(server_binary()), "bench", *map(str, args)], cwd=REPO, capture_output=True,
                          timeout=timeout, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("faces", ["yunet", "haar", "off"])
def test_bench_reports_the_graph_serve_runs(sightline, testdata, tmp_path, faces):
    if faces == "yunet":
        yunet_model()
    source = f"file:{testdata}/faces/grace_hopper.jpg?fps=15"
    flags = {"yunet": ["--face-model", YUNET], "haar": ["--face-model", "haar"], "off": ["--no-faces"]}[faces]
    template = testdata / "templates" / "box.png"
    common = [*flags, "--template", f"{template}=box"]

    report = run_bench(*common, "--source", source, "--data-dir", tmp_path / "bench-data",
                       "--frames", 10, "--live-seconds", 2)
    server = sightline(*common, "--data-dir", tmp_path / "serve-data", source=source)
    server.wait_live()
    state = json.loads(http_get(server.port, "/api/state")[2])

    graph = report["graph"]
    assert graph["source"] == source
    # The state adds how detection is paced now (mode, passes) and where its time went; the graph has the settings.
    live = {"mode", "passes", "passesPerSecond", "sceneCuts", "finePasses", "cutFramePasses", "passSeconds", "passCounts"}
    served = {k: v for k, v in state["faces"].items() if k not in live} if state.get("faces") else None
    assert graph.get("faces") == served, (graph, state.get("faces"))
    assert graph["templates"] == [t["name"] for t in state["templates"]] == ["box"]
    expected = ["convert"] + (["faces"] if faces != "off" else []) + ["template", "encode"]
    assert graph["stages"] == expected
    # Every stage the graph names was timed, frame by frame and live.
    assert set(expected) <= set(report["stagesMs"]), report["stagesMs"].keys()
    live = report["live"]
    assert all(live["stages"][name]["count"] > 0 for name in expected), live["stages"]
    assert live["processedFPS"] > 0 and report["width"] == state["source"]["width"]
    if faces == "off":
        assert "faceDetectionsPerSecond" not in live and "faces" not in state
    else:
        assert live["faceDetectionsPerSecond"] > 0
