"""A loopback TCP proxy that passes the server's bytes to the client at a set
rate (a token bucket over small socket buffers), as a slow link would, and
the client's bytes back unthrottled. Traffic stays on 127.0.0.1."""

import socket
import threading
import time


class ThrottledProxy:
    def __init__(self, target_port: int, bits_per_second: float, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.rate = bits_per_second / 8
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # Small buffers: what the link cannot carry waits at the server, not in this proxy.
            upstream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
            upstream.connect(self.target)
            self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, self.rate), daemon=True).start()

    def _pump(self, source, sink, rate):
        due = time.monotonic()
        try:
            while True:
                data = source.recv(4096)
                if not data:
                    break
                sink.sendall(data)
                if rate:
                    now = time.monotonic()
                    due = max(due, now - 0.05) + len(data) / rate  # at most 50 ms of saved-up credit
                    if due > now:
                        time.sleep(due - now)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        for s in [self.listener] + self.sockets:
            try:
                s.close()
            except OSError:
                pass
