"""/ws with the synthetic demo source: pairs, order, JPEG integrity, template accuracy."""

from conftest import FrameLog, best_detection, check_frame_pairs, iou, receive_frames

MIN_PAIRS = 60
MIN_IOU = 0.5
MIN_HIT_RATE = 0.90


def test_stream_demo(sightline):
    server = sightline(source="demo")
    with server.ws() as ws:
        log = receive_frames(ws, FrameLog(), pairs=MIN_PAIRS + 10, timeout=30.0)
    server.assert_alive()

    assert len(log.pairs) >= MIN_PAIRS, (
        f"received only {len(log.pairs)} JSON+JPEG pairs in 30 s (closed: {log.closed}; server: {server.summary()}, "
        f"other messages: {log.other_text[:3]})")
    check_frame_pairs(log, "demo client")

    # capturedAt is wall-clock seconds since the epoch on this machine, non-decreasing.
    last = None
    for meta, _, _, t_bin in log.pairs:
        cap = meta["capturedAt"]
        assert isinstance(cap, (int, float))
        assert -0.5 <= t_bin - cap <= 5.0, \
            f"seq {meta['seq']}: capturedAt {cap} vs receipt {t_bin:.3f}: not wall-clock seconds?"
        if last is not None:
            assert cap >= last, f"seq {meta['seq']}: capturedAt went backwards"
        last = cap

    # Template "demo" versus the demo scene's ground truth.
    with_truth = 0
    hits = 0
    misses = []
    for meta, _, _, _ in log.pairs:
        truth = [g for g in meta.get("groundTruth", []) if g.get("label") == "demo"]
        if not truth:
            continue
        with_truth += 1
        det = best_detection(meta, "demo")
        score = iou(det["box"], truth[0]["box"]) if det else 0.0
        if score >= MIN_IOU:
            hits += 1
        elif len(misses) < 5:
            misses.append({"seq": meta["seq"], "truth": truth[0]["box"],
                           "detection": det, "iou": round(score, 3)})
    assert with_truth >= 0.9 * len(log.pairs), (
        f"only {with_truth}/{len(log.pairs)} demo frames carry groundTruth for label 'demo'")
    rate = hits / with_truth
    assert rate >= MIN_HIT_RATE, (
        f"template 'demo' within IoU>={MIN_IOU} of ground truth on {hits}/{with_truth} "
        f"frames ({rate:.0%} < {MIN_HIT_RATE:.0%}); first misses: {misses}")

    # The stream keeps going after we read: the server saw the client leave (no viewer counted)
    # and processed frames after that.
    gone = server.wait_state(lambda s: s["clients"]["ws"] == 0, what="the reader's departure seen by the server")
    server.wait_state(lambda s: s["frames"]["processed"] > gone["frames"]["processed"],
                      what="frames processed after the reader left")
    server.assert_alive()
