"""A client sending an oversized message is closed with 1009; other clients carry on."""

import threading
import time

from websockets.exceptions import ConnectionClosed

from conftest import FrameLog, check_frame_pairs, receive_frames

BIG = 1024 * 1024          # 1 MiB, over the 64 KiB limit


def test_ws_oversized_message_closes_only_that_client(sightline):
    server = sightline(source="demo")
    with server.ws() as good, server.ws() as bad:
        # The good client reads continuously in the background for the whole test.
        stop = threading.Event()
        log = FrameLog()
        reader = threading.Thread(target=receive_frames, args=(good, log),
                                  kwargs={"timeout": 30.0, "stop": stop}, daemon=True)
        reader.start()
        try:
            # Both clients are live first.
            bad.recv(timeout=10)
            deadline = time.monotonic() + 10
            while len(log.pairs) < 5 and time.monotonic() < deadline and reader.is_alive():
                time.sleep(0.05)
            assert len(log.pairs) >= 5, "good client received no frames before the test started"

            closed = None
            try:
                bad.send(b"\x00" * BIG)
            except ConnectionClosed as e:  # the server may close while we are still sending
                closed = e
            except OSError:
                pass  # reset mid-send; the recv loop below reports how the connection ended
            deadline = time.monotonic() + 10
            for _ in range(100000):
                if closed is not None or time.monotonic() > deadline:
                    break
                try:
                    bad.recv(timeout=0.5)   # frames may still arrive before the close
                except TimeoutError:
                    pass
                except ConnectionClosed as e:
                    closed = e
            assert closed is not None, "client that sent 1 MiB was not closed within 10 s"
            assert closed.rcvd is not None, \
                f"server dropped the connection without a close frame ({closed})"
            assert closed.rcvd.code == 1009, \
                f"close code {closed.rcvd.code} ({closed.rcvd.reason!r}), expected 1009 (message too big)"
            t_closed = time.time()

            # The good client keeps receiving frames after the other was closed.
            before = sum(1 for p in log.pairs if p[3] > t_closed)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and reader.is_alive():
                if sum(1 for p in log.pairs if p[3] > t_closed) >= 30:
                    break
                time.sleep(0.1)
        finally:
            stop.set()
            reader.join(timeout=5)
        after = sum(1 for p in log.pairs if p[3] > t_closed)
        assert log.closed is None, f"the good client was closed too: {log.closed}"
        assert after >= 30, (f"good client got only {after} frames in the 10 s after the other "
                             f"client was closed (had {before} at close time); server: {server.summary()}")
        check_frame_pairs(log, "good client")
    server.assert_alive()
    assert server.state()["frames"]["processed"] > 0
