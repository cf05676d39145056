"""Fixtures for every e2e and browser test (Tests/e2e/conftest.py adds the e2e suite's
`sightline` server factory and the helpers e2e modules import with `from conftest import ...`).

  testdata      the shared test data folder; the test skips without it
  yunet         the YuNet-320 face model; the test skips without it
  browser       one headless Chromium per test module
  driver        that browser, its viewport emulation reset after each test
  chromium      factory for a Chromium with flags of its own (quit after the test)
  server_url    a demo server for the session (or SIGHTLINE_URL)
  make_server   factory for servers a browser test starts, stops and restarts itself
  artifacts_dir <repo>/artifacts, for screenshots

The browser fixtures are defined in Tests/browser/browser_support.py, which browser test
modules import their helpers from. They live here, not in a Tests/browser/conftest.py: every
conftest.py is the module `conftest`, and with a second one loaded after Tests/e2e's, the e2e
modules' `from conftest import ...` would find the wrong one when both suites run in one call.
"""
from pathlib import Path

import pytest

from browser_support import artifacts_dir, browser, chromium, driver, make_server, server_url  # noqa: F401
from sightline_paths import TEST_DATA, yunet_model


@pytest.fixture
def testdata() -> Path:
    """The shared test data folder (SIGHTLINE_TEST_DATA); the test skips without it."""
    if not TEST_DATA.is_dir():
        pytest.skip(f"Sightline test data not found at {TEST_DATA}; set SIGHTLINE_TEST_DATA")
    return TEST_DATA


@pytest.fixture
def yunet() -> Path:
    """The YuNet-320 face model (SIGHTLINE_MODELS); the test skips without it."""
    return yunet_model()
