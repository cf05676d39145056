"""Events: through a real Mosquitto broker to a real MQTT client (paho-mqtt), and kept across kill -9.

The video is made here (`scenes.comings_and_goings`): a template that comes and
goes, then a real face (grace_hopper.jpg) that comes and goes, looping.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from conftest import TOKEN, metric, FrameLog, free_port, http_get, receive_frames, terminate, YUNET, yunet_model
from scenes import comings_and_goings

paho = pytest.importorskip("paho.mqtt.client")

MOSQUITTO = shutil.which("mosquitto") or next((p for p in ("/usr/sbin/mosquitto",) if os.path.exists(p)), None)


class Broker:
    """Debian's mosquitto on a free loopback port (stopped and started again on the same port)."""

    def __init__(self, directory: Path, sys_interval: int | None = None):
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.config = directory / "mosquitto.conf"
        # sys_interval: how often it publishes $SYS/broker/... (clients connected, say).
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                               + (f"sys_interval {sys_interval}\n" if sys_interval else ""))
        directory.chmod(0o755)
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen([MOSQUITTO, "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"mosquitto exited with {self.process.returncode} (port {self.port} taken?)")
            try:
                import socket
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("mosquitto did not listen within 10 s")

    def stop(self):
        terminate(self.process)


class Subscriber:
    """A paho client on its own network thread, recording (time, topic, payload, retained)."""

    def __init__(self, port: int, pattern: str = "#"):
        self.messages: list[tuple[float, str, bytes, bool]] = []
        self.lock = threading.Lock()
        self.connected = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"e2e-{time.monotonic_ns()}")
        self.client.on_connect = lambda c, u, f, rc, p: (c.subscribe(pattern, qos=1), self.connected.set())
        self.client.on_message = self._record
        self.client.reconnect_delay_set(min_delay=0.2, max_delay=1)
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.loop_start()
        assert self.connected.wait(10), "the test subscriber could not connect"

    def _record(self, client, userdata, message):
        with self.lock:
            self.messages.append((time.monotonic(), message.topic, bytes(message.payload), bool(message.retain)))

    def on(self, topic: str) -> list[tuple[float, str, bytes, bool]]:
        with self.lock:
            return [m for m in self.messages if m[1] == topic]

    def events(self) -> list[dict]:
        return [json.loads(m[2]) for m in self.on("sightline/events")]

    def wait_for(self, condition, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.05)
        return condition()

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def broker(tmp_path):
    if MOSQUITTO is None:
        pytest.skip("mosquitto is not installed (scripts/setup.sh --tests installs it)")
    b = Broker(tmp_path / "broker")
    yield b
    b.stop()


@pytest.fixture
def video(tmp_path, testdata):
    template = Image.open(testdata / "templates" / "opencv-logo.png").convert("RGB")
    template = template.resize((110, int(110 * template.height / template.width)))
    face = Image.open(testdata / "faces" / "grace_hopper.jpg").convert("RGB").crop((90, 30, 430, 430))
    face = face.resize((190, 224))
    path = tmp_path / "comings-and-goings.avi"
    truth = comings_and_goings(path, template, face)
    template_path = tmp_path / "logo.png"
    template.save(template_path)
    return path, template_path, template, truth


EVENTS_CONFIG = """\
camera: door
events:
  minSeconds: 0.5
  endAfterSeconds: 1
  updateSeconds: 1
  minUpdateSeconds: 0.5
"""


def write_config(path: Path, port: int, *, queue_limit: int = 500) -> Path:
    path.write_text(EVENTS_CONFIG + f"""\
mqtt:
  host: 127.0.0.1
  port: {port}
  keepalive: 5
  queueLimit: {queue_limit}
  statsSeconds: 2
""")
    return path


def start_server(sightline, tmp_path, broker, video, **config):
    path, template_path, _, _ = video
    yunet_model()
    config_path = write_config(tmp_path / "sightline.yaml", broker.port, **config)
    return sightline("--config", config_path, "--template", f"{template_path}=logo", "--face-model", YUNET,
                     source=f"file:{path}")


def lives(events: list[dict], label: str) -> dict[str, list[str]]:
    """Each event id of `label` with its message types in arrival order."""
    out: dict[str, list[str]] = {}
    for message in events:
        after = message["after"]
        if after["label"] == label:
            out.setdefault(after["id"], []).append(message["type"])
    return out


def test_events_reach_a_real_broker_in_order_with_counts_snapshots_and_a_last_will(sightline, broker, video, tmp_path):
    _, _, template, _ = video
    subscriber = Subscriber(broker.port, "sightline/#")
    try:
        server = start_server(sightline, tmp_path, broker, video)
        server.wait_live()
        assert subscriber.wait_for(lambda: any(m[2] == b"online" for m in subscriber.on("sightline/available")), 10), \
            "no 'online' on sightline/available"

        # One loop of the video is 11 s: wait for a logo life and a face life that have ended.
        def ended(label):
            return any(kinds[-1] == "end" for kinds in lives(subscriber.events(), label).values())
        assert subscriber.wait_for(lambda: ended("logo") and ended("face"), 30), \
            f"events seen: {[(e['type'], e['after']['label']) for e in subscriber.events()]}\n{server.stderr_tail()}"

        for label in ("logo", "face"):
            for event_id, kinds in lives(subscriber.events(), label).items():
                if kinds[-1] != "end":
                    continue  # still open when we looked
                assert kinds[0] == "new" and kinds.count("new") == 1 and kinds.count("end") == 1, (label, kinds)
                assert "update" in kinds, f"{label} {event_id}: a 3 s appearance with updateSeconds 1 had no update: {kinds}"

        events = subscriber.events()
        end = next(e for e in events if e["type"] == "end" and e["after"]["label"] == "logo")
        after = end["after"]
        assert after["camera"] == "door" and after["end_time"] >= after["start_time"] > 0
        assert 0 < after["top_score"] <= 1 and len(after["box"]) == 4 and set(after["box_normalized"]) == {"x", "y", "w", "h"}
        face_end = next(e for e in events if e["type"] == "end" and e["after"]["label"] == "face")["after"]
        for field in ("roll", "yaw"):
            assert field in face_end, face_end

        # The count topic followed: 1 while the logo was in view, 0 after.
        counts = [m[2] for m in subscriber.on("sightline/door/logo")]
        assert b"1" in counts and counts[-1] == b"0", counts

        # The snapshot topic carries a JPEG showing the logo at the reported box.
        snapshots = subscriber.on("sightline/door/logo/snapshot")
        assert snapshots, "no logo snapshot"
        shot = Image.open(io.BytesIO(snapshots[-1][2]))
        shot.load()
        assert shot.format == "JPEG" and shot.size == (640, 480)
        best = end["after"]["snapshot"]["box_normalized"]  # the snapshot is the best frame
        x, y, w, h = best["x"], best["y"], best["w"], best["h"]
        crop = shot.convert("RGB").crop((int(x * 640), int(y * 480), int((x + w) * 640), int((y + h) * 480)))
        crop = crop.resize(template.size)
        diff = sum(abs(a - b) for a, b in zip(crop.tobytes(), template.tobytes())) / len(template.tobytes())
        assert diff < 30, f"the snapshot's box does not show the logo (mean difference {diff:.1f})"

        # The same events are in the API.
        status, _, body = http_get(server.port, "/api/events?label=logo")
        assert status == 200 and any(e["id"] == end["after"]["id"] for e in json.loads(body)["events"])

        # /metrics says so too.
        metrics = http_get(server.port, "/metrics")[2].decode()
        assert metric(metrics, "sightline_mqtt_connected") == 1 and metric(metrics, "sightline_events_stored") >= 0

        # Killed: the broker publishes the last will.
        server.kill()
        assert subscriber.wait_for(lambda: subscriber.on("sightline/available")[-1][2] == b"offline", 10), \
            [m[2] for m in subscriber.on("sightline/available")]
    finally:
        subscriber.close()


def test_a_broker_outage_slows_no_viewer_and_the_server_reconnects(sightline, broker, video, tmp_path):
    server = start_server(sightline, tmp_path, broker, video, queue_limit=2)
    server.wait_live()
    first = Subscriber(broker.port, "sightline/#")
    try:
        assert first.wait_for(lambda: any(m[2] == b"online" for m in first.on("sightline/available")), 10)
    finally:
        first.close()

    def mqtt_stats():
        return json.loads(http_get(server.port, "/api/events/stats")[2])["mqtt"]

    with server.ws() as ws:
        receive_frames(ws, FrameLog(), pairs=5, timeout=20)  # warm up
        started = time.monotonic()
        before = receive_frames(ws, FrameLog(), pairs=40, timeout=20)
        rate_before = len(before.pairs) / (time.monotonic() - started)
        broker.stop()
        stopped_at = time.monotonic()
        # The outage lasts until event messages have been dropped (more than the queue of 2 holds):
        # waited for in the server's counters, in one-second slices of frames, at least 3 s.
        during = FrameLog()
        deadline = stopped_at + 40
        while time.monotonic() < deadline:
            receive_frames(ws, during, seconds=1, timeout=10)
            if time.monotonic() - stopped_at >= 3 and mqtt_stats()["dropped"] > 0:
                break
        rate_during = len(during.pairs) / (time.monotonic() - stopped_at)
    print(f"outage: {len(during.pairs)} frames in {time.monotonic() - stopped_at:.1f} s")
    assert rate_during >= 0.95 * rate_before, f"{rate_during:.1f} fps during the outage, {rate_before:.1f} before"

    state = {"mqtt": mqtt_stats()}
    assert state["mqtt"]["connected"] is False
    queued = state["mqtt"]["queuedEvents"]
    assert queued <= 2, state["mqtt"]

    broker.start()
    restarted = time.monotonic()
    second = Subscriber(broker.port, "sightline/#")
    try:
        assert second.wait_for(lambda: any(m[2] == b"online" for m in second.on("sightline/available")), 5), \
            "not back online within 5 s of the broker's return"
        back_after = second.on("sightline/available")[0][0] - restarted
        after = json.loads(http_get(server.port, "/api/events/stats")[2])["mqtt"]
        # The outage held more event messages than the queue of 2: the rest were counted.
        assert after["dropped"] > 0, after
        assert after["connected"] is True and after["connections"] >= 2, after
        print(f"outage {restarted - stopped_at:.1f} s, back online after {back_after:.2f} s, "
              f"{after['dropped']} event messages dropped, fps {rate_before:.1f} -> {rate_during:.1f}")
    finally:
        second.close()


def test_events_and_their_images_survive_kill_9_and_a_restart(sightline, video, tmp_path):
    path, template_path, _, _ = video
    yunet_model()
    config = tmp_path / "events.yaml"
    config.write_text(EVENTS_CONFIG)
    data_dir = tmp_path / "kept"
    args = ("--config", config, "--data-dir", data_dir, "--template", f"{template_path}=logo", "--face-model", YUNET)
    server = sightline(*args, source=f"file:{path}")
    server.wait_live()

    def listed(s):
        status, _, body = http_get(s.port, "/api/events?limit=100")
        assert status == 200, body
        return json.loads(body)["events"]

    # Busy: wait until both kinds have ended at least once and another appearance is under way.
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        events = listed(server)
        ended = {e["label"] for e in events if e.get("endTime")}
        if {"logo", "face"} <= ended and len(events) >= 3:
            break
        time.sleep(0.25)
    before = listed(server)
    assert {e["label"] for e in before if e.get("endTime")} >= {"logo", "face"}, before
    server.kill()

    again = sightline(*args, source=f"file:{path}")
    after = {e["id"]: e for e in listed(again)}
    for event in before:
        assert event["id"] in after, f"event {event['id']} ({event['label']}) lost across kill -9"
        kept = after[event["id"]]
        assert kept["label"] == event["label"] and kept.get("endTime"), kept  # open ones were closed at load
        for image in ("snapshot.jpg", "crop.jpg"):
            status, headers, body = http_get(again.port, f"/api/events/{event['id']}/{image}")
            assert status == 200, (event["id"], image, status, body[:200])
            Image.open(io.BytesIO(body)).verify()
    # "Name this person" from a kept face event: learned from its stored best frame.
    face_event = next(e for e in before if e["label"] == "face")
    logo_event = next(e for e in before if e["label"] == "logo")
    body = json.dumps({"name": "Grace"}).encode()
    admin = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    assert http_get(again.port, f"/api/events/{face_event['id']}/name", method="POST", body=body,
                    headers={"Content-Type": "application/json"})[0] == 401
    status, _, answer = http_get(again.port, f"/api/events/{logo_event['id']}/name", method="POST", body=body, headers=admin)
    assert status == 400 and b"not a face event" in answer, answer
    status, _, answer = http_get(again.port, f"/api/events/{face_event['id']}/name", method="POST", body=b"{", headers=admin)
    assert status == 400, answer
    status, _, answer = http_get(again.port, f"/api/events/{face_event['id']}/name", method="POST", body=body, headers=admin)
    assert status == 200, answer
    named = json.loads(answer)
    assert named["name"] == "Grace" and named["learned"] >= 1 and named["samples"] >= 1, named
    people = json.loads(http_get(again.port, "/api/people")[2])["people"]
    assert any(p["name"] == "Grace" for p in people), people

    # Nothing on disk without its record, and no record without its files.
    files = {p.name for p in (data_dir / "events").rglob("*") if p.is_file()}
    assert not any(name.endswith(".tmp") or name.startswith(".") for name in files), sorted(files)[:20]
