"""Where the e2e and browser tests find the server binary, the shared test data and the face
models, and the skips (written once here) for a machine that lacks one of them.

Environment:
  SIGHTLINE_BIN        server binary (default <repo>/.build/release/sightline)
  SIGHTLINE_TEST_DATA  shared test data (default <repo>/../shared/testdata)
  SIGHTLINE_MODELS     face models (default <repo>/../shared/models)
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEB_ROOT = REPO / "web"
DEFAULT_BIN = REPO / ".build" / "release" / "sightline"
DEFAULT_TEST_DATA = REPO.parent / "shared" / "testdata"
TEST_DATA = Path(os.environ.get("SIGHTLINE_TEST_DATA", str(DEFAULT_TEST_DATA)))
MODELS = Path(os.environ.get("SIGHTLINE_MODELS", str(REPO.parent / "shared" / "models")))
YUNET = MODELS / "face_detection_yunet_2023mar_320.onnx"      # the detector's default size
YUNET_640 = MODELS / "face_detection_yunet_2023mar.onnx"


def server_binary() -> Path:
    """The sightline binary, or a skip that says how to build it."""
    path = Path(os.environ.get("SIGHTLINE_BIN", str(DEFAULT_BIN)))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"sightline binary not found at {path}; build it with "
                    f"`swift build -c release` or set SIGHTLINE_BIN")
    return path


def shared_data(*parts: str) -> Path:
    """A file or folder of the shared test data, or a skip that names it."""
    path = TEST_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"Sightline test data not found at {path}; set SIGHTLINE_TEST_DATA")
    return path


def yunet_model(path: Path = YUNET, why: str = "") -> Path:
    """The YuNet face model (the 320 one unless `path`), or a skip: the test's real part needs it."""
    if not path.is_file():
        pytest.skip(f"{why + ': ' if why else ''}YuNet model not found at {path}; set SIGHTLINE_MODELS")
    return path
