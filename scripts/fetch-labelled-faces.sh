#!/usr/bin/env bash
# Gathers the photos whose faces are labelled in Tests/e2e/face_attribute_labels.json
# (smiling, eyes open or closed) into .build/labelled-faces/ (or $1), for
# Tests/e2e/test_face_attributes.py. They are not kept in git: they come from
# dlib's examples that Debian installs with libdlib-dev (libdlib19.1's
# /usr/share/doc/.../examples/faces) and from the test images of two PyPI
# source packages (face_recognition 1.3.0, insightface 2.1), fetched with pip.
# Safe to run again: does nothing when every photo is there.
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
if python3 -m pip download -q --no-deps --no-binary :all: -d "$work" face_recognition==1.3.0 insightface==2.1 >/dev/null 2>&1; then
  tar -xzf "$work"/face_recognition-1.3.0.tar.gz -C "$work"
  tar -xzf "$work"/insightface-2.1.tar.gz -C "$work"
  for f in "$work"/face_recognition-1.3.0/tests/test_images/*.jpg; do cp "$f" "$out/frtest_$(basename "$f")"; done
  cp "$work"/insightface-2.1/insightface/data/images/t1.jpg "$out/insightface_t1.jpg"
else
  echo "fetch-labelled-faces: could not fetch face_recognition 1.3.0 and insightface 2.1 from PyPI" >&2
fi

still=$(for p in $wanted; do [ -s "$out/$p" ] || echo "$p"; done)
if [ -n "$still" ]; then
  echo "fetch-labelled-faces: still missing in $out:" $still >&2
  exit 1
fi
echo "fetch-labelled-faces: the labelled photos are in $out"
