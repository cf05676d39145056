# Sightline: the two commands a newcomer needs are `make demo` and `make test`.
# One build configuration serves both (release, with testing enabled), so the
# tests run against the same optimized binary people use.

SWIFT_FLAGS := -c release -Xswiftc -enable-testing
BIN := $(CURDIR)/.build/release/sightline
PORT ?= 8080

.PHONY: setup build demo test test-swift test-web test-e2e test-browser bench loadtest clean

setup:
	bash scripts/setup.sh

build:
	swift build $(SWIFT_FLAGS)

## Installs what is missing, builds, and serves the demo on http://127.0.0.1:$(PORT)/
demo: setup build
	$(BIN) serve --source demo --port $(PORT)

## Runs every test: Swift unit tests, web geometry tests, end-to-end and browser tests.
test: setup build
	$(MAKE) --no-print-directory test-swift test-web test-e2e test-browser

test-swift:
	swift test $(SWIFT_FLAGS)

test-web:
	node --test Tests/web/

test-e2e:
	SIGHTLINE_BIN=$(BIN) python3 -m pytest -q Tests/e2e

test-browser:
	SIGHTLINE_BIN=$(BIN) python3 -m pytest -q Tests/browser

## Per-stage timings and a 60 s live run on the demo, as JSON.
bench: build
	$(BIN) bench --live-seconds 60

## 10 WebSocket clients against a demo server for 60 s: latency and fps.
loadtest: build
	python3 scripts/loadtest.py --spawn --bin $(BIN) --clients 10 --seconds 60

clean:
	rm -rf .build artifacts
