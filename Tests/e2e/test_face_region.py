"""faces.region limits where faces are looked for, for YuNet and for the Haar fallback."""

import json

import pytest

from conftest import FrameLog, http_get, receive_frames, YUNET, yunet_model



def face_counts(server, pairs=12, warmup=4):
    with server.ws() as ws:
        log = receive_frames(ws, FrameLog(), pairs=pairs + warmup, timeout=30)
    return [sum(d["kind"] == "face" for d in meta["detections"]) for meta, *_ in log.pairs[warmup:]]


@pytest.mark.parametrize("detector", ["haar", "yunet"])
def test_faces_outside_the_region_are_not_looked_for(sightline, testdata, tmp_path, detector):
    model_args = ["--face-model", "haar"]
    if detector == "yunet":
        yunet_model()
        model_args = ["--face-model", YUNET]
    source = f"file:{testdata}/faces/grace_hopper.jpg"
    counts = {}
    for label, region in [("corner", "[0.0, 0.8, 0.2, 0.2]"), ("whole", "[0, 0, 1, 1]")]:
        config = tmp_path / f"{detector}-{label}.yaml"
        config.write_text(f"faces:\n  region: {region}\n")
        server = sightline("--config", config, *model_args, source=source)
        server.wait_live()
        faces = json.loads(http_get(server.port, "/api/state")[2])["faces"]
        assert faces["detector"] == ("haar" if detector == "haar" else "yunet-320"), faces
        counts[label] = face_counts(server)
        server.stop_checked()
    assert all(n == 0 for n in counts["corner"]), counts
    assert sum(n >= 1 for n in counts["whole"]) >= len(counts["whole"]) - 1, counts
