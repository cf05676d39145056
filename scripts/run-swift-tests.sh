#!/usr/bin/env bash
# Runs the Swift tests (Swift Testing) of the release build in three processes at once, then
# prints each one's output in turn; fails when any of them fails.
#
# Why three: Swift Testing runs a process's tests on Swift's cooperative thread pool, one thread
# per core, and a test that waits (for a capture thread, a socket, a timeout) holds its thread
# while it waits. On 2 cores one process ran 66 CPU s of tests in 48.6 s; three processes (the
# Vision tests, the Pipeline and Core tests, the rest) run them in 36 s, about what the CPU
# allows. The groups are cut by test target, and the last one takes every target the others do
# not, so no test is left out.
#
#   scripts/run-swift-tests.sh [BUILD_DIR]     (default .build/release)
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="${1:-.build/release}/SightlinePackageTests.xctest"
if [ ! -x "$bundle" ]; then
  echo "run-swift-tests: $bundle is missing; build it first (make build-tests)" >&2
  exit 1
fi

first="SightlineVisionTests"
second="SightlinePipelineTests|SightlineCoreTests"
groups=(
  "--filter $first"
  "--filter $second"
  "--skip $first|$second"
)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for i in "${!groups[@]}"; do
  # shellcheck disable=SC2086  # each group is an option and its pattern
  "$bundle" --testing-library swift-testing ${groups[$i]} >"$logs/$i.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!groups[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; fi
  echo "=== Swift tests, ${groups[$i]}"
  cat "$logs/$i.log"
done
if [ "$failed" -ne 0 ]; then
  echo "run-swift-tests: some Swift tests failed (the ✘ lines above)" >&2
fi
exit "$failed"
