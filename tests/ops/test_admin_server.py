"""The admin endpoint's server on a loopback port, with fake destinations (no services):
early disconnects, idle connections, the bearer token, TLS, bad token and TLS files."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import logging
import socket
import ssl
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bridge.admin import (
    AdminServer,
    AdminSetupFailed,
    BearerToken,
    DestinationSnapshot,
    ServerLimits,
    requires_token,
)
from bridge.admin.auth import TOKEN
from bridge.config import AdminConfig
from bridge.mq.worker import WorkerProgress
from tests.ops.helpers import free_port, get

TOKEN_TEXT = "s3cr3t-admin-token-7f1c"

RUNNING = DestinationSnapshot(
    "d1",
    "active",
    "running",
    progress=WorkerProgress("d1", state="running", batches_acked=2),
    source_event_ms=1_700_000_000_000,
    stale_after_s=60,
)


class FakeObserved:
    def __init__(self, *snapshots: DestinationSnapshot) -> None:
        self.current = list(snapshots)
        self.fail = False

    def snapshots(self) -> Sequence[DestinationSnapshot]:
        if self.fail:
            raise RuntimeError("collection broke")
        return self.current


def serve(config: AdminConfig, limits: ServerLimits | None = None) -> Iterator[AdminServer]:
    server = AdminServer(config, FakeObserved(RUNNING), limits=limits or ServerLimits())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server() -> Iterator[AdminServer]:
    yield from serve(AdminConfig(listen=f"127.0.0.1:{free_port()}"))


def base(server: AdminServer) -> str:
    return f"{server.scheme}://{server.listen}"


def tracebacks(stderr: str, records: Sequence[logging.LogRecord]) -> list[str]:
    """Every traceback printed to stderr or carried by a log record."""
    found = ["stderr"] if "Traceback" in stderr else []
    return found + [r.getMessage() for r in records if r.exc_info]


def open_connection(server: AdminServer) -> socket.socket:
    host, port = server.listen.rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=10)
    return conn


def test_clients_hanging_up_early_leave_no_traceback_and_no_warning(
    server: AdminServer, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for _ in range(30):
        # Headers half sent, then gone.
        with open_connection(server) as conn:
            conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        # A whole request, then gone before the answer (a reset, not a clean close).
        conn = open_connection(server)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.close()
    assert get(f"{base(server)}/healthz") == (200, "ok\nd1 ok\n")  # still serving
    server.stop()  # joins the threads: everything they would print is out
    assert tracebacks(capfd.readouterr().err, caplog.records) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_failing_response_is_one_logged_traceback_not_stderr(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The negative of the test above: a real failure does show, through logging."""
    observed = FakeObserved(RUNNING)
    admin = AdminServer(AdminConfig(listen=f"127.0.0.1:{free_port()}"), observed)
    admin.start()
    try:
        observed.fail = True
        assert get(f"{base(admin)}/readyz") == (500, "error\n")
    finally:
        admin.stop()
    assert "Traceback" not in capfd.readouterr().err
    assert tracebacks("", caplog.records) == ["admin endpoint: /readyz failed"]


def test_idle_and_half_sent_connections_are_closed_and_keep_alive_is_served() -> None:
    limits = ServerLimits(idle_timeout_s=0.5)
    for admin in serve(AdminConfig(listen=f"127.0.0.1:{free_port()}"), limits):
        with open_connection(admin) as idle, open_connection(admin) as half:
            half.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
            assert idle.recv(100) == b""  # closed by the server (the socket waits up to 10 s)
            assert half.recv(100) == b""
        with open_connection(admin) as kept:
            for _ in range(2):  # two requests on one connection: it is not closed in between
                kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = kept.recv(4096)
                assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"d1 ok\n")
            assert kept.recv(100) == b""  # then idle: closed


def test_probes_metrics_and_status_need_no_token_without_a_token_file(
    server: AdminServer,
) -> None:
    assert get(f"{base(server)}/readyz") == (200, "ok\nd1 ready\n")
    status, body = get(f"{base(server)}/status")
    assert status == 200
    document = json.loads(body)
    assert document["ready"] is True
    assert document["destinations"][0]["name"] == "d1"
    assert document["destinations"][0]["readiness"] == "ready"
    assert get(f"{base(server)}/nothing")[0] == 404
    request = urllib.request.Request(f"{base(server)}/metrics", method="HEAD")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200 and response.read() == b""
        assert response.headers["Server"] == "canal-bridge"


def _status(url: str, authorization: str | None) -> int:
    request = urllib.request.Request(url)
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        assert exc.headers["WWW-Authenticate"] == 'Bearer realm="canal-bridge"'
        return exc.code


def test_a_token_file_guards_status_and_refusals_log_one_line_without_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text(TOKEN_TEXT + "\n")
    config = AdminConfig(listen=f"127.0.0.1:{free_port()}", token_file=token_file)
    caplog.set_level(logging.INFO)
    for admin in serve(config):
        url = f"{base(admin)}/status"
        refusals = []
        for authorization, why in [
            (None, "no token"),
            ("Bearer wrong-guess", "wrong token"),
            (f"Basic {TOKEN_TEXT}", "not a bearer token"),
        ]:
            caplog.clear()
            assert _status(url, authorization) == 401
            lines = [r.getMessage() for r in caplog.records if r.name == "bridge.admin.auth"]
            assert lines == [f"admin endpoint: refused GET /status from 127.0.0.1 ({why})"]
            refusals += lines
        assert _status(url, f"Bearer {TOKEN_TEXT}") == 200
        # Probes and metrics stay open for the kubelet and Prometheus.
        for path in ("/healthz", "/readyz", "/metrics"):
            assert get(f"{base(admin)}{path}")[0] == 200
    everything = "\n".join(r.getMessage() for r in caplog.records) + "\n".join(refusals)
    assert TOKEN_TEXT not in everything and "wrong-guess" not in everything


def test_control_actions_are_refused_without_a_token_file_and_need_the_token_with_one() -> None:
    async def snapshot(request: web.Request) -> web.Response:
        return web.Response(text="snapshot started\n")

    async def call(token: BearerToken | None, authorization: str | None) -> int:
        app = web.Application()
        app[TOKEN] = token
        app.router.add_post("/destinations/{d}/snapshot", requires_token(snapshot))
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            headers = {"Authorization": authorization} if authorization else {}
            response = await client.post("/destinations/d1/snapshot", headers=headers)
            return response.status

    assert asyncio.run(call(None, None)) == 403
    assert asyncio.run(call(None, f"Bearer {TOKEN_TEXT}")) == 403  # no token file: nobody
    assert asyncio.run(call(BearerToken(TOKEN_TEXT), None)) == 401
    assert asyncio.run(call(BearerToken(TOKEN_TEXT), "Bearer nope")) == 401
    assert asyncio.run(call(BearerToken(TOKEN_TEXT), f"Bearer {TOKEN_TEXT}")) == 200
    assert TOKEN_TEXT not in repr(BearerToken(TOKEN_TEXT))


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "canal-bridge-admin-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "admin.crt", tmp_path / "admin.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_tls_serves_https_and_refuses_plain_http_quietly(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    port = free_port()
    config = AdminConfig.model_validate(
        {"listen": f"127.0.0.1:{port}", "tls": {"cert_file": cert_file, "key_file": key_file}}
    )
    for admin in serve(config):
        assert admin.scheme == "https"
        trusting = ssl.create_default_context(cafile=str(cert_file))
        with urllib.request.urlopen(
            f"https://127.0.0.1:{port}/readyz", timeout=5, context=trusting
        ) as response:
            assert (response.status, response.read()) == (200, b"ok\nd1 ready\n")
        status, _ = get(f"http://127.0.0.1:{port}/readyz")  # plain HTTP: no answer
        assert status == 0
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=5)
    assert tracebacks(capfd.readouterr().err, caplog.records) == []


def test_unusable_token_and_tls_files_fail_start_naming_the_key(tmp_path: Path) -> None:
    listen = f"127.0.0.1:{free_port()}"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    cases = [
        ({"token_file": tmp_path / "missing"}, r"admin\.token_file: cannot read .*missing"),
        ({"token_file": empty}, r"admin\.token_file: .*empty is empty"),
        (
            {"tls": {"cert_file": tmp_path / "no.crt", "key_file": tmp_path / "no.key"}},
            r"admin\.tls: cannot load cert_file .*no\.crt",
        ),
    ]
    for settings, message in cases:
        admin = AdminServer(
            AdminConfig.model_validate({"listen": listen, **settings}), FakeObserved(RUNNING)
        )
        with pytest.raises(AdminSetupFailed, match=message):
            admin.start()
        assert not admin.running
    # The same port is free again: nothing was bound by the failed starts.
    for admin in serve(AdminConfig(listen=listen)):
        assert get(f"{base(admin)}/healthz")[0] == 200
