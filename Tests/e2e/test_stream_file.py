"""/ws with a file source (vtest.avi) and a template cut from one of its own frames."""

import io
import time

import pytest

from conftest import FrameLog, best_detection, check_frame_pairs, decode_jpeg, iou, receive_frames, stream_window

MIN_PAIRS = 60
MIN_IOU = 0.5
MIN_HIT_RATE = 0.90
CROP_W, CROP_H = 90, 70
MIN_STDDEV = 20.0
TOP_FRACTION = 0.45      # search the top part of the frame (static buildings)
MAX_MOTION = 6.0         # mean absolute grey difference allowed between snapshots


def grab_snapshots(server, count=3, spacing=0.8, timeout=20.0):
    """`count` decoded /snapshot.jpg images, `spacing` s of the video apart (counted in frames
    the server processed; 503 until the first frame)."""
    images = []
    deadline = time.monotonic() + timeout
    while len(images) < count and time.monotonic() < deadline:
        status, headers, body = server.get("/snapshot.jpg", timeout=5.0)
        if status == 200:
            images.append(decode_jpeg(body))
            if len(images) < count:
                stream_window(server, spacing, timeout=max(1.0, deadline - time.monotonic()))
        else:
            assert status == 503, f"/snapshot.jpg -> {status} (expected 200, or 503 before the first frame)"
            time.sleep(0.2)
    assert len(images) == count, f"got {len(images)}/{count} snapshots in {timeout:.0f} s"
    return images


def uniqueness(gray, box, step=2, scale=4):
    """How distinct the crop is from every other place in the frame: the smallest mean
    absolute difference between the crop and any window not overlapping it much,
    computed on a 1/`scale` image. Larger is better."""
    from PIL import ImageChops, ImageStat

    small = gray.resize((gray.width // scale, gray.height // scale))
    x, y, w, h = (v // scale for v in box)
    tmpl = small.crop((x, y, x + w, y + h))
    best = 1e9
    for yy in range(0, small.height - h + 1, step):
        for xx in range(0, small.width - w + 1, step):
            if abs(xx - x) < w // 2 and abs(yy - y) < h // 2:
                continue
            diff = ImageChops.difference(small.crop((xx, yy, xx + w, yy + h)), tmpl)
            best = min(best, ImageStat.Stat(diff).mean[0])
    return best


def choose_crop(images):
    """A CROP_W x CROP_H box in the top part of the frame that is textured, static across
    the snapshots, and unlike the rest of the frame."""
    from PIL import ImageChops, ImageStat

    grays = [im.convert("L") for im in images]
    W, H = grays[0].size
    candidates = []
    for y in range(0, max(1, int(H * TOP_FRACTION) - CROP_H), 6):
        for x in range(0, W - CROP_W, 6):
            box = (x, y, x + CROP_W, y + CROP_H)
            ref = grays[0].crop(box)
            std = ImageStat.Stat(ref).stddev[0]
            if std <= MIN_STDDEV:
                continue
            motion = max(ImageStat.Stat(ImageChops.difference(ref, g.crop(box))).mean[0]
                         for g in grays[1:])
            if motion > MAX_MOTION:
                continue
            candidates.append((std, (x, y, CROP_W, CROP_H)))
    if not candidates:
        pytest.fail(f"no static {CROP_W}x{CROP_H} region with stddev > {MIN_STDDEV} in the top "
                    f"{TOP_FRACTION:.0%} of the frame (frame {W}x{H})")
    candidates.sort(reverse=True)
    # Among the most textured, keep boxes that don't overlap each other, then take the
    # most distinctive one so a correct matcher has a single right answer.
    picked = []
    for std, box in candidates:
        if all(abs(box[0] - b[0]) >= CROP_W or abs(box[1] - b[1]) >= CROP_H for _, b in picked):
            picked.append((std, box))
        if len(picked) >= 6:
            break
    scored = [(uniqueness(grays[0], b), std, b) for std, b in picked]
    scored.sort(reverse=True)
    return scored[0]


def test_stream_file(sightline, testdata, tmp_path):
    video = testdata / "video" / "vtest.avi"
    if not video.is_file():
        pytest.skip(f"{video} not found; set SIGHTLINE_TEST_DATA")

    # 1. A first server run gives us real frames of the video.
    first = sightline(source=f"file:{video}")
    images = grab_snapshots(first)
    first.stop_checked()
    W, H = images[0].size
    assert all(im.size == (W, H) for im in images), [im.size for im in images]

    distinct, std, (cx, cy, cw, ch) = choose_crop(images)
    crop = images[0].crop((cx, cy, cx + cw, cy + ch))
    crop_path = tmp_path / "crop.png"
    crop.save(crop_path, format="PNG")
    from PIL import Image, ImageStat

    with Image.open(io.BytesIO(crop_path.read_bytes())) as check:
        assert check.size == (CROP_W, CROP_H)
        assert ImageStat.Stat(check.convert("L")).stddev[0] > MIN_STDDEV
    cut = {"x": cx / W, "y": cy / H, "w": cw / W, "h": ch / H}
    info = f"crop at ({cx},{cy}) {cw}x{ch} of {W}x{H}, stddev {std:.1f}, distinctiveness {distinct:.1f}"

    # 2. Restart with that crop as template "street".
    server = sightline("--template", f"{crop_path}=street", source=f"file:{video}")
    state = server.state()
    names = {t.get("name"): t for t in state.get("templates", [])}
    assert "street" in names, f"/api/state templates {state.get('templates')} lack 'street'"
    assert (names["street"].get("width"), names["street"].get("height")) == (CROP_W, CROP_H), names["street"]

    with server.ws() as ws:
        log = receive_frames(ws, FrameLog(), pairs=MIN_PAIRS + 5, timeout=45.0)
    server.assert_alive()
    assert len(log.pairs) >= MIN_PAIRS, \
        f"received only {len(log.pairs)} pairs in 45 s from the file source (closed: {log.closed}; server: {server.summary()})"
    check_frame_pairs(log, "file client")
    for meta, _, _, _ in log.pairs:
        assert (meta["width"], meta["height"]) == (W, H), \
            f"frame {meta['seq']} is {meta['width']}x{meta['height']}, snapshot was {W}x{H}"

    hits = 0
    misses = []
    for meta, _, _, _ in log.pairs:
        det = best_detection(meta, "street")
        score = iou(det["box"], cut) if det else 0.0
        if score >= MIN_IOU:
            hits += 1
        elif len(misses) < 5:
            misses.append({"seq": meta["seq"], "detection": det, "iou": round(score, 3)})
    rate = hits / len(log.pairs)
    print(f"file: {info}; 'street' hit on {hits}/{len(log.pairs)} frames")
    assert rate >= MIN_HIT_RATE, (
        f"template 'street' within IoU>={MIN_IOU} of the cut box {cut} on {hits}/{len(log.pairs)} "
        f"frames ({rate:.0%} < {MIN_HIT_RATE:.0%}); {info}; first misses: {misses}")
