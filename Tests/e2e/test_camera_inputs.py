"""Issue 38, on real sockets: what admins and config files may name as cameras and sources, and
what the log and /metrics say of them.

- Adding a camera and switching a source follow one set of rules: files only under a media
  folder (`--media-dir`, `media:`, the config's own files' folders) and never in the data
  directory; V4L2 devices only /dev/videoN; never the server itself (also refused at start).
- Reserved names (routes, MQTT topics, Windows devices) are refused; names compare ignoring case.
- A source's password is never logged; /metrics shows no publish path (a stream key).
- The config's `source:` may be a spec string, at the top level and per camera.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from conftest import ADMIN, TOKEN, admin_request as request, frames_of, http_get, metric, read_mjpeg_parts, server_binary

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True



def camera_names(server) -> list[str]:
    status, answer = request(server, "GET", "/api/cameras")
    assert status == 200, answer
    return [c["name"] for c in answer["cameras"]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_log(server, needle: bytes, count: int = 1, timeout: float = 20) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = server.stderr_path.read_bytes()
        if log.count(needle) >= count:
            return log
        time.sleep(0.1)
    pytest.fail(f"{needle!r} not {count} times in the log within {timeout:.0f} s\n{server.stderr_tail()}")


def test_adding_and_switching_follow_the_same_source_rules(sightline, tmp_path):
    # The media folder holds the server's data directory (tmp_path/server0/data): that stays out.
    media = tmp_path
    video = media / "clip.mp4"
    done = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=10",
                           "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(video)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (media / "passwd.mp4").symlink_to("/etc/passwd")
    server = sightline("--media-dir", str(media), source="demo?fps=10")
    token = server.data_dir / "token"
    assert token.parent.is_dir()
    me = server.port

    refused = [
        ("file:/etc/shadow", "source not allowed", "no media folder"),
        (f"file:{server.data_dir}/token", "source not allowed", "data directory"),
        (f"file:{server.data_dir}/cameras.json", "source not allowed", "data directory"),
        (f"file:{media}/passwd.mp4", "source not allowed", "no media folder"),
        (f"file:{media}/{'../' * 30}etc/passwd", "source not allowed", "no media folder"),
        ("v4l2:/dev/mem", "source not allowed", "not a video capture device"),
        ("v4l2:/dev/video0/../mem", "source not allowed", "not a video capture device"),
        (f"http://127.0.0.1:{me}/cam/demo/stream.mjpg", "source is this server", "own address and port"),
        (f"http://localhost:{me}/stream.mjpg", "source is this server", "own address and port"),
        (f"http://[::1]:{me}/stream.mjpg", "source is this server", "own address and port"),
        (f"http://0.0.0.0:{me}/stream.mjpg", "source is this server", "own address and port"),
    ]
    for spec, error, detail in refused:
        status, answer = request(server, "POST", "/api/cameras", {"name": "porch", "source": spec})
        assert status == 400 and answer["error"] == error and detail in answer["detail"], (spec, status, answer)
    assert len(camera_names(server)) == 1, "nothing was added"
    assert not (server.data_dir / "cameras.json").exists(), "nothing was saved"

    # A file in the media folder is taken; the same rules hold for switching its source.
    status, answer = request(server, "POST", "/api/cameras", {"name": "porch", "source": f"file:{video}"})
    assert status == 201, answer
    for spec, error, _ in refused:
        for path in ("/api/cameras/porch/source", "/api/source"):
            status, answer = request(server, "POST", path, {"spec": spec})
            assert status == 400 and answer["error"] == error and answer["detail"], (path, spec, status, answer)
    # Another camera's file, not offered by GET /api/sources, but in the media folder: taken, as adding takes it.
    status, answer = request(server, "POST", "/api/cameras/porch/source", {"spec": f"file:{media}/./clip.mp4?pace=max"})
    assert status == 200, answer
    status, answer = request(server, "POST", "/api/cameras/porch/source", {"spec": "demo?fps=5"})
    assert status == 200, answer


def test_a_config_source_that_is_the_server_itself_stops_the_start(tmp_path):
    port = free_port()
    env = dict(os.environ, SIGHTLINE_TOKEN=TOKEN)
    for source in (f"http://127.0.0.1:{port}/stream.mjpg", f"http://localhost:{port}/cam/front/stream.mjpg"):
        done = subprocess.run([str(server_binary()), "serve", "--host", "127.0.0.1", "--port", str(port),
                               "--data-dir", str(tmp_path / "data"), "--source", source],
                              capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
        assert done.returncode != 0, done.stderr[-2000:]
        assert "this server's own address and port" in done.stderr, done.stderr[-2000:]


def test_reserved_names_are_refused_and_names_compare_one_way(sightline, tmp_path):
    # The first camera named in the config (without one it is the host's name, which may be `vm`).
    config = tmp_path / "sightline.yaml"
    config.write_text('cameras:\n  front: "demo?fps=10"\n')
    server = sightline("--config", str(config), source=None)
    for name in ("api", "API", "ws", "cam", "metrics", "healthz", "CON", "nul", "Com1", "lpt9", "events", "stats"):
        status, answer = request(server, "POST", "/api/cameras", {"name": name, "source": "demo?fps=5"})
        assert status == 400 and answer["error"] == "invalid name" and "reserved" in answer["detail"], (name, answer)

    status, answer = request(server, "POST", "/api/cameras", {"name": "vm", "source": "demo?fps=5"})
    assert status == 201, answer
    status, answer = request(server, "POST", "/api/cameras", {"name": "VM", "source": "demo?fps=5"})
    assert status == 409 and answer["error"] == "camera exists", answer
    # Any case of its name reaches it: its API, its snapshot, switching its source.
    status, state = request(server, "GET", "/api/cameras/VM/state")
    assert status == 200 and state["source"]["spec"].startswith("demo"), state
    status, answer = request(server, "POST", "/api/cameras/Vm/source", {"spec": "demo?fps=4"})
    assert status == 200, answer
    assert request(server, "GET", "/api/cameras/nope/state")[0] == 404
    # Its streams too: a WebSocket on /cam/VM/ws and MJPEG on /cam/Vm/stream.mjpg.
    frames_of(server, "/cam/VM/ws", pairs=2)
    status, _, _, parts = read_mjpeg_parts(server.port, "/cam/Vm/stream.mjpg", nparts=2)
    assert status == 200 and len(parts) == 2, status
    status, answer = request(server, "DELETE", "/api/cameras/VM")
    assert status == 200 and answer == {"removed": "vm"}, answer
    assert "vm" not in camera_names(server)
    assert request(server, "DELETE", "/api/cameras/VM")[0] == 404
    saved = json.loads((server.data_dir / "cameras.json").read_text())
    assert saved["added"] == [], saved


def test_metrics_show_no_publish_path_or_source_secrets(sightline, tmp_path):
    closed = free_port()  # nothing listens: the publisher retries, its metrics are there all the same
    data = tmp_path / "server0" / "data"
    data.mkdir(parents=True)
    done = subprocess.run([str(server_binary()), "token", "add", "kitchen", "--role", "viewer", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    viewer = done.stdout.strip()
    server = sightline("--publish", f"rtmp://user:pw@127.0.0.1:{closed}/live/SECRETKEY",
                       "--offer-source", "rtsp://u:secretpw@127.0.0.1:1/privatepath", source="demo?fps=10")
    for headers in ({}, {"authorization": f"Bearer {viewer}"}):
        status, _, body = http_get(server.port, "/metrics", headers=headers)
        text = body.decode()
        assert status == 200, text[:300]
        metric(text, "sightline_publish_up", f'{{target="rtmp://127.0.0.1:{closed}",index="0"}}')
        for secret in ("SECRETKEY", "/live", "user", ":pw", "secretpw", "privatepath"):
            assert secret not in text, secret
        status, _, body = http_get(server.port, "/api/state", headers=headers)
        assert status == 200 and b"SECRETKEY" not in body and b"secretpw" not in body
    # Admins still see the target in /api/state.
    status, _, body = http_get(server.port, "/api/state", headers=ADMIN)
    assert status == 200 and json.loads(body)["publish"][0]["url"].endswith("/live/SECRETKEY")


def test_a_source_password_is_never_logged(sightline):
    url = "rtsp://u:secretpw@127.0.0.1:1/x"
    server = sightline(source=url, wait=False)
    status, answer = request(server, "POST", "/api/cameras", {"name": "door", "source": url})
    assert status == 201, answer
    # Each camera's first failure and its first retry (1 s later): four no-signal lines at least.
    log = wait_for_log(server, b"no signal", count=4)
    assert b"camera added" in log and b"serving" in log, server.stderr_tail()
    assert b"rtsp://u:***@127.0.0.1:1/x" in log, server.stderr_tail()
    assert b"secretpw" not in log, server.stderr_tail()
    # The admin still has the whole spec.
    status, listing = request(server, "GET", "/api/cameras")
    assert status == 200 and {c["name"]: c for c in listing["cameras"]}["door"]["source"] == url


@pytest.mark.parametrize("config", [
    'source: "demo?fps=10"\n',
    'cameras:\n  front: {source: "demo?fps=10"}\n  yard:\n    source: "demo?fps=10&seed=2"\n    faces: {enabled: false}\n'
    '  porch: "demo?fps=10&seed=3"\n',
], ids=["top-level", "per-camera"])
def test_a_source_written_as_a_string_serves(sightline, tmp_path, config):
    path = tmp_path / "sightline.yaml"
    path.write_text(config)
    server = sightline("--config", str(path), source=None)
    paths = ["/ws"] + (["/cam/yard/ws", "/cam/porch/ws"] if "cameras" in config else [])
    if "cameras" in config:
        assert camera_names(server) == ["front", "yard", "porch"]
    for ws_path in paths:
        log = frames_of(server, ws_path, 3)
        assert {(m["width"], m["height"]) for m, *_ in log.pairs} == {(640, 480)}, ws_path
