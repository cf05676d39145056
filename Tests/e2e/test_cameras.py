"""Several cameras in one process (`cameras:` in the config): each streams its own frames
and boxes on /cam/NAME/ws and /cam/NAME/stream.mjpg, answers its own API under
/api/cameras/NAME/, keeps its events in its own data directory, and one camera whose
source fails does not stall the others. The unprefixed routes stay the first camera's.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from conftest import REPO, TOKEN, decode_jpeg, frames_of, http_get, read_mjpeg_parts

VIDEO = REPO.parent / "shared" / "testdata" / "video" / "vtest.avi"  # 768x576, 10 fps


def write_config(path: Path, video: Path) -> Path:
    path.write_text(
        "cameras:\n"
        "  front:\n"
        "    source: {spec: \"demo?fps=15\"}\n"
        "  yard:\n"
        f"    source: {{spec: \"file:{video}\"}}\n"
        "    faces: {enabled: false}\n"
        "    camera: back-yard\n"
        "  gone:\n"
        "    source: {spec: \"file:/nonexistent/sightline-no-such-video.avi\"}\n")
    return path


def get_json(server, path: str):
    status, _, body = http_get(server.port, path, headers={"authorization": f"Bearer {TOKEN}"})
    assert status == 200, f"GET {path}: {status} {body[:300]!r}"
    return json.loads(body)


def test_each_camera_streams_its_own_frames_and_answers_its_own_api(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml", VIDEO)
    server = sightline("--config", str(config), source=None, wait=False)
    server.wait_bound()
    deadline = time.monotonic() + 30
    listing = None
    while time.monotonic() < deadline:
        listing = get_json(server, "/api/cameras")
        states = {c["name"]: c["state"] for c in listing["cameras"]}
        if states.get("front") == "live" and states.get("yard") == "live":
            break
        time.sleep(0.2)
    names = [c["name"] for c in listing["cameras"]]
    assert names == ["front", "yard", "gone"], "the config's order"
    by_name = {c["name"]: c for c in listing["cameras"]}
    assert by_name["yard"]["camera"] == "back-yard" and by_name["front"]["camera"] == "front"
    assert by_name["yard"]["paths"]["ws"] == "/cam/yard/ws"
    assert by_name["gone"]["state"] != "live", by_name["gone"]

    # Each camera's /ws carries its own frames (the demo is 640x480, vtest 768x576), with
    # 0 contract violations; /ws is the first camera's. A failing camera stalls neither.
    front = frames_of(server, "/cam/front/ws", 10)
    yard = frames_of(server, "/cam/yard/ws", 10)
    plain = frames_of(server, "/ws", 5)
    assert {(m["width"], m["height"]) for m, *_ in front.pairs} == {(640, 480)}
    assert {(m["width"], m["height"]) for m, *_ in yard.pairs} == {(768, 576)}
    assert {(m["width"], m["height"]) for m, *_ in plain.pairs} == {(640, 480)}
    # The demo's template is boxed on its own camera's frames only.
    assert any(d["kind"] == "template" for m, *_ in front.pairs for d in m["detections"])
    assert not any(d["kind"] == "face" for m, *_ in yard.pairs for d in m["detections"]), "faces are off on yard"

    # MJPEG and snapshots per camera; a camera that does not exist is a 404.
    status, _, _, parts = read_mjpeg_parts(server.port, "/cam/yard/stream.mjpg", nparts=2)
    assert status == 200 and len(parts) == 2
    assert all(decode_jpeg(jpeg).size == (768, 576) for _, jpeg in parts), "yard's own pictures"
    status, headers, body = http_get(server.port, "/cam/yard/snapshot.jpg")
    assert status == 200 and body[:2] == b"\xff\xd8"
    assert http_get(server.port, "/cam/gone/snapshot.jpg")[0] == 503
    assert http_get(server.port, "/cam/garage/snapshot.jpg")[0] == 404
    assert http_get(server.port, "/api/cameras/garage/state")[0] == 404

    # Each camera's own API: state, templates, events, on its own data directory.
    yard_state = get_json(server, "/api/cameras/yard/state")
    assert yard_state["source"]["width"] == 768 and "faces" not in yard_state
    front_state = get_json(server, "/api/cameras/front/state")
    assert front_state["source"]["width"] == 640 and front_state["faces"]["mode"] in ("active", "still", "unwatched")
    assert get_json(server, "/api/state")["source"]["name"] == front_state["source"]["name"]
    front_templates = get_json(server, "/api/cameras/front/templates")["templates"]
    assert front_templates and all(t["thumbnail"].startswith("/api/cameras/front/templates/") for t in front_templates)
    assert all(t["thumbnail"].startswith("/api/templates/") for t in get_json(server, "/api/templates")["templates"])
    status, headers, _ = http_get(server.port, front_templates[0]["thumbnail"])
    assert status == 200 and headers["content-type"] == "image/png", "the camera's own thumbnail path answers"
    assert get_json(server, "/api/cameras/yard/templates")["templates"] == []
    data = server.data_dir / "cameras"
    assert sorted(p.name for p in data.iterdir()) == ["front", "gone", "yard"]
    server.assert_alive()


def test_a_restart_keeps_every_camera_and_its_events(sightline, tmp_path):
    config = write_config(tmp_path / "cameras.yaml", VIDEO)
    first = sightline("--config", str(config), "--data-dir", str(tmp_path / "data"), source=None, wait=False)
    first.wait_bound()
    # The demo's template makes an event on front within seconds.
    deadline = time.monotonic() + 40
    events = []
    while time.monotonic() < deadline and not events:
        events = get_json(first, "/api/cameras/front/events")["events"]
        time.sleep(0.3)
    assert events, "no event on the demo camera"
    assert all(e["camera"] == "front" for e in events)
    assert get_json(first, "/api/cameras/yard/events")["events"] == [] or \
        all(e["camera"] == "back-yard" for e in get_json(first, "/api/cameras/yard/events")["events"])
    first.stop_checked()
    second = sightline("--config", str(config), "--data-dir", str(tmp_path / "data"), source=None, wait=False)
    second.wait_bound()
    names = [c["name"] for c in get_json(second, "/api/cameras")["cameras"]]
    assert names == ["front", "yard", "gone"]
    kept = {e["id"] for e in get_json(second, "/api/cameras/front/events")["events"]}
    assert {e["id"] for e in events} <= kept, "front's events survive the restart"


def test_cameras_share_one_broker_connection_with_their_own_events_and_counts(sightline, tmp_path):
    """Every camera publishes through the server's one broker connection (one client, the
    configured client id): each camera's events name it and its counts are under its own topics;
    availability and stats are the server's (`<prefix>/available`, last will `offline`;
    `<prefix>/stats` with each camera under `cameras`). A camera added at runtime joins the
    connection; removed, its retained topics are cleared."""
    from test_events import MOSQUITTO, Broker, Subscriber
    import pytest
    if MOSQUITTO is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh --tests installs it)")
    broker = Broker(tmp_path / "broker", sys_interval=1)
    subscriber = Subscriber(broker.port, "sightline/#")
    clients = Subscriber(broker.port, "$SYS/broker/clients/connected")
    try:
        config = tmp_path / "cameras.yaml"
        config.write_text(
            f"mqtt: {{host: 127.0.0.1, port: {broker.port}, keepalive: 5, statsSeconds: 1, clientId: sl}}\n"
            "events: {minSeconds: 0.3, endAfterSeconds: 1}\n"
            "cameras:\n"
            "  front:\n"
            "    source: {spec: \"demo?fps=15\"}\n"
            "  yard:\n"
            "    source: {spec: \"demo?fps=15&seed=7\"}\n"
            "    camera: back-yard\n")
        server = sightline("--config", str(config), source=None, wait=False)
        server.wait_bound()

        def cameras_with_events():
            return {e["after"]["camera"] for e in subscriber.events()}
        assert subscriber.wait_for(lambda: cameras_with_events() >= {"front", "back-yard"}, 30), \
            f"events from: {cameras_with_events()}\n{server.stderr_tail()}"
        for camera in ("front", "back-yard"):
            assert subscriber.wait_for(lambda: subscriber.on(f"sightline/{camera}/demo"), 10), \
                f"{camera}: no count topic; topics: {sorted({m[1] for m in subscriber.messages})}"
        assert subscriber.wait_for(lambda: any(m[2] == b"online" for m in subscriber.on("sightline/available")), 10)
        assert not [m[1] for m in subscriber.messages if m[1].endswith(("/available", "/stats"))
                    and m[1] not in ("sightline/available", "sightline/stats")], "availability and stats are the server's"

        def last_stats():
            found = subscriber.on("sightline/stats")
            return json.loads(found[-1][2]) if found else None
        assert subscriber.wait_for(lambda: last_stats() and set(last_stats()["cameras"]) == {"front", "back-yard"}, 10), \
            last_stats()
        stats = last_stats()
        assert stats["camera"] == "front" and {"fps", "drops", "detector", "clients", "mqtt"} <= set(stats), \
            "the one-camera fields stay, for the first camera"
        assert stats["cameras"]["back-yard"]["fps"]["processed"] >= 0
        # One connection: the broker counts this test's two subscribers and the server.
        assert clients.wait_for(lambda: clients.on("$SYS/broker/clients/connected")
                                and clients.on("$SYS/broker/clients/connected")[-1][2] == b"3", 10), \
            clients.on("$SYS/broker/clients/connected")[-3:]
        status = get_json(server, "/api/cameras/yard/events/stats")["mqtt"]
        assert status["clientId"] == "sl" and status["connections"] == 1, status
        # Each camera's events are in its own store, under its own name.
        assert {e["camera"] for e in get_json(server, "/api/cameras/yard/events")["events"]} == {"back-yard"}
        assert {e["camera"] for e in get_json(server, "/api/cameras/front/events")["events"]} == {"front"}

        # Added at runtime: on the same connection; removed: its retained topics are cleared.
        admin = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        status_code, _, body = http_get(server.port, "/api/cameras", method="POST", headers=admin,
                                        body=json.dumps({"name": "porch", "source": "demo?fps=15&seed=3"}).encode())
        assert status_code == 201, body[:300]
        assert subscriber.wait_for(lambda: any(m[2] not in (b"", b"0") for m in subscriber.on("sightline/porch/demo")), 30), \
            sorted({m[1] for m in subscriber.messages})
        assert subscriber.wait_for(lambda: last_stats() and "porch" in last_stats()["cameras"], 10)
        assert get_json(server, "/api/cameras/porch/events/stats")["mqtt"]["connections"] == 1
        status_code, _, body = http_get(server.port, "/api/cameras/porch", method="DELETE", headers=admin)
        assert status_code == 200, body[:300]
        assert subscriber.wait_for(lambda: subscriber.on("sightline/porch/demo")[-1][2] == b"", 10), \
            subscriber.on("sightline/porch/demo")[-3:]
        assert subscriber.wait_for(lambda: last_stats() and "porch" not in last_stats()["cameras"], 10)
        late = Subscriber(broker.port, "sightline/#")
        try:
            assert late.wait_for(lambda: late.on("sightline/front/demo"), 10)
            late.wait_for(lambda: any(m[1].startswith("sightline/porch/") for m in late.messages), 1)
            assert not [m[1] for m in late.messages if m[1].startswith("sightline/porch/")], "porch's topics are cleared"
        finally:
            late.close()

        server.stop_checked()
        assert subscriber.wait_for(lambda: subscriber.on("sightline/available")[-1][2] == b"offline", 10)
    finally:
        clients.close()
        subscriber.close()
        broker.stop()
