"""``POST /destinations/<d>/snapshot`` on the admin endpoint (a loopback port, a fake control;
no services), called through ``canal-bridge snapshot``'s own client: the token guard, each
answer's code, one log line per request without the token, HTTPS with the pinned certificate;
the command's exit codes."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from bridge.admin import AdminServer
from bridge.admin.client import post_snapshot_request, snapshot_url
from bridge.commands.snapshot import request_snapshot
from bridge.config import AdminConfig, BridgeConfig
from bridge.instance import DestinationElsewhere, InstanceFailed, UnknownDestination
from bridge.snapshot.exceptions import SnapshotRequestRefused
from bridge.snapshot.requests import RequestOutcome
from tests.ops.helpers import free_port
from tests.ops.test_admin_server import RUNNING, TOKEN_TEXT, FakeObserved, _self_signed


class FakeControl:
    """Answers as the runner would; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.failure: Exception | None = None

    def request_snapshot(self, destination: str, tables: Sequence[str]) -> RequestOutcome:
        self.calls.append((destination, tuple(tables)))
        if destination == "elsewhere":
            raise DestinationElsewhere(destination, "10.0.0.7:11112")
        if destination != "d1":
            raise UnknownDestination(destination)
        if self.failure is not None:
            raise self.failure
        if "shop.nope" in tables:
            raise SnapshotRequestRefused("d1", unknown=["shop.nope"])
        return RequestOutcome(tuple(tables), persisted=True)


def started(config: AdminConfig, control: FakeControl | None) -> Iterator[AdminServer]:
    server = AdminServer(config, FakeObserved(RUNNING), control=control)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def with_token(tmp_path: Path, **extra: object) -> AdminConfig:
    token = tmp_path / "token"
    token.write_text(TOKEN_TEXT + "\n")
    return AdminConfig.model_validate(
        {"listen": f"127.0.0.1:{free_port()}", "token_file": token, **extra}
    )


def test_without_a_token_file_the_action_is_refused_and_nothing_is_done() -> None:
    control = FakeControl()
    config = AdminConfig(listen=f"127.0.0.1:{free_port()}")
    for _ in started(config, control):
        status, _ = post_snapshot_request(config, "d1", ["shop.orders"])
    assert status == 403
    assert control.calls == []


def test_a_missing_or_wrong_token_is_401_and_the_token_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    control = FakeControl()
    config = with_token(tmp_path)
    wrong = tmp_path / "wrong"
    wrong.write_text("wrong-guess\n")
    caplog.set_level(logging.INFO, logger="bridge")
    for _ in started(config, control):
        anonymous = config.model_copy(update={"token_file": None})
        guessing = config.model_copy(update={"token_file": wrong})
        assert post_snapshot_request(anonymous, "d1", ["shop.orders"])[0] == 401
        assert post_snapshot_request(guessing, "d1", ["shop.orders"])[0] == 401
        status, document = post_snapshot_request(config, "d1", ["shop.orders"])
    assert (status, document) == (
        202,
        {"destination": "d1", "tables": ["shop.orders"], "persisted": True},
    )
    assert control.calls == [("d1", ("shop.orders",))]
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("bridge.admin")]
    assert len([line for line in lines if "refused POST /destinations/d1/snapshot" in line]) == 2
    (accepted,) = [line for line in lines if "snapshot of d1 requested" in line]
    assert "202" in accepted and "shop.orders" in accepted
    assert not any(TOKEN_TEXT in line or "wrong-guess" in line for line in lines)


def test_each_answer_has_its_code(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    control = FakeControl()
    config = with_token(tmp_path)
    caplog.set_level(logging.INFO, logger="bridge")
    for _ in started(config, control):
        refused = post_snapshot_request(config, "d1", ["shop.orders", "shop.nope"])
        malformed = post_snapshot_request(config, "d1", ["orders"])
        elsewhere = post_snapshot_request(config, "elsewhere", ["shop.orders"])
        unknown = post_snapshot_request(config, "nobody", ["shop.orders"])
        control.failure = InstanceFailed("d1: binlog position purged")
        failed = post_snapshot_request(config, "d1", ["shop.orders"])
    assert refused[0] == 400 and "no such base table on the source: shop.nope" in str(refused[1])
    assert malformed[0] == 400 and "'orders' is not schema.table" in str(malformed[1])
    assert elsewhere[0] == 404 and "it runs on 10.0.0.7:11112" in str(elsewhere[1])
    assert unknown[0] == 404 and "not running on this server" in str(unknown[1])
    assert failed[0] == 503 and "purged" in str(failed[1])
    # The malformed one never reached the destination.
    assert ("d1", ("orders",)) not in control.calls
    answered = [r for r in caplog.records if "requested from" in r.getMessage()]
    assert len(answered) == 5  # one line per request


def test_a_body_that_is_not_a_table_list_is_400(tmp_path: Path) -> None:
    import json
    import urllib.error
    import urllib.request

    control = FakeControl()
    config = with_token(tmp_path)
    bodies = [b"not json", b"[1, 2]", b'{"tables": "shop.orders"}', b'{"tables": []}']
    codes = []
    for _ in started(config, control):
        for body in bodies:
            request = urllib.request.Request(
                snapshot_url(config, "d1"),
                data=body,
                headers={
                    "Authorization": f"Bearer {TOKEN_TEXT}",
                    "Content-Type": "application/json",
                },
                method="POST",
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    codes.append((response.status, json.loads(response.read())))
            except urllib.error.HTTPError as exc:
                codes.append((exc.code, json.loads(exc.read())))
    # A plain string is split like --tables (one name): accepted; the others are refused.
    assert [code for code, _ in codes] == [400, 400, 202, 400]
    assert "not JSON" in codes[0][1]["error"]
    assert "JSON object" in codes[1][1]["error"]


def test_https_reaches_the_endpoint_through_its_pinned_certificate(tmp_path: Path) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    config = with_token(tmp_path, tls={"cert_file": cert_file, "key_file": key_file})
    assert snapshot_url(config, "d1").startswith("https://127.0.0.1:")
    for _ in started(config, FakeControl()):
        assert post_snapshot_request(config, "d1", ["shop.orders"])[0] == 202


def bridge_config(admin: AdminConfig) -> BridgeConfig:
    return BridgeConfig.model_validate(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:9"},
            "admin": admin.model_dump(mode="json"),
            "destinations": [
                {
                    "name": "d1",
                    "source": {"address": "127.0.0.1:3306", "username": "u", "slave_id": 9},
                    "mq": {"topic": "t"},
                }
            ],
        }
    )


def run_command(config: BridgeConfig, destination: str, tables: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = request_snapshot(config, destination, tables, timeout_s=10, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_exits_0_1_or_2_with_one_line(tmp_path: Path) -> None:
    admin = with_token(tmp_path)
    config = bridge_config(admin)
    for _ in started(admin, FakeControl()):
        ok = run_command(config, "d1", "shop.orders,shop.lines")
        refused = run_command(config, "d1", "shop.nope")
    assert ok == (
        0,
        "destination d1: snapshot of shop.orders, shop.lines started; its cursor "
        "carries the plan\n",
        "",
    )
    assert refused[0] == 1 and refused[2].count("\n") == 1 and "shop.nope" in refused[2]
    unreachable = run_command(config, "d1", "shop.orders")  # the endpoint is gone
    assert unreachable[0] == 1 and "did not answer" in unreachable[2]
    assert run_command(config, "d1", "orders")[0] == 2
    bad_name = run_command(config, "d9", "shop.orders")
    assert bad_name[0] == 2 and "not in the config (it has: d1)" in bad_name[2]
    silent = bridge_config(AdminConfig(listen=None))
    assert run_command(silent, "d1", "shop.orders")[0] == 2
