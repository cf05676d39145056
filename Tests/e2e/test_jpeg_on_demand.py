"""JPEG only on demand (issue 39 item 3): on a 1920x1080 file source (scene1080), no JPEG
is encoded while nobody takes JPEG (the `encode` stage's count in /api/state and
/metrics stays 0, an H.264 viewer included); a JPEG viewer gets the stream's JPEG, at most
video.jpegMaxWidth (1280) wide with the proportions kept, while the JSON says the full
picture's size; `?full=1` gives the full picture on /ws, /stream.mjpg and /snapshot.jpg;
a snapshot works with nobody watching; and once the viewers leave, encoding stops.

Not here: an MJPEG source's own JPEG passed on as it is (no source fills
`SourceUnit.mjpeg` yet; FrameJPEGTests covers it in Swift)."""

import json
import time

import pytest

from conftest import (metric, FrameLog, check_frame_pairs, decode_jpeg, http_get, read_mjpeg_parts,
                      receive_frames)
import scene1080


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scene1080.write_video(tmp_path_factory.mktemp("jpeg1080") / "scene1080.mp4", frames=50)


def encodes(server) -> int:
    return server.state()["stages"]["encode"]["count"]


def metric_encodes(server) -> float:
    status, _, body = http_get(server.port, "/metrics")
    assert status == 200
    return metric(body.decode(), "sightline_stage_seconds_count", '{stage="encode"}')


def wait_processed(server, more: int, timeout: float = 30.0) -> dict:
    """Polls /api/state until `more` frames more than now were processed (bounded)."""
    start = server.state()["frames"]["processed"]
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = server.state()
        if state["frames"]["processed"] >= start + more:
            return state
        time.sleep(0.1)
    raise AssertionError(f"fewer than {more} frames processed in {timeout} s: {state and state['frames']}")


def wait_for(condition, what: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def snapshot_size(server, path: str):
    status, headers, body = http_get(server.port, path)
    assert status == 200, (path, status, body[:200])
    assert headers.get("content-type") == "image/jpeg"
    return decode_jpeg(body).size


def test_jpeg_is_made_only_for_those_who_take_it(sightline, video):
    # No faces and no templates: nothing to make an event of, so events take no snapshots.
    server = sightline("--no-faces", source=f"file:{video}")
    server.wait_live(timeout=30)

    # Nobody watches: frames flow, none is encoded.
    wait_processed(server, 25)
    assert encodes(server) == 0 and metric_encodes(server) == 0

    # An H.264 viewer takes no JPEG either.
    with server.ws("/ws?video=h264") as ws:
        for _ in range(4):
            ws.recv(timeout=10)
        wait_processed(server, 10)
        assert encodes(server) == 0

    # A JPEG viewer: 1280x720 JPEGs of the 1920x1080 picture, its JSON the full picture's.
    log = FrameLog()
    with server.ws() as ws:
        receive_frames(ws, log, pairs=10, timeout=30)
        state = server.state()
    check_frame_pairs(log, "/ws")
    assert len(log.pairs) == 10
    for meta, jpeg, *_ in log.pairs:
        assert (meta["width"], meta["height"]) == (1920, 1080)
        picture = decode_jpeg(jpeg)
        assert picture.size == (1280, 720), picture.size
        assert 0 <= scene1080.read_index(picture) < 50
    assert state["stages"]["encode"]["count"] >= 10 and metric_encodes(server) >= 10

    # Everyone left: encoding stops (a frame already in the pipeline as the viewer left may still be made).
    wait_for(lambda: server.state()["clients"]["ws"] == 0, "the viewer's departure counted")
    before = encodes(server)
    wait_processed(server, 25)
    assert encodes(server) <= before + 1

    # A snapshot with nobody watching: encoded for it, at the stream's size or the full one.
    assert snapshot_size(server, "/snapshot.jpg") == (1280, 720)
    assert snapshot_size(server, "/snapshot.jpg?full=1") == (1920, 1080)
    assert snapshot_size(server, "/?action=snapshot") == (1280, 720)
    path = json.loads(http_get(server.port, "/api/cameras")[2])["cameras"][0]["paths"]["snapshot"]
    assert snapshot_size(server, path) == (1280, 720)


def test_full_size_when_asked_for(sightline, video):
    server = sightline("--no-faces", source=f"file:{video}")
    server.wait_live(timeout=30)

    log = FrameLog()
    with server.ws("/ws?video=jpeg&full=1") as ws:
        receive_frames(ws, log, pairs=5, timeout=30)
    check_frame_pairs(log, "/ws?full=1")
    assert all(decode_jpeg(jpeg).size == (1920, 1080) for _, jpeg, *_ in log.pairs)

    # A stream viewer and a full-size one at once: each gets its own size of the same frames.
    with server.ws() as small, server.ws("/ws?full=1") as large:
        got = {}
        for name, ws in (("small", small), ("large", large)):
            got[name] = receive_frames(ws, FrameLog(), pairs=3, timeout=30)
            check_frame_pairs(got[name], name)
        assert {decode_jpeg(j).size for _, j, *_ in got["small"].pairs} == {(1280, 720)}
        assert {decode_jpeg(j).size for _, j, *_ in got["large"].pairs} == {(1920, 1080)}

    for path, size in (("/stream.mjpg", (1280, 720)), ("/stream.mjpg?full=1", (1920, 1080)),
                       ("/?action=stream&full=1", (1920, 1080))):
        status, _, _, parts = read_mjpeg_parts(server.port, path, nparts=2)
        assert status == 200 and len(parts) == 2, path
        for headers, jpeg in parts:
            assert decode_jpeg(jpeg).size == size, path


def test_jpeg_max_width_from_the_config_and_the_flag(sightline, video, tmp_path):
    config = tmp_path / "jpeg.yaml"
    config.write_text("video:\n  jpegMaxWidth: 960\n")
    server = sightline("--no-faces", "--config", str(config), source=f"file:{video}")
    server.wait_live(timeout=30)
    assert snapshot_size(server, "/snapshot.jpg") == (960, 540)
    status, _, _, parts = read_mjpeg_parts(server.port, "/stream.mjpg", nparts=1)
    assert status == 200 and decode_jpeg(parts[0][1]).size == (960, 540)

    full = sightline("--no-faces", "--jpeg-max-width", "0", source=f"file:{video}")
    full.wait_live(timeout=30)
    assert snapshot_size(full, "/snapshot.jpg") == (1920, 1080)
