"""HTTPS and WSS on the same port with a real TLS client (Python's ssl with the
certificate as its CA): a self-signed certificate made at first start, PEM files
given on the command line, a renewed certificate taken on SIGHUP while an open
viewer keeps streaming, and a certificate that is not the key's refused on SIGHUP."""

import datetime
import hashlib
import http.client
import json
import signal
import ssl
import socket
import time

import pytest

from conftest import HOST, TOKEN


def context(cafile) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cafile))
    return ctx


def https_get(port, path, ctx, headers=None, method="GET", body=None):
    conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def wait_https(server, ctx, timeout=30.0):
    """Until /healthz answers 200 over TLS with `ctx` (the server makes its key first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if https_get(server.port, "/healthz", ctx)[0] == 200:
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"no HTTPS answer within {timeout:.0f} s\n{server.describe()}")


def served_fingerprint(port) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((HOST, port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def make_certificate(directory, name):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def wss_frames(port, ctx, count, headers=None):
    from websockets.sync.client import connect
    with connect(f"wss://{HOST}:{port}/ws", ssl=ctx, open_timeout=10, max_size=16 << 20,
                 additional_headers=headers or {}) as ws:
        got = []
        while len(got) < count:
            message = ws.recv(timeout=5)
            if isinstance(message, str):
                meta = json.loads(message)
                jpeg = ws.recv(timeout=5)
                assert len(jpeg) == meta["jpegBytes"] and jpeg[:2] == b"\xff\xd8"
                got.append(meta["seq"])
        return got


def test_self_signed_certificate_serves_https_and_wss(sightline, tmp_path):
    config = tmp_path / "tls.yaml"
    config.write_text("tls: {auto: true}\n")
    server = sightline("--config", config, source="demo", wait=False)
    cert = server.data_dir / "tls" / "cert.pem"
    deadline = time.monotonic() + 30
    while not cert.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    ctx = context(cert)
    wait_https(server, ctx)
    status, headers, page = https_get(server.port, "/", ctx, headers={"Host": f"localhost:{server.port}"})
    assert status == 200 and b"<html" in page.lower() and f"wss://localhost:{server.port}" in headers["content-security-policy"]
    assert len(wss_frames(server.port, ctx, 5)) == 5
    # The sign-in cookie is Secure under TLS; plain HTTP on the same port is refused.
    status, headers, _ = https_get(server.port, "/api/session", ctx, method="POST",
                                   body=json.dumps({"token": TOKEN}).encode(), headers={"Content-Type": "application/json"})
    assert status == 200 and "; Secure" in headers["set-cookie"]
    with socket.create_connection((HOST, server.port), timeout=5) as plain:
        plain.sendall(f"GET /api/state HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
        try:
            answer = plain.recv(100)
        except OSError:
            answer = b""
    assert not answer.startswith(b"HTTP/1.1 200")
    # The fingerprint in the log is the one served.
    served = served_fingerprint(server.port)
    logged = server.stderr_tail(20000)
    assert ":".join(served[i:i + 2] for i in range(0, 64, 2)).upper() in logged


def serve_renewable_pair(sightline, tmp_path):
    """A server on live.crt/live.key holding the "first" pair, with a "second" pair made
    to replace them: (server, live cert, live key, first, second, first's context, served fingerprint)."""
    first_cert, first_key = make_certificate(tmp_path, "first")
    second_cert, second_key = make_certificate(tmp_path, "second")
    cert, key = tmp_path / "live.crt", tmp_path / "live.key"
    cert.write_bytes(first_cert.read_bytes())
    key.write_bytes(first_key.read_bytes())
    server = sightline("--tls-cert", cert, "--tls-key", key, source="demo", wait=False)
    ctx_first = context(first_cert)
    wait_https(server, ctx_first)
    return (server, cert, key, (first_cert, first_key), (second_cert, second_key), ctx_first,
            served_fingerprint(server.port))


def test_sighup_takes_a_renewed_certificate_without_dropping_viewers(sightline, tmp_path):
    server, cert, key, (first_cert, first_key), (second_cert, second_key), ctx_first, before = \
        serve_renewable_pair(sightline, tmp_path)
    from websockets.sync.client import connect
    with connect(f"wss://{HOST}:{server.port}/ws", ssl=ctx_first, open_timeout=10, max_size=16 << 20) as viewer:
        viewer.recv(timeout=5)
        cert.write_bytes(second_cert.read_bytes())
        key.write_bytes(second_key.read_bytes())
        server.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        after = before
        while after == before and time.monotonic() < deadline:
            time.sleep(0.1)
            after = served_fingerprint(server.port)
        assert after != before, "new connections still get the old certificate"
        assert https_get(server.port, "/healthz", context(second_cert))[0] == 200
        # The viewer that opened before the renewal is still streaming.
        seqs = []
        while len(seqs) < 10:
            message = viewer.recv(timeout=5)
            if isinstance(message, str):
                seqs.append(json.loads(message)["seq"])
        assert seqs == sorted(seqs) and len(set(seqs)) == 10


def test_sighup_keeps_the_old_pair_when_the_new_certificate_is_not_the_keys(sightline, tmp_path):
    server, cert, key, (first_cert, first_key), (second_cert, second_key), ctx_first, before = \
        serve_renewable_pair(sightline, tmp_path)
    assert before == hashlib.sha256(ssl.PEM_cert_to_DER_cert(first_cert.read_text())).hexdigest()

    # A renewal copied half-way: the new certificate beside the old key.
    cert.write_bytes(second_cert.read_bytes())
    server.proc.send_signal(signal.SIGHUP)
    why = f"tls: the private key in {key} does not match the certificate in {cert}"
    deadline = time.monotonic() + 5
    while why not in server.stderr_tail(20000) and time.monotonic() < deadline:
        time.sleep(0.1)
    log = server.stderr_tail(20000)
    assert "cannot reload the certificate; the old one stays" in log and why in log, log
    assert "certificate reloaded" not in log
    # New connections still get the old pair, and their handshakes succeed.
    assert https_get(server.port, "/healthz", ctx_first)[0] == 200
    assert served_fingerprint(server.port) == before

    # The matching key arrives: the next SIGHUP takes the pair.
    key.write_bytes(second_key.read_bytes())
    server.proc.send_signal(signal.SIGHUP)
    expected = hashlib.sha256(ssl.PEM_cert_to_DER_cert(second_cert.read_text())).hexdigest()
    deadline = time.monotonic() + 5
    after = before
    while after != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        after = served_fingerprint(server.port)
    assert after == expected, "new connections do not get the new certificate"
    assert https_get(server.port, "/healthz", context(second_cert))[0] == 200
    assert "certificate reloaded" in server.stderr_tail(20000)
