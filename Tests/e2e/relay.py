"""nginx with the RTMP module (Debian's nginx-light and libnginx-mod-rtmp) as a relay on a
loopback port, started and stopped by a test: `live` takes a published stream, plays it back
to readers at rtmp://127.0.0.1:PORT/live/NAME, and writes HLS into `hls_dir`."""

import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import terminate

NGINX = "/usr/sbin/nginx"
RTMP_MODULE = "/usr/lib/nginx/modules/ngx_rtmp_module.so"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NginxRTMP:
    def __init__(self, workdir: Path, port: int | None = None):
        if not Path(NGINX).is_file() or not Path(RTMP_MODULE).is_file():
            pytest.skip(f"nginx with the RTMP module not installed ({NGINX}, {RTMP_MODULE}): "
                        "apt-get install nginx-light libnginx-mod-rtmp")
        self.workdir = workdir
        self.port = port or free_port()
        self.hls_dir = workdir / "hls"
        self.hls_dir.mkdir(parents=True, exist_ok=True)
        (workdir / "logs").mkdir(exist_ok=True)
        self.config = workdir / "nginx.conf"
        self.config.write_text(f"""
load_module {RTMP_MODULE};
daemon off;
master_process off;
user root;
pid {workdir}/nginx.pid;
error_log {workdir}/logs/error.log info;
events {{ worker_connections 256; }}
rtmp {{
    server {{
        listen 127.0.0.1:{self.port};
        chunk_size 4096;
        application live {{
            live on;
            record off;
            hls on;
            hls_path {self.hls_dir};
            hls_fragment 1s;
            hls_playlist_length 6s;
            hls_cleanup off;
        }}
    }}
}}
""")
        self.process = None

    def url(self, name: str = "cam") -> str:
        return f"rtmp://127.0.0.1:{self.port}/live/{name}"

    def start(self) -> "NginxRTMP":
        self.process = subprocess.Popen([NGINX, "-p", str(self.workdir), "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=open(self.workdir / "logs" / "stderr.log", "ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {(self.workdir / 'logs' / 'stderr.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not listen within 10 s")

    def stop(self):
        terminate(self.process)
        self.process = None

    def log(self) -> str:
        path = self.workdir / "logs" / "error.log"
        return path.read_text()[-3000:] if path.exists() else ""
