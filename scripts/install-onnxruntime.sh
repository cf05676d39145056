#!/usr/bin/env bash
# Installs ONNX Runtime's CPU library as /usr/local/lib/libonnxruntime.so.1, which
# Sightline opens at run time for the YuNet face network (about three times faster
# than Debian 12's OpenCV dnn; without it faces run on OpenCV, as `faces.runtime: auto`
# says in the log). Debian 12 has no package of it; PyPI's `onnxruntime` wheel carries
# the library with its C API, so this fetches that wheel (scripts/pypi-fetch.py, checked
# against the index's sha256 and the one pinned here) and copies the library out of it.
# Nothing else of the wheel (its Python module) is installed. Safe to run again.
#
#   scripts/install-onnxruntime.sh [PREFIX]      (default /usr/local; needs root there)
set -euo pipefail
cd "$(dirname "$0")/.."

version=1.32.0
prefix=${1:-/usr/local}
case "$(uname -m)" in
  x86_64) wheel=onnxruntime-$version-cp311-cp311-manylinux_2_28_x86_64.whl
          sha256=5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d ;;
  aarch64) wheel=onnxruntime-$version-cp311-cp311-manylinux_2_28_aarch64.whl sha256= ;;
  *) echo "install-onnxruntime: no PyPI build for $(uname -m); faces run on OpenCV's dnn" >&2; exit 1 ;;
esac
library=libonnxruntime.so.$version

if [ -e "$prefix/lib/$library" ]; then
  echo "install-onnxruntime: $prefix/lib/$library is there"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 scripts/pypi-fetch.py "$work" "onnxruntime:$wheel"
if [ -n "$sha256" ] && [ "$(sha256sum "$work/$wheel" | cut -d' ' -f1)" != "$sha256" ]; then
  echo "install-onnxruntime: $wheel is not the build pinned here (sha256 $sha256)" >&2
  exit 1
fi
python3 - "$work/$wheel" "$work/$library" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    name = "onnxruntime/capi/" + out.rsplit("/", 1)[-1]
    with archive.open(name) as src, open(out, "wb") as dst:
        dst.write(src.read())
PY
as_root=()
if [ ! -w "$prefix/lib" ] && [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
"${as_root[@]}" install -D -m 0644 "$work/$library" "$prefix/lib/$library"
"${as_root[@]}" ln -sf "$library" "$prefix/lib/libonnxruntime.so.1"
command -v ldconfig >/dev/null 2>&1 && "${as_root[@]}" ldconfig || true
echo "install-onnxruntime: $prefix/lib/libonnxruntime.so.1 -> $library (PyPI onnxruntime $version)"
