# Sightline: the two commands a newcomer needs are `make demo` and `make test`.
# One build configuration serves both (release, with testing enabled), so the
# tests run against the same optimized binary people use.

SWIFT_FLAGS := -c release -Xswiftc -enable-testing
BIN := $(CURDIR)/.build/release/sightline
PORT ?= 8080
# pytest-xdist workers for the e2e and browser suites: twice the cores (most of a test's time is
# waiting on a server, a browser or a clock), at most 8; TEST_JOBS=1 runs them one at a time.
# The browser suite takes one worker per core, at most 3 (each runs a Chromium): on 2 cores a
# third was no faster (175 s against 169) and loaded the machine more.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n * 2 > 8 ? 8 : n * 2 )))
BROWSER_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 3 ? 3 : n )))

.PHONY: setup setup-tests build build-tests demo test test-layers test-swift test-web test-e2e test-browser test-perf tsan bench loadtest fuzz models man docs install clean

## What the server builds with (make demo); setup-tests adds what the tests talk to (make test).
setup:
	bash scripts/setup.sh

setup-tests:
	bash scripts/setup.sh --tests

build:
	swift build $(SWIFT_FLAGS)

## The server and the Swift tests in one build (make test builds once, then runs).
build-tests:
	swift build $(SWIFT_FLAGS) --build-tests

## Installs what is missing, builds, and serves the demo on http://127.0.0.1:$(PORT)/
demo: setup build
	$(BIN) serve --source demo --port $(PORT)

## Runs every test: Swift unit tests, web geometry tests, end-to-end and browser tests.
## One suite after another: run beside the browser suite the Swift tests made both slower (171 s
## and 240 s against 51 and 181), and beside the e2e suite (at nice 19) the e2e servers' camera
## adds went unanswered for 10 s (three tests failed in one CI run).
test: setup-tests build-tests
	$(MAKE) --no-print-directory test-layers test-swift test-web test-e2e test-browser

## Fails when a Swift file imports a layer its target must not (HTTP knows nothing of frames, ...).
test-layers:
	python3 scripts/check-layers.py

## Three test processes at once (scripts/run-swift-tests.sh says why); `swift test $(SWIFT_FLAGS)
## --skip-build` runs the same tests in one.
test-swift: build-tests
	bash scripts/run-swift-tests.sh

test-web:
	node --test Tests/web/

test-e2e:
	SIGHTLINE_BIN=$(BIN) python3 -m pytest -q -n $(TEST_JOBS) --dist loadfile --durations=20 Tests/e2e

## The page plays H.264 where the browser can (Chromium on 127.0.0.1 can); its main tests run
## again on JPEG (Tests/browser/test_page_jpeg.py) beside the others.
test-browser:
	SIGHTLINE_BIN=$(BIN) python3 -m pytest -q -n $(BROWSER_JOBS) --dist loadfile --durations=10 Tests/browser

## Rates and timings asserted on throttled links (pytest -m perf; not part of make test: on a
## shared machine they say as much about its other work as about the server).
test-perf:
	SIGHTLINE_BIN=$(BIN) python3 -m pytest -q -m perf Tests/e2e Tests/browser

## The Swift tests under ThreadSanitizer (not part of make test: a debug build of its own in
## .build-tsan, about 5 min, and a run of about 15 min on 2 cores); fails on any report.
tsan:
	swift build --build-tests -c debug --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS="halt_on_error=0" bash -o pipefail -c 'swift test -c debug --sanitize=thread --scratch-path .build-tsan --skip-build 2>&1 | tee .build-tsan/tsan.log' \
	  || { echo "tsan: $$(grep -c 'WARNING: ThreadSanitizer' .build-tsan/tsan.log) reports, or a test failed (.build-tsan/tsan.log)"; exit 1; }

## Per-stage timings and a 60 s live run on the demo, as JSON.
bench: build
	$(BIN) bench --live-seconds 60

## 10 WebSocket clients against a demo server for 60 s: latency and fps.
loadtest: build
	python3 scripts/loadtest.py --spawn --bin $(BIN) --clients 10 --seconds 60

## libFuzzer on the request routing, the upload checks and the form parser: each target
## FUZZ_SECONDS (600) from the seed corpus in Tests/Fuzz/corpus; crashes in .build/fuzz/crashes.
## AddressSanitizer checks every access; LeakSanitizer's per-input check is off: it cannot
## follow a reference Swift keeps in an enum payload's spare bits (Data's storage), so a
## request or response still in flight when an input ends reads as a leak.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := FuzzRouting FuzzUpload FuzzForms
FUZZ_BUILD := SIGHTLINE_FUZZ=1 swift build -c debug --build-path .build/fuzz -Xswiftc -sanitize=fuzzer,address

fuzz: setup
	for t in $(FUZZ_TARGETS); do $(FUZZ_BUILD) --product $$t || exit 1; done
	mkdir -p .build/fuzz/crashes
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build/fuzz/corpus/$$t; \
	  .build/fuzz/debug/$$t .build/fuzz/corpus/$$t Tests/Fuzz/corpus/$$t -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=65536 -timeout=10 -rss_limit_mb=4096 -detect_leaks=0 -print_final_stats=1 \
	    -artifact_prefix=.build/fuzz/crashes/$$t- > .build/fuzz/$$t.log 2>&1; status=$$?; \
	  tail -n 25 .build/fuzz/$$t.log; \
	  [ $$status = 0 ] || { echo "fuzz: $$t failed (.build/fuzz/$$t.log; its input is in .build/fuzz/crashes/)"; exit 1; }; \
	done

## The man page, docs/sightline.1 (`man ./docs/sightline.1`), from the command's own definitions:
## swift-argument-parser's generate-manual (the tool its GenerateManual plugin runs) on the built
## binary, through scripts/man-help.sh, which shows the hidden flags too. Commit the result;
## Tests/e2e/test_man_page.py fails when a command or flag is missing from it.
MAN_DATE ?= $(shell git log -1 --format=%cs 2>/dev/null || date +%F)

man: build
	swift build --product generate-manual
	SIGHTLINE_BIN=$(BIN) .build/debug/generate-manual scripts/man-help.sh --date $(MAN_DATE) \
	  --authors "the Sightline authors" --output-directory docs

## The config reference in docs/configuration.md (the table between its settings:begin and
## settings:end markers) from the settings catalog; commit the result. SettingsCatalogTests
## fails when the table differs from the catalog.
docs: build
	$(BIN) config-reference --update docs/configuration.md

## For machines with internet: the 640x640 YuNet model, checked by sha256, into models/
## (the 320 one is committed there and used by default); use it with --face-model or faces.model.
YUNET_640_URL := https://github.com/opencv/opencv_zoo/raw/main/models/face_detection_yunet/face_detection_yunet_2023mar.onnx
YUNET_640_SHA := 8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4

models: models/face_detection_yunet_2023mar.onnx
	@echo "use it with: --face-model models/face_detection_yunet_2023mar.onnx (or faces.model in config)"

models/face_detection_yunet_2023mar.onnx:
	bash scripts/fetch-model.sh $(YUNET_640_URL) $(YUNET_640_SHA) $@

## Installs the binary and its media library (loaded for video files and streams), the page and demo files, the config (kept if present), the
## man page and the systemd unit: make install [PREFIX=/usr/local] [SYSCONFDIR=/etc] [UNITDIR=/etc/systemd/system] [DESTDIR=]
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= /etc/systemd/system
SHARE := $(DESTDIR)$(PREFIX)/share/sightline

install:
	test -x $(BIN) || $(MAKE) --no-print-directory build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/sightline
	install -D -m 0644 $(dir $(BIN))libSightlineMedia.so $(DESTDIR)$(PREFIX)/lib/sightline/libSightlineMedia.so
	mkdir -p $(SHARE)/web $(SHARE)/config
	cp -R web/. $(SHARE)/web/
	install -m 0644 config/demo-template.png README.md $(SHARE)/config/
	if [ -d models ]; then mkdir -p $(SHARE)/models && cp -R models/. $(SHARE)/models/; fi
	install -D -m 0644 LICENSE $(DESTDIR)$(PREFIX)/share/doc/sightline/LICENSE
	install -m 0644 THIRD_PARTY_NOTICES.md $(DESTDIR)$(PREFIX)/share/doc/sightline/
	install -D -m 0644 docs/sightline.1 $(DESTDIR)$(PREFIX)/share/man/man1/sightline.1
	test -e $(DESTDIR)$(SYSCONFDIR)/sightline/sightline.yaml \
	  || install -D -m 0644 config/sightline.yaml $(DESTDIR)$(SYSCONFDIR)/sightline/sightline.yaml
	mkdir -p $(DESTDIR)$(UNITDIR)
	sed 's|@BINDIR@|$(PREFIX)/bin|g' config/sightline.service > $(DESTDIR)$(UNITDIR)/sightline.service

clean:
	rm -rf .build artifacts
