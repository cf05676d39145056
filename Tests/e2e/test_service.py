"""Running as a service: `make install` lays out a tree that serves from any working
directory, its systemd unit passes `systemd-analyze verify`, and the server speaks
sd_notify: READY=1 once listening, WATCHDOG=1 only while frames flow."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from PIL import Image

from conftest import REPO, HOST, free_port, http_get, server_binary


def install_tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    done = subprocess.run(["make", "-s", "install", f"BIN={server_binary()}", f"PREFIX={root}/usr",
                           f"SYSCONFDIR={root}/etc", f"UNITDIR={root}/units"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def test_installed_tree_serves_and_its_unit_verifies(tmp_path, testdata):
    root = install_tree(tmp_path)
    unit = root / "units" / "sightline.service"
    text = unit.read_text()
    assert f"ExecStart={root}/usr/bin/sightline serve" in text and "@BINDIR@" not in text
    for directive in ("Type=notify", "WatchdogSec=", "DynamicUser=yes", "StateDirectory=sightline",
                      "SupplementaryGroups=video", "DeviceAllow=char-video4linux rw", "ProtectSystem=strict",
                      "NoNewPrivileges=yes", "PrivateTmp=yes", "RestrictAddressFamilies="):
        assert directive in text, directive
    if shutil.which("systemd-analyze"):
        verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
        # verify exits 0 on unknown or malformed directives and only warns: any line about the unit is a failure.
        problems = [line for line in (verify.stdout + verify.stderr).splitlines() if "sightline.service" in line]
        assert verify.returncode == 0 and not problems, verify.stdout + verify.stderr

    # The installed binary finds its page and demo template from / with the installed config.
    port = free_port()
    data = tmp_path / "state"
    proc = subprocess.Popen([str(root / "usr/bin/sightline"), "serve", "--config", str(root / "etc/sightline/sightline.yaml"),
                             "--data-dir", str(data), "--source", "demo", "--port", str(port), "--host", HOST],
                            cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "SIGHTLINE_TOKEN": "service-test-token"})
    try:
        deadline = time.monotonic() + 30
        page = None
        while time.monotonic() < deadline and page is None:
            try:
                status, _, body = http_get(port, "/", timeout=2)
                page = (status, body)
            except OSError:
                time.sleep(0.2)
        assert page and page[0] == 200 and b"<html" in page[1].lower(), page
        status, _, body = http_get(port, "/api/templates")
        assert status == 200 and b'"demo"' in body, body
    finally:
        proc.terminate()
        proc.wait(timeout=15)

    # The installed binary finds its media library (lib/sightline/): a BMP needs OpenCV's imgcodecs.
    bmp = tmp_path / "face.bmp"
    Image.open(testdata / "faces/grace_hopper.jpg").save(bmp)
    done = subprocess.run([str(root / "usr/bin/sightline"), "detect", "--json", str(bmp)], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and '"kind":"face"' in done.stdout, done.stdout + done.stderr
    # Without it, the same photo is a clear error, and a PNG still reads.
    (root / "usr/lib/sightline/libSightlineMedia.so").unlink()
    done = subprocess.run([str(root / "usr/bin/sightline"), "detect", "--json", str(bmp)], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "cannot load libSightlineMedia.so" in done.stdout, done.stdout + done.stderr
    png = tmp_path / "face.png"
    Image.open(bmp).save(png)
    done = subprocess.run([str(root / "usr/bin/sightline"), "detect", "--json", str(png)], cwd="/",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and '"kind":"face"' in done.stdout, done.stdout + done.stderr


def notifications(sock: socket.socket, seconds: float) -> list[str]:
    """Every datagram on the notify socket for `seconds`."""
    out = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            out.append(sock.recv(4096).decode())
        except socket.timeout:
            break
    return out


@pytest.mark.parametrize("source, fed", [("demo", True), ("v4l2:/dev/video-none", False)])
def test_watchdog_is_fed_only_while_frames_flow(sightline, tmp_path, source, fed):
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        server = sightline(source=source, env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000"})
        messages = notifications(sock, 4.0)
        assert server.alive()
    assert any("READY=1" in m for m in messages), messages
    pings = sum(m.count("WATCHDOG=1") for m in messages)
    if fed:
        assert pings >= 3, messages          # every half second while frames flow
    else:
        assert pings == 0, messages          # a source that never delivers never feeds it
