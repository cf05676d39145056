"""A real RTSP server for the end-to-end tests: GStreamer's gst-rtsp-server on 127.0.0.1.

pytest runs on its own Python, which cannot import Debian's `gi`; the server runs as a
child of Debian's /usr/bin/python3 (Tests/e2e/gst_rtsp_server.py) and says on stdout
when it listens. Three modes:

  play    serves a video file (anything decodebin reads, e.g. an MJPEG AVI from
          scenes.write_mjpeg_avi) as H.264 at `server.url`; every client session
          plays the file once from its start, in real time.
  copy    serves the H.264 track of an MP4 or MKV file (e.g. scene1080.write_video,
          scripts/make-camera-video.py) as it is, without re-encoding, as an IP camera
          does: every client session from the file's start, in real time, looped
          without end (timestamps go on growing across loops).
  record  accepts ANNOUNCE/RECORD of H.264 at `server.url` (RTP over TCP or UDP)
          and appends what it receives, Annex B, whole access units each starting
          with an access unit delimiter, to `server.out` (`server.recorded()`).

    with RtspServer("record", tmp_path, name="in") as relay:
        publish_to(relay.url)
        relay.wait_event("media-configure")          # a publisher announced
        units = access_units(relay.recorded())

`require_gst(mode)` skips the test, with what is missing, when Debian's GStreamer
pieces are not installed (scripts/setup.sh --tests installs them). SIGHTLINE_GST_PYTHON names
another interpreter that imports `gi` (default /usr/bin/python3).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

HOST = "127.0.0.1"
GST_PYTHON = os.environ.get("SIGHTLINE_GST_PYTHON", "/usr/bin/python3")
SCRIPT = Path(__file__).resolve().parent / "gst_rtsp_server.py"
ELEMENTS = {
    "play": ["filesrc", "decodebin", "videoconvert", "x264enc", "rtph264pay"],
    "copy": ["filesrc", "qtdemux", "matroskademux", "h264parse", "appsink", "appsrc", "rtph264pay"],
    "record": ["rtph264depay", "h264parse", "filesink"],
}
_problems: dict[str, str | None] = {}


def gst_problem(mode: str) -> str | None:
    """Why gst-rtsp-server cannot run in `mode` here, or None if it can."""
    if mode not in _problems:
        _problems[mode] = _check(mode)
    return _problems[mode]


def _check(mode: str) -> str | None:
    if not os.access(GST_PYTHON, os.X_OK):
        return f"{GST_PYTHON} not found (Debian's python3, which imports python3-gi)"
    probe = ("import gi; gi.require_version('Gst', '1.0'); gi.require_version('GstRtspServer', '1.0')\n"
             "from gi.repository import Gst, GstRtspServer\n"
             "Gst.init(None)\n"
             f"print(' '.join(e for e in {ELEMENTS[mode]!r} if Gst.ElementFactory.find(e) is None))\n")
    try:
        done = subprocess.run([GST_PYTHON, "-c", probe], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return f"{GST_PYTHON} took over 60 s to load GStreamer"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return (f"{GST_PYTHON} cannot load gst-rtsp-server ({last}); install python3-gi and "
                f"gir1.2-gst-rtsp-server-1.0 (scripts/setup.sh --tests)")
    missing = done.stdout.strip()
    if missing:
        return (f"GStreamer elements missing: {missing} (gstreamer1.0-plugins-good, -ugly, -bad; "
                f"scripts/setup.sh)")
    return None


def require_gst(mode: str) -> None:
    problem = gst_problem(mode)
    if problem:
        pytest.skip(f"no real RTSP server ({mode}): {problem}")


def access_units(annexb: bytes) -> list[bytes]:
    """Splits what record mode wrote into access units at its access unit delimiters
    (h264parse starts each with one; the delimiter stays at the unit's head)."""
    from h264 import nal_units

    units, current = [], []
    for kind, unit in nal_units(annexb):
        if kind == 9 and current:
            units.append(b"".join(b"\x00\x00\x00\x01" + u for u in current))
            current = []
        current.append(unit)
    if current:
        units.append(b"".join(b"\x00\x00\x00\x01" + u for u in current))
    return units


class RtspServer:
    """One gst-rtsp-server process; `restart()` brings it back on the same port.

    mode     "play" or "copy" (each needs `video`), or "record" (writes `out`, default
             WORKDIR/NAME.h264)
    workdir  where its log (and by default the recording) goes
    name     the mount path: rtsp://127.0.0.1:PORT/NAME
    port     0: a free port chosen by the server on first start, then kept
    key_int  play: frames between keyframes of the served H.264
    """

    def __init__(self, mode: str, workdir: Path, *, name: str = "stream", video: Path | None = None,
                 out: Path | None = None, port: int = 0, key_int: int = 10):
        assert mode in ELEMENTS, mode
        assert mode not in ("play", "copy") or video is not None, f"{mode} mode needs a video"
        self.mode = mode
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.video = Path(video) if video is not None else None
        self.out = Path(out) if out is not None else (self.workdir / f"{name}.h264" if mode == "record" else None)
        self.port = port
        self.key_int = key_int
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.log_path = self.workdir / f"rtsp-{mode}-{name}.log"
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self.port, "not started yet"
        return f"rtsp://{HOST}:{self.port}/{self.name}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def events(self) -> list[str]:
        """`EVENT` lines of the current process (client-connected, media-configure,
        media-unprepared), oldest first."""
        with self._lock:
            return [line[6:] for line in self._lines if line.startswith("EVENT ")]

    def wait_event(self, what: str, count: int = 1, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.events().count(what) >= count:
                return
            assert self.alive(), f"RTSP server exited\n{self.describe()}"
            time.sleep(0.05)
        raise AssertionError(f"RTSP server: {count} x {what!r} not seen in {timeout:.0f} s "
                             f"(events {self.events()})\n{self.describe()}")

    def recorded(self) -> bytes:
        """Everything record mode has written so far (all sessions, all restarts)."""
        assert self.out is not None, f"{self.mode} mode records nothing"
        return self.out.read_bytes() if self.out.exists() else b""

    def describe(self) -> str:
        try:
            log = self.log_path.read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            log = "<no log>"
        code = self.proc.poll() if self.proc else None
        return f"gst-rtsp-server {self.mode} {self.url if self.port else ''} exit={code}\n--- its stderr ---\n{log}"

    def start(self, timeout: float = 30.0) -> "RtspServer":
        """Starts the server and waits until it listens. On a restart the port is the
        one it had; a port not free again yet is retried until `timeout`."""
        require_gst(self.mode)
        assert not self.alive(), "already running"
        deadline = time.monotonic() + timeout
        args = [GST_PYTHON, str(SCRIPT), self.mode, "--name", self.name]
        if self.mode == "play":
            args += ["--file", str(self.video), "--key-int", str(self.key_int)]
        elif self.mode == "copy":
            args += ["--file", str(self.video)]
        else:
            args += ["--out", str(self.out)]
        problem = None
        for _ in range(100):
            if time.monotonic() >= deadline:
                break
            problem = self._launch(args + ["--port", str(self.port)], deadline)
            if problem is None:
                return self
            if not (self.port and "cannot listen" in problem):
                break
            time.sleep(0.2)
        raise AssertionError(f"RTSP server did not start: {problem}\n{self.describe()}")

    def _launch(self, args, deadline) -> str | None:
        with self._lock:
            self._lines = []
        log = open(self.log_path, "ab")
        env = dict(os.environ, GST_DEBUG_NO_COLOR="1")
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONHOME", None)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                     env=env, text=True, bufsize=1)
        log.close()
        self.starts += 1
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        while time.monotonic() < deadline:
            with self._lock:
                lines = list(self._lines)
            for line in lines:
                if line.startswith("READY "):
                    self.port = int(line.split()[1])
                    return None
                if line.startswith("ERROR "):
                    self.stop()
                    return line[6:]
            if self.proc.poll() is not None:
                self._reader.join(timeout=2)
                return f"exited with code {self.proc.returncode} before it listened"
            time.sleep(0.02)
        self.stop(kill=True)
        return "did not say READY in time"

    def _read(self, proc) -> None:
        for line in proc.stdout:   # ends when the process closes its stdout (exits)
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    def stop(self, kill: bool = False, timeout: float = 10.0) -> None:
        """Ends the server: SIGTERM (SIGKILL after `timeout`), or SIGKILL at once."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGCONT)  # a frozen server cannot act on SIGTERM
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if self._reader:
            self._reader.join(timeout=5)

    def freeze(self) -> None:
        """SIGSTOP: the server hangs with its connections open (a stalled network or
        host), until `thaw()`."""
        assert self.alive(), "not running"
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def restart(self, pause: float = 0.0, kill: bool = False, timeout: float = 30.0) -> "RtspServer":
        """Stops, waits `pause` seconds, starts again on the same port."""
        self.stop(kill=kill)
        time.sleep(pause)
        return self.start(timeout=timeout)

    def __enter__(self) -> "RtspServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
