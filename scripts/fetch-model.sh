#!/usr/bin/env bash
# Downloads URL to OUT and keeps it only if its sha256 is EXPECTED.
# Usage: scripts/fetch-model.sh URL EXPECTED_SHA256 OUT
set -euo pipefail
url=$1 expected=$2 out=$3
mkdir -p "$(dirname "$out")"
tmp="$out.part"
curl -fL --retry 2 -o "$tmp" "$url"
actual=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$actual" != "$expected" ]; then
  rm -f "$tmp"
  echo "fetch-model: $url has sha256 $actual, expected $expected; not kept" >&2
  exit 1
fi
mv "$tmp" "$out"
echo "fetch-model: $out ($actual)"
