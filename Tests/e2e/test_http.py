"""HTTP side: /api/state, /metrics, snapshots, MJPEG streams, static files and escapes."""

import json
import math
import re
import shutil

import pytest

from conftest import decode_jpeg, raw_http_get, read_mjpeg_parts, wait_until

NUMBER = (int, float)


def assert_number(obj, key, where, minimum=None):
    assert key in obj, f"{where} lacks {key!r}: {obj}"
    v = obj[key]
    assert isinstance(v, NUMBER) and not isinstance(v, bool), f"{where}.{key} = {v!r} is not a number"
    assert math.isfinite(v), f"{where}.{key} = {v!r}"
    if minimum is not None:
        assert v >= minimum, f"{where}.{key} = {v!r} < {minimum}"


def check_timing(obj, where):
    """{"p50": ms, "p99": ms, "count": n}; with no samples yet the percentiles may be
    omitted (unknown, not made up), otherwise they are required and ordered."""
    assert isinstance(obj, dict), f"{where} missing or not an object: {obj!r}"
    assert_number(obj, "count", where, 0)
    if obj["count"] > 0:
        assert_number(obj, "p50", where, 0)
        assert_number(obj, "p99", where, 0)
        assert obj["p99"] >= obj["p50"], f"{where}: p99 < p50: {obj}"
    else:
        for k in ("p50", "p99"):
            if k in obj:
                assert_number(obj, k, where, 0)


@pytest.fixture(scope="module")
def demo(module_sightline):
    """One demo server for the tests here that only read from it."""
    return module_sightline(source="demo")


# --------------------------------------------------------------------------- /api/state


def test_api_state(demo):
    server = demo
    status, headers, body = server.get("/api/state")
    assert status == 200
    assert "application/json" in headers.get("content-type", ""), headers.get("content-type")
    json.loads(body)
    server.wait_live()
    # The fps figures are ~2 s windows: wait until they have filled, not a fixed time.
    state = server.wait_state(lambda st: st["fps"]["capture"] > 5 and st["fps"]["processed"] > 5
                              and st["stages"]["template"]["count"] > 0,
                              timeout=20, what="fps windows filled (capture and processed > 5 fps)")

    assert isinstance(state.get("version"), str) and state["version"], state.get("version")
    assert_number(state, "uptimeSeconds", "state", 0)

    src = state.get("source")
    assert isinstance(src, dict), state
    assert src.get("spec") == "demo", src
    assert isinstance(src.get("name"), str), src
    assert src.get("state") == "live", src
    assert src.get("state") in ("live", "starting", "noSignal")
    assert "retryInSeconds" not in src, f"retryInSeconds only when noSignal: {src}"
    assert src.get("width") == 640 and src.get("height") == 480, src
    assert_number(src, "fps", "source", 1)
    assert isinstance(src.get("pixelFormat"), str), src

    for group, keys in (("fps", ("capture", "processed", "sent")),
                        ("frames", ("captured", "processed", "sent")),
                        ("drops", ("superseded", "late", "error"))):
        assert isinstance(state.get(group), dict), f"state lacks {group}: {state}"
        for k in keys:
            assert_number(state[group], k, group, 0)
    assert state["fps"]["capture"] > 5, f"demo capture fps {state['fps']}"
    assert state["fps"]["processed"] > 5, f"processed fps {state['fps']}"
    assert state["frames"]["captured"] >= state["frames"]["processed"] > 0, state["frames"]
    assert_number(state, "clientSkips", "state", 0)

    stages = state.get("stages")
    assert isinstance(stages, dict), state
    for name in ("convert", "template", "faces", "encode", "send"):
        check_timing(stages.get(name), f"stages.{name}")
    # The JPEG encode runs only on frames someone takes as JPEG (a viewer below; the demo's events' snapshots).
    assert stages["template"]["count"] > 0, f"template 'demo' loaded but template stage never ran: {stages}"
    lat = state.get("latency", {}).get("captureToSend")
    check_timing(lat, "latency.captureToSend")

    clients = state.get("clients")
    assert isinstance(clients, dict), state
    assert_number(clients, "ws", "clients", 0)
    assert_number(clients, "mjpeg", "clients", 0)
    assert_number(state, "bytesSent", "state", 0)

    templates = state.get("templates")
    assert isinstance(templates, list), state
    demo = [t for t in templates if t.get("name") == "demo"]
    assert demo, f"demo source without --template should load template 'demo': {templates}"
    assert_number(demo[0], "threshold", "templates[demo]")
    assert_number(demo[0], "width", "templates[demo]", 1)
    assert_number(demo[0], "height", "templates[demo]", 1)

    # A connected /ws client is counted, and the frames it is sent were encoded.
    with server.ws() as ws:
        ws.recv(timeout=10)
        assert server.state()["clients"]["ws"] >= 1
        assert server.state()["stages"]["encode"]["count"] > 0


# --------------------------------------------------------------------------- /metrics

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
VALUE = r"[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|inf|NaN|nan)"
SAMPLE_RE = re.compile(rf"^({METRIC_NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*,?)?\}})?[ \t]+({VALUE})(?:[ \t]+-?[0-9]+)?$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_prometheus(text):
    """Strictly parse Prometheus text exposition format 0.0.4.
    Returns (types{family: type}, helps{family}, samples[(name, labels, value)])."""
    types, helps, samples = {}, set(), []
    seen_sample_family = set()
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                assert re.fullmatch(METRIC_NAME, name), f"line {n}: bad metric name in {line!r}"
                if parts[1] == "TYPE":
                    assert len(parts) == 4 and parts[3].strip() in TYPES, f"line {n}: bad TYPE line {line!r}"
                    assert name not in types, f"line {n}: second TYPE for {name}"
                    assert name not in seen_sample_family, f"line {n}: TYPE for {name} after its samples"
                    types[name] = parts[3].strip()
                else:
                    assert name not in helps, f"line {n}: second HELP for {name}"
                    helps.add(name)
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"line {n} is not `name{{labels}} value`: {line!r}"
        name, labels_text, value = m.group(1), m.group(2) or "", m.group(3)
        labels = dict(LABEL_RE.findall(labels_text))
        samples.append((name, labels, float(value.replace("Inf", "inf"))))
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[: -len(suffix)]) in ("histogram", "summary"):
                family = name[: -len(suffix)]
        seen_sample_family.add(family)
    return types, helps, samples


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def captured_total(samples):
    vals = [v for n, _, v in samples if n == "sightline_frames_captured_total"]
    assert len(vals) == 1, f"expected one sightline_frames_captured_total sample, got {vals}"
    return vals[0]


def test_metrics(demo):
    server = demo
    server.wait_live()
    status, headers, body = server.get("/metrics")
    assert status == 200, body[:300]
    assert headers.get("content-type", "").startswith("text/plain"), headers.get("content-type")
    text = body.decode("utf-8")
    assert text.endswith("\n"), "exposition must end with a newline"
    types, helps, samples = parse_prometheus(text)

    for name, labels, _ in samples:
        fam = family_of(name, types)
        assert fam in types, f"sample {name} has no # TYPE line for {fam}"
        assert fam in helps, f"sample {name} has no # HELP line for {fam}"
    assert types.get("sightline_frames_captured_total") == "counter", types
    first = captured_total(samples)
    assert first > 0

    # Contract families.
    drops = [lbl.get("reason") for n, lbl, _ in samples if n == "sightline_frames_dropped_total"]
    assert drops and all(drops), f"sightline_frames_dropped_total{{reason=...}} missing: {drops}"
    assert types.get("sightline_stage_seconds") == "histogram", types.get("sightline_stage_seconds")
    clients = [lbl.get("kind") for n, lbl, _ in samples if n == "sightline_clients"]
    assert clients and all(clients), f"sightline_clients{{kind=...}} missing: {clients}"

    # Histogram consistency for each stage: cumulative buckets, +Inf == _count.
    stages = {lbl.get("stage") for n, lbl, _ in samples if n == "sightline_stage_seconds_bucket"}
    assert stages, "sightline_stage_seconds has no buckets"
    for stage in stages:
        buckets = sorted(((float(lbl["le"].replace("Inf", "inf")), v) for n, lbl, v in samples
                          if n == "sightline_stage_seconds_bucket" and lbl.get("stage") == stage))
        assert buckets[-1][0] == math.inf, f"stage {stage}: no le=\"+Inf\" bucket"
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), f"stage {stage}: buckets not cumulative: {buckets}"
        count = [v for n, lbl, v in samples if n == "sightline_stage_seconds_count" and lbl.get("stage") == stage]
        assert count == [buckets[-1][1]], f"stage {stage}: _count {count} != +Inf bucket {buckets[-1][1]}"
        assert any(n == "sightline_stage_seconds_sum" and lbl.get("stage") == stage
                   for n, lbl, _ in samples), f"stage {stage}: no _sum"

    def captured_now():
        _, _, body2 = server.get("/metrics")
        return captured_total(parse_prometheus(body2.decode("utf-8"))[2])

    second = wait_until(lambda: (n := captured_now()) > first and n, timeout=10,
                        what=f"sightline_frames_captured_total above {first}")
    assert second > first


# --------------------------------------------------------------------------- images


def test_snapshot(demo):
    server = demo
    server.wait_live()
    for path in ("/snapshot.jpg", "/?action=snapshot"):
        status, headers, body = server.get(path)
        assert status == 200, f"{path} -> {status}: {body[:200]!r}"
        assert headers.get("content-type", "").startswith("image/jpeg"), f"{path}: {headers}"
        img = decode_jpeg(body)
        assert img.size == (640, 480), f"{path}: {img.size}"


@pytest.mark.parametrize("path", ["/stream.mjpg", "/?action=stream"])
def test_mjpeg_stream(demo, path):
    server = demo
    server.wait_live()
    status, headers, boundary, parts = read_mjpeg_parts(server.port, path, nparts=2)
    assert status == 200, f"{path} -> {status} {headers}"
    ctype = headers.get("content-type", "")
    assert ctype.startswith("multipart/x-mixed-replace"), f"{path}: Content-Type {ctype!r}"
    if path == "/stream.mjpg":
        assert boundary == "sightlineframe", f"boundary {boundary!r}"
    assert len(parts) == 2
    seqs = []
    for part_headers, jpeg in parts:
        assert part_headers.get("content-type", "").startswith("image/jpeg"), part_headers
        if "content-length" in part_headers:
            assert int(part_headers["content-length"]) == len(jpeg)
        img = decode_jpeg(jpeg)
        assert img.size == (640, 480), img.size
        if path == "/stream.mjpg":
            assert "x-sequence" in part_headers, f"no X-Sequence header: {part_headers}"
            seqs.append(int(part_headers["x-sequence"]))
    if seqs:
        assert seqs[1] > seqs[0], f"X-Sequence not increasing: {seqs}"
    # Closing the stream mid-way must not hurt the server: it notices the viewer left.
    server.wait_state(lambda st: st["clients"]["mjpeg"] == 0, timeout=10, what="the closed MJPEG viewer uncounted")
    server.assert_alive()
    assert server.state()["frames"]["processed"] > 0


# --------------------------------------------------------------------------- static files


def test_static_index(demo):
    server = demo
    status, headers, body = server.get("/")
    assert status == 200, f"GET / -> {status}: {body[:200]!r}"
    assert headers.get("content-type", "").startswith("text/html"), headers.get("content-type")
    assert body == (server.web_root / "index.html").read_bytes(), "GET / is not web/index.html"


ESCAPES = [
    "/../Package.swift",
    "/%2e%2e/Package.swift",
    "/..%2fPackage.swift",
    "/%2e%2e%2fPackage.swift",
    "/web/../../etc/passwd",
    "/../../../../../../etc/passwd",
    "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/..\\Package.swift",
]
FORBIDDEN_CONTENT = [b"swift-tools-version", b"PackageDescription", b"root:x:0:0", b"root:"]


def test_path_escape(demo):
    server = demo
    problems = []
    for raw_path in ESCAPES:
        status, headers, body = raw_http_get(server.port, raw_path)
        leaked = [m for m in FORBIDDEN_CONTENT if m in body]
        if leaked:
            problems.append(f"{raw_path} leaked file contents {leaked} with HTTP {status}")
        elif status not in (403, 404):
            problems.append(f"{raw_path} -> HTTP {status} (expected 403 or 404): {body[:120]!r}")
    assert not problems, "\n".join(problems)
    server.assert_alive()


def test_symlink_escape(sightline, tmp_path):
    web = tmp_path / "webcopy"
    shutil.copytree(server_web_root(), web, symlinks=True)
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("SIGHTLINE-E2E-SECRET-7f3a\n")
    inside = "SIGHTLINE-E2E-INSIDE-91c2\n"
    (web / "inside-e2e.txt").write_text(inside)
    (web / "leak.txt").symlink_to("/etc/hostname")
    (web / "leak-secret.txt").symlink_to(secret)
    (web / "leakdir").symlink_to(tmp_path)
    hostname = open("/etc/hostname", "rb").read().strip()

    server = sightline(source="demo", web_root=web)
    status, _, body = raw_http_get(server.port, "/inside-e2e.txt")
    assert status == 200 and body == inside.encode(), \
        f"a plain file in the web root should be served: HTTP {status} {body[:100]!r}"

    for path in ("/leak.txt", "/leak-secret.txt", "/leakdir/outside-secret.txt"):
        status, _, body = raw_http_get(server.port, path)
        assert b"SIGHTLINE-E2E-SECRET" not in body, f"{path} leaked a file outside the web root"
        if hostname:
            assert body.strip() != hostname, f"{path} served /etc/hostname"
        assert status in (403, 404), f"{path} -> HTTP {status} (expected 403 or 404): {body[:200]!r}"
    server.assert_alive()


def server_web_root():
    from conftest import WEB_ROOT

    if not WEB_ROOT.is_dir():
        pytest.fail(f"web root {WEB_ROOT} missing")
    return WEB_ROOT


# --------------------------------------------------------------------------- errors


def test_unknown_api_404(demo):
    server = demo
    for path in ("/api/does-not-exist", "/api/nope/deeper"):
        status, headers, body = server.get(path)
        assert status == 404, f"{path} -> {status}: {body[:200]!r}"
        assert "application/json" in headers.get("content-type", ""), f"{path}: {headers.get('content-type')}"
        try:
            doc = json.loads(body)
        except ValueError as e:
            raise AssertionError(f"{path}: 404 body is not JSON ({e}): {body[:200]!r}")
        assert isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"], f"{path}: {doc}"
