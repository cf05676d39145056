"""Every benchmark and maker script under scripts/ that takes options starts: `--help` prints its
usage and exits 0. Each script imports the test helpers it measures with at start-up, so a helper
moved to another folder (as Tests/support once was) breaks the script here, not in a user's
benchmark run. Runs no benchmark."""
import re
import subprocess
import sys

import pytest

from sightline_paths import REPO

# What the peer loops (a Python/OpenCV server as a user would write one) need beyond Tests/requirements.txt.
PEER_MODULES = {"cv2": "pip install opencv-python-headless"}
WITH_OPTIONS = sorted(p for p in (REPO / "scripts").glob("*.py") if "argparse" in p.read_text())


def test_the_scripts_with_options_are_found():
    assert len(WITH_OPTIONS) >= 10, [p.name for p in WITH_OPTIONS]


@pytest.mark.parametrize("script", WITH_OPTIONS, ids=lambda p: p.name)
def test_script_starts_and_prints_its_usage(script, tmp_path):
    run = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    missing = re.search(r"No module named '([\w.]+)'", run.stderr)
    if run.returncode != 0 and missing and missing.group(1) in PEER_MODULES:
        pytest.skip(f"{script.name} needs {missing.group(1)}, not installed here ({PEER_MODULES[missing.group(1)]})")
    assert run.returncode == 0, f"{script.name} --help: exit {run.returncode}\n{run.stderr[-2000:]}"
    assert "usage:" in run.stdout, run.stdout[:500]
    assert list(tmp_path.iterdir()) == [], f"{script.name} --help wrote files"
