"""The README's and docs' curl lines (docs/api.md), run exactly as printed against a real server: only the
port (8080 in the README) is the test's, and `data/token` holds the test's admin token.
Each line must exit 0 (`curl -f` fails on any 4xx/5xx), and what they leave behind is
checked: a JPEG snapshot, MJPEG parts, the template uploaded raw and as a form, its
threshold changed, its thumbnail, then gone."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TOKEN, http_get

# This module watches clips or the encoder they keep busy: its servers run with them, as by default.
SERVER_CLIPS = True

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]


def doc_text(marker: str) -> tuple[str, str]:
    """The README or the doc under docs/ that holds `marker`, as (name, text from the marker on)."""
    for path in DOCS:
        text = path.read_text()
        if marker in text:
            return str(path.relative_to(REPO)), text[text.index(marker):]
    raise AssertionError(f"neither README.md nor docs/*.md holds {marker!r}")


MARKER = "With curl (a test runs each of these lines as printed"


def readme_curl_block() -> list[str]:
    name, text = doc_text(MARKER)
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, f"no ```sh block after the curl examples' heading in {name}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_every_readme_curl_line_runs_as_printed(sightline, testdata, tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the docs' curl lines cannot be run")
    lines = readme_curl_block()
    assert lines[0].startswith("T=$(cat data/token)"), lines[0]
    assert sum(line.startswith("curl ") for line in lines) >= 8, lines
    assert any("--data-binary @logo.png" in line and "Content-Type" not in line for line in lines), \
        "the curl examples must show a raw upload with curl's default content type"
    server = sightline(source="demo")
    server.wait_live()
    work = tmp_path / "readme"
    (work / "data").mkdir(parents=True)
    (work / "data" / "token").write_text(TOKEN + "\n")
    from PIL import Image
    # A logo of the size one crops from a frame (the file itself is larger than the demo's frame).
    Image.open(testdata / "templates" / "opencv-logo.png").convert("RGB").resize((120, 159)).save(work / "logo.png")
    for line in lines[1:]:
        command = line.replace("127.0.0.1:8080", f"127.0.0.1:{server.port}")
        assert command != line or not line.startswith("curl "), f"no port to replace in {line!r}"
        run = subprocess.run(["bash", "-c", f"set -o pipefail; {lines[0]}\n{command}"], cwd=work,
                             capture_output=True, timeout=30)
        assert run.returncode == 0, (f"curl example failed ({run.returncode}): {line}\n"
                                     f"{run.stderr.decode(errors='replace')[-1500:]}")
        if "/api/templates?name=logo" in line or "-F file=@logo.png" in line:
            answer = json.loads(run.stdout)
            assert answer["template"]["name"] == "logo", answer
        if "-X PATCH" in line:
            assert json.loads(run.stdout)["template"]["threshold"] == 0.75, run.stdout[:300]
        if line.endswith("/metrics"):
            assert b"sightline_frames_processed_total" in run.stdout or b"sightline_" in run.stdout
    assert (work / "frame.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert (work / "clip.mjpg").read_bytes().count(b"--sightlineframe") >= 10
    assert (work / "logo-thumb.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The camera added at runtime streamed its own snapshot, and is gone again.
    assert (work / "porch.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert http_get(server.port, "/cam/porch/snapshot.jpg")[0] == 404
    clip = (work / "event.mp4").read_bytes()
    assert clip[4:8] == b"ftyp" and b"moof" in clip, clip[:64]
    assert (work / "event-head.bin").read_bytes() == clip[:100]
    templates = json.loads(http_get(server.port, "/api/templates")[2])
    assert "logo" not in json.dumps(templates), templates
    server.assert_alive()


PYAV_MARKER = "Reading the boxes from the video alone, with PyAV"


def readme_sei_reader() -> dict:
    """The PyAV block (docs/video.md), run as printed; its functions by name."""
    name, text = doc_text(PYAV_MARKER)
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, f"no ```python block after the PyAV reader's heading in {name}"
    namespace = {}
    exec(compile(block.group(1), name, "exec"), namespace)
    return namespace


def test_readme_sei_reader_reads_the_boxes_of_every_frame(sightline, tmp_path, capsys):
    """The docs' Python reader of the Sightline SEI, run as printed on what
    /ws?video=h264 sends: it finds each frame's boxes, equal to the frame's JSON."""
    pytest.importorskip("av", reason="PyAV not installed (pip install av, Tests/requirements.txt)")
    from conftest import ws_connect
    from h264 import H264Log, receive_h264
    namespace = readme_sei_reader()
    server = sightline(source="demo")
    with ws_connect(server.port, "/ws?video=h264") as ws:
        log = receive_h264(ws, H264Log(), frames=60)
    assert not log.errors
    with_boxes = 0
    for meta, unit, _ in log.frames:
        found = namespace["boxes"](unit)
        assert found is not None and found["seq"] == meta["seq"]
        assert found["detections"] == meta["detections"]
        with_boxes += bool(found["detections"])
    assert with_boxes >= 30
    recording = tmp_path / "stream.h264"
    recording.write_bytes(b"".join(unit for _, unit, _ in log.frames))
    capsys.readouterr()
    namespace["print_boxes"](str(recording), format="h264")
    printed = capsys.readouterr().out.splitlines()
    assert [int(line.split()[0]) for line in printed] == [m["seq"] for m, _, _ in log.frames]
