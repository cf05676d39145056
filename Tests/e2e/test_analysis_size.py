"""Analysis at the size it needs: a 1920x1080 H.264 video composed here (scene1080:
scikit-image's photos, not the shared test data) is served from a file; the pipeline
analyses a 640x360 copy of each frame (analysis.size, default 640), and the boxes it
sends, normalized, lie where the scene put the template and both faces on the full
picture, the small face (~70 px wide, 23 px on the copy) included. Each received frame
says which frame of the video it is by the bar code in its corner."""

import io
import json
import subprocess
import time

import pytest

from conftest import REPO, FrameLog, iou, receive_frames, server_binary
import scene1080

PAIRS = 60


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    directory = tmp_path_factory.mktemp("scene1080")
    video = scene1080.write_video(directory / "scene1080.mp4")
    pictures = scene1080.write_pictures(directory / "pictures")
    # Where each face lies in its own picture, as the detector itself reads it there.
    done = subprocess.run([str(server_binary()), "detect", "--json",
                           str(pictures["large"]), str(pictures["small"])],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    faces = {}
    for name, line in zip(("large", "small"), done.stdout.strip().splitlines()):
        found = [d for d in json.loads(line)["detections"] if d["kind"] == "face"]
        assert len(found) == 1, (name, found)
        faces[name] = found[0]["box"]
    return video, pictures, faces


def test_template_and_faces_are_boxed_where_the_1080p_scene_put_them(sightline, scene):
    from PIL import Image

    video, pictures, faces = scene
    server = sightline("--template", f"{pictures['template']}=coffee", source=f"file:{video}")
    server.wait_live(timeout=30)
    state = server.state()
    assert state["faces"]["detector"] == "yunet-320", state.get("faces")
    # The first second: the first passes and the fine pass that finds the small face.
    # The full picture (?full=1): a 1080p frame's stream JPEG is at most 1280 wide.
    with server.ws("/ws?full=1") as ws:
        receive_frames(ws, FrameLog(), seconds=3, timeout=30)
        log = receive_frames(ws, FrameLog(), pairs=PAIRS, timeout=60)
    log.check_ok()
    assert len(log.pairs) == PAIRS

    scores = {"template": [], "large": [], "small": []}
    indices = []
    for meta, jpeg, *_ in log.pairs:
        assert (meta["width"], meta["height"]) == (1920, 1080)
        picture = Image.open(io.BytesIO(jpeg))
        assert picture.size == (1920, 1080)
        index = scene1080.read_index(picture)
        assert 0 <= index < scene1080.FRAMES
        indices.append(index)
        truth = scene1080.face_boxes(index, faces)
        truth["template"] = scene1080.template_box(index)
        found = {"template": [d["box"] for d in meta["detections"] if d["kind"] == "template"],
                 "face": [d["box"] for d in meta["detections"] if d["kind"] == "face"]}
        for name, box in truth.items():
            candidates = found["template" if name == "template" else "face"]
            scores[name].append(max((iou(box, c) for c in candidates), default=0.0))
        # Nothing found where nothing was put.
        assert len(found["face"]) <= 2 and len(found["template"]) <= 1, meta["detections"]

    report = {name: (sum(s >= 0.5 for s in values), round(sorted(values)[len(values) // 2], 3))
              for name, values in scores.items()}
    print("frames with IoU >= 0.5 and median IoU, of", PAIRS, report)
    for name, values in scores.items():
        missed = [(i, round(s, 2)) for i, s in zip(indices, values) if s < 0.5]
        assert sum(s >= 0.5 for s in values) >= 0.9 * PAIRS, (name, report, "missed (frame, IoU):", missed)
