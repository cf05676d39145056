"""Cameras added and removed at runtime by an admin (POST /api/cameras, DELETE
/api/cameras/NAME), and sources switched, kept in <data-dir>/cameras.json over the config:
a camera added streams at once on /cam/NAME/ws with its API under /api/cameras/NAME/; a
removed one's viewers are closed, its routes answer 404 and the others keep streaming; a
restart brings back what was added, leaves out what was removed (config cameras too) and
keeps switched sources; bad input gets a clear 4xx and changes nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (ADMIN, REPO, FrameLog, admin_request as request, http_get, receive_frames, server_binary,
                      ws_connect, frames_of)

SHARED_VIDEO = REPO.parent / "shared" / "testdata" / "video"
VTEST = SHARED_VIDEO / "vtest.avi"  # 768x576, 10 fps
MEGAMIND = SHARED_VIDEO / "Megamind.avi"  # 720x528


def write_config(path: Path) -> Path:
    """Two cameras; files of the shared video folder (the config's own) and of the test's folder
    (`media:`) may be added at runtime."""
    path.write_text(
        f"media: [\"{path.parent}\"]\n"
        "cameras:\n"
        "  front:\n"
        f"    source: {{spec: \"demo?fps=15\", offer: [\"file:{VTEST}\"]}}\n"
        "  yard:\n"
        f"    source: {{spec: \"file:{VTEST}\"}}\n"
        "    faces: {enabled: false}\n")
    return path


def make_video(path: Path) -> Path:
    """A 4 s 320x240 H.264 MP4 of ffmpeg's test pattern, 10 fps."""
    done = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10",
                           "-t", "4", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return path


def listing(server) -> dict:
    status, answer = request(server, "GET", "/api/cameras")
    assert status == 200, answer
    return {c["name"]: c for c in answer["cameras"]}


def names(server) -> list[str]:
    status, answer = request(server, "GET", "/api/cameras")
    assert status == 200, answer
    return [c["name"] for c in answer["cameras"]]


def sizes(log: FrameLog) -> set:
    return {(m["width"], m["height"]) for m, *_ in log.pairs}


def wait_for(condition, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def start(sightline, config: Path, data: Path):
    server = sightline("--config", str(config), "--data-dir", str(data), source=None, wait=False)
    server.wait_bound()
    return server


def test_add_stream_remove_restart(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml")
    data = tmp_path / "data"
    mine = make_video(tmp_path / "pattern.mp4")
    server = start(sightline, config, data)
    assert names(server) == ["front", "yard"]

    # Added: a video of the shared test data and one made here; each is in the listing at once.
    status, porch = request(server, "POST", "/api/cameras", {"name": "porch", "source": f"file:{MEGAMIND}"})
    assert status == 201, porch
    assert porch["name"] == "porch" and porch["camera"] == "porch" and porch["source"] == f"file:{MEGAMIND}"
    assert porch["paths"] == {"ws": "/cam/porch/ws", "mjpeg": "/cam/porch/stream.mjpg",
                              "snapshot": "/cam/porch/snapshot.jpg", "api": "/api/cameras/porch/"}
    status, made = request(server, "POST", "/api/cameras",
                           {"name": "pattern", "source": f"file:{mine}", "camera": "test-pattern", "faces": False})
    assert status == 201, made
    assert made["camera"] == "test-pattern" and "faces" not in made, made
    # A source that cannot be opened is no error: the camera is there and says so.
    status, lost = request(server, "POST", "/api/cameras",
                           {"name": "lost", "source": f"file:{tmp_path}/sightline-no-such.mp4"})
    assert status == 201 and lost["state"] != "live", lost
    assert names(server) == ["front", "yard", "porch", "pattern", "lost"]

    # Each streams its own frames (with 0 contract violations), and answers its own API.
    assert sizes(frames_of(server, "/cam/porch/ws", 8)) == {(720, 528)}
    assert sizes(frames_of(server, "/cam/pattern/ws", 8)) == {(320, 240)}
    status, state = request(server, "GET", "/api/cameras/pattern/state")
    assert status == 200 and state["source"]["state"] == "live", state
    assert listing(server)["lost"]["state"] != "live"

    # Removed while a viewer watches: its stream ends, its routes are 404, the others go on.
    with ws_connect(server.port, "/cam/porch/ws") as viewer:
        receive_frames(viewer, FrameLog(), pairs=2, timeout=20)
        status, answer = request(server, "DELETE", "/api/cameras/porch")
        assert status == 200 and answer == {"removed": "porch"}, answer
        from websockets.exceptions import ConnectionClosed
        closed_by = None
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                viewer.recv(timeout=deadline - time.monotonic())
        except ConnectionClosed as closed:
            closed_by = closed
        assert closed_by is not None, "the removed camera's viewer was not closed"
        assert closed_by.rcvd is not None and closed_by.rcvd.code == 1001, closed_by
    for path in ("/cam/porch/snapshot.jpg", "/cam/porch/stream.mjpg", "/api/cameras/porch/state",
                 "/api/cameras/porch/templates"):
        assert http_get(server.port, path, headers=ADMIN)[0] == 404, path
    # No upgrade for a camera that is gone (as for one that never was).
    from websockets.exceptions import InvalidHandshake
    with pytest.raises(InvalidHandshake):
        ws_connect(server.port, "/cam/porch/ws").close()
    assert names(server) == ["front", "yard", "pattern", "lost"]
    assert sizes(frames_of(server, "/cam/pattern/ws", 5)) == {(320, 240)}
    assert sizes(frames_of(server, "/ws", 5)) == {(640, 480)}
    assert (data / "cameras" / "porch").is_dir(), "a removed camera's data directory is kept"

    # A camera whose source never opened, and one of the config, are removed the same way.
    assert request(server, "DELETE", "/api/cameras/lost")[0] == 200
    assert request(server, "DELETE", "/api/cameras/yard")[0] == 200
    # The first camera (the unprefixed routes') stays; a camera that does not exist is 404.
    status, answer = request(server, "DELETE", "/api/cameras/front")
    assert status == 409 and "unprefixed" in answer["detail"], answer
    assert request(server, "DELETE", "/api/cameras/porch")[0] == 404

    # Switched sources are kept: front (a config camera) to the offered video, pattern (added) to the demo.
    status, answer = request(server, "POST", "/api/cameras/front/source", {"spec": f"file:{VTEST}"})
    assert status == 200, answer
    status, answer = request(server, "POST", "/api/cameras/pattern/source", {"spec": "demo"})
    assert status == 200, answer
    # The switch happens at the next frame boundary.
    wait_for(lambda: listing(server)["pattern"].get("width") == 640, "pattern on the demo")
    assert sizes(frames_of(server, "/cam/pattern/ws", 5)) == {(640, 480)}
    server.stop_checked()

    # After a restart: added ones back, removed ones out (yard of the config too), sources as switched.
    again = start(sightline, config, data)
    assert names(again) == ["front", "pattern"]
    cameras = listing(again)
    assert cameras["front"]["source"] == f"file:{VTEST}" and cameras["pattern"]["source"] == "demo"
    assert cameras["pattern"]["camera"] == "test-pattern" and "faces" not in cameras["pattern"]
    assert sizes(frames_of(again, "/cam/front/ws", 5)) == {(768, 576)}
    assert sizes(frames_of(again, "/cam/pattern/ws", 5)) == {(640, 480)}
    assert http_get(again.port, "/api/cameras/yard/state", headers=ADMIN)[0] == 404

    # A config camera removed comes back with the config's settings (faces off) and the source given.
    status, yard = request(again, "POST", "/api/cameras", {"name": "yard", "source": f"file:{MEGAMIND}"})
    assert status == 201 and "faces" not in yard, yard
    assert sizes(frames_of(again, "/cam/yard/ws", 5)) == {(720, 528)}
    again.stop_checked()
    third = start(sightline, config, data)
    assert names(third) == ["front", "yard", "pattern"], "a config camera keeps its place in the config's order"
    assert listing(third)["yard"]["source"] == f"file:{MEGAMIND}"


def test_bad_requests_are_refused_and_change_nothing(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml")
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run([str(server_binary()), "token", "add", "kitchen", "--role", "viewer", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    viewer = done.stdout.strip()
    server = start(sightline, config, data)
    good = {"name": "porch", "source": "demo"}
    cases = [
        ({"name": "b@d", "source": "demo"}, ADMIN, 400, "invalid name"),
        ({"name": "x" * 65, "source": "demo"}, ADMIN, 400, "invalid name"),
        ({"name": "YARD", "source": "demo"}, ADMIN, 409, "camera exists"),
        ({"name": "porch", "source": "bogus:thing"}, ADMIN, 400, "bad source"),
        ({"name": "porch", "source": "demo", "camera": "sp ace"}, ADMIN, 400, "bad camera"),
        ({"name": "porch", "source": "demo", "fps": 3}, ADMIN, 400, "bad body"),
        ({"name": "porch"}, ADMIN, 400, "bad body"),
        ({"name": 3, "source": "demo"}, ADMIN, 400, "bad body"),
        (b'{"name": "porch", "source": ', ADMIN, 400, "bad body"),
        (b"[1, 2]", ADMIN, 400, "bad body"),
        (good, {}, 401, None),
        (good, {"authorization": f"Bearer {viewer}"}, 403, None),
        (good, {**ADMIN, "origin": "http://evil.example"}, 403, None),
    ]
    for body, headers, expected, error in cases:
        status, answer = request(server, "POST", "/api/cameras", body, headers=headers)
        assert status == expected, (body, headers, status, answer)
        if error:
            assert answer["error"] == error and answer["detail"], answer
    for headers, expected in (({}, 401), ({"authorization": f"Bearer {viewer}"}, 403)):
        assert request(server, "DELETE", "/api/cameras/yard", headers=headers)[0] == expected
    assert names(server) == ["front", "yard"]
    assert not (data / "cameras.json").exists(), "nothing was changed, so nothing was saved"
    assert sizes(frames_of(server, "/cam/yard/ws", 3)) == {(768, 576)}


def test_a_malformed_state_file_is_set_aside(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml")
    data = tmp_path / "data"
    data.mkdir()
    (data / "cameras.json").write_text('{"added": [{"name": "porch"')
    server = start(sightline, config, data)
    assert names(server) == ["front", "yard"], "the config's cameras start"
    aside = list(data.glob("cameras.json.malformed-*"))
    assert len(aside) == 1 and aside[0].read_text() == '{"added": [{"name": "porch"', aside
    assert not (data / "cameras.json").exists()
    deadline = time.monotonic() + 5
    while b"is malformed" not in server.stderr_path.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert b"is malformed" in server.stderr_path.read_bytes(), server.stderr_tail()
    # Changes are saved again from here.
    assert request(server, "POST", "/api/cameras", {"name": "porch", "source": "demo"})[0] == 201
    assert json.loads((data / "cameras.json").read_text())["added"] == [{"name": "porch", "source": "demo"}]


def test_an_added_camera_that_cannot_be_made_at_start_is_left_out(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml")
    data = tmp_path / "data"
    server = start(sightline, config, data)
    assert request(server, "POST", "/api/cameras", {"name": "porch", "source": "demo"})[0] == 201
    server.stop_checked()
    # Its data directory is now a file: the camera cannot be made; the config's cameras start anyway.
    shutil.rmtree(data / "cameras" / "porch")
    (data / "cameras" / "porch").write_text("not a directory\n")
    again = start(sightline, config, data)
    assert names(again) == ["front", "yard"]
    assert b"'porch' added at runtime cannot be made" in again.stderr_path.read_bytes(), again.stderr_tail()
    assert [c["name"] for c in json.loads((data / "cameras.json").read_text())["added"]] == ["porch"]
    # Removing it forgets it.
    status, answer = request(again, "DELETE", "/api/cameras/porch")
    assert status == 200 and answer == {"removed": "porch"}, answer
    assert json.loads((data / "cameras.json").read_text())["added"] == []
    assert request(again, "DELETE", "/api/cameras/porch")[0] == 404
