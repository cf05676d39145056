"""A full data directory: a small tmpfs (mounted as root), filled with dd.

Uploads are refused in words without server paths, the failures are counted in
/api/state and /metrics, the stream keeps going, and uploads work again once there
is space. Starting on a full disk without a token fails with a clear sentence."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import (HOST, metric, REPO, TOKEN, WEB_ROOT, FrameLog, check_frame_pairs, fill_disk, http_get, receive_frames,
                      server_binary, small_tmpfs)

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEMPLATE = REPO / "config" / "demo-template.png"
FOREIGN_WORDS = ("NSCocoaErrorDomain", "Error Domain", ".tmp-", "(null)")


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs on a fresh directory, unmounted after the test."""
    with small_tmpfs(tmp_path / "small-disk", 2) as disk:
        yield disk


def fill(disk: Path) -> Path:
    return fill_disk(disk, "64k")


def upload(server, name: str):
    status, _, body = http_get(server.port, f"/api/templates?name={name}", method="POST", body=TEMPLATE.read_bytes(),
                               headers={**AUTH, "Content-Type": "image/png"})
    return status, body.decode("utf-8", "replace")


def test_a_full_disk_refuses_uploads_in_words_counts_them_and_recovers(sightline, small_disk):
    data = small_disk / "data"
    server = sightline("--data-dir", data, source="demo")
    server.wait_live()
    filler = fill(small_disk)

    status, body = upload(server, "copy")
    assert status == 507, body
    answer = json.loads(body)
    assert answer["error"] == "cannot save the template"
    assert answer["detail"].startswith("no space left on the device (the disk is full)"), answer
    assert str(small_disk) not in body and "/" not in answer["detail"], body
    assert not any(word in body for word in FOREIGN_WORDS), body

    state = server.state()
    assert state["storage"]["writeFailures"] >= 1, state["storage"]
    assert state["storage"]["writeFailuresByArea"]["templates"] == 1, state["storage"]
    assert "copy" not in [t["name"] for t in state["templates"]]
    status, _, metrics = http_get(server.port, "/metrics")
    assert status == 200
    assert metric(metrics.decode(), "sightline_storage_write_failures_total", '{area="templates"}') == 1

    # The stream goes on meanwhile.
    with server.ws() as ws:
        log = receive_frames(ws, FrameLog(), pairs=10, timeout=20)
    assert len(log.pairs) == 10, server.summary()
    check_frame_pairs(log)
    status, headers, jpeg = http_get(server.port, "/snapshot.jpg")
    assert status == 200 and jpeg[:2] == b"\xff\xd8"

    # The log says it in the same words, and no Foundation error text with paths anywhere.
    log_text = server.stderr_path.read_text(errors="replace")
    said = [line for line in log_text.splitlines() if "cannot save the template" in line]
    assert said and "no space left on the device" in said[0], log_text[-2000:]
    assert not any(str(small_disk) in line for line in said), said
    assert not any(word in log_text for word in FOREIGN_WORDS), log_text[-2000:]

    # Space again: the same upload works.
    filler.unlink()
    status, body = upload(server, "copy")
    assert status == 201, body
    status, _, listed = http_get(server.port, "/api/templates")
    assert "copy" in [t["name"] for t in json.loads(listed)["templates"]]
    assert (data / "templates" / "copy.png").is_file()
    server.stop_checked()


def test_starting_on_a_full_disk_without_a_token_says_it_cannot_write_the_token(small_disk, tmp_path):
    fill(small_disk)
    data = small_disk / "data"
    env = {k: v for k, v in os.environ.items() if k != "SIGHTLINE_TOKEN"}
    args = [str(server_binary()), "serve", "--host", HOST, "--port", "0", "--source", "demo",
            "--data-dir", str(data), "--web-root", str(WEB_ROOT)]
    # From an empty directory: no config file with a token: in it.
    done = subprocess.run(args, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0, done.stderr[-2000:]
    assert "cannot write the admin token in the data directory" in done.stderr, done.stderr[-2000:]
    assert "no space left on the device (the disk is full)" in done.stderr, done.stderr[-2000:]
    assert not any(word in done.stderr for word in FOREIGN_WORDS), done.stderr[-2000:]
    assert "serving" not in done.stderr
