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


def _cpu_seconds() -> float:
    """CPU seconds of this pytest process and of the children it has waited for (servers,
    Chromium, ffmpeg): a test's share is the difference across its setup, call and teardown."""
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With SIGHTLINE_TEST_CPU=FILE, appends one JSON line per test to FILE: its wall and CPU
    seconds (the test process and the processes it started and stopped; a module-scoped
    server's CPU counts to the module's last test). `python3 scripts/test-cpu.py FILE` sums
    them: where `make test`'s time goes on a machine with few cores."""
    import os
    import time
    path = os.environ.get("SIGHTLINE_TEST_CPU")
    if not path:
        yield
        return
    import json
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    line = {"test": item.nodeid, "wall": round(time.monotonic() - wall, 2), "cpu": round(_cpu_seconds() - cpu, 2)}
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\n")
