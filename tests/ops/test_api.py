"""The REST API on a loopback port with a fake control and fake destinations (no services):
every route's answers and codes, the token and cross-site guards, the one log line per change,
no secret in any answer, and the OpenAPI document matching the routes."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.admin import AdminServer, DestinationSnapshot, SnapshotUsage
from bridge.admin.api_documents import RecentDocuments, RowRates
from bridge.admin.auth import UNAUTHORIZED
from bridge.config import AdminConfig, ConfigChange, parse_config
from bridge.exceptions import ActionRefused, BridgeError
from bridge.instance import DestinationElsewhere, UnknownDestination
from bridge.mq.worker import WorkerProgress
from bridge.position import EntryPosition
from bridge.snapshot.requests import RequestOutcome
from tests.ops.helpers import free_port, send
from tests.ops.test_admin_server import RUNNING, TOKEN_TEXT, FakeObserved

PASSWORD = "hunter2-not-for-answers"
CONFIG = f"""
kafka: {{bootstrap_servers: 127.0.0.1:19092}}
meta: {{store: memory}}
destinations:
- name: d1
  source: {{address: 127.0.0.1:3306, username: canal, password: {PASSWORD}, slave_id: 7}}
  mq: {{topic: t1}}
"""
AUTH_LOG = "bridge.admin.auth"
JSON = {"Content-Type": "application/json"}
AUTH = {"Authorization": f"Bearer {TOKEN_TEXT}"}

PAUSED = DestinationSnapshot(
    "d2",
    "active",
    "paused",
    progress=WorkerProgress("d2", state="stopped", rows_sent=40),
    cursor=EntryPosition("mysql-bin.000003", 1234),
    snapshot=SnapshotUsage(rows=500, tables_done=1, tables_total=4),
    error="source 127.0.0.1:3306 refused the login: check source.username",
)


class FakeControl:
    """Answers as the runner would; records each call that reached it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.failure: BridgeError | None = None

    def _reach(self, *call: str) -> None:
        self.calls.append(call)
        if call[1] == "elsewhere":
            raise DestinationElsewhere("elsewhere", "10.0.0.7:11112")
        if call[1] not in ("d1", "d2", "<config>"):
            raise UnknownDestination(call[1])
        if self.failure is not None:
            raise self.failure

    def request_snapshot(self, destination: str, tables: Sequence[str]) -> RequestOutcome:
        self._reach("snapshot", destination, *tables)
        return RequestOutcome(tuple(tables), persisted=True)

    def pause(self, destination: str) -> None:
        self._reach("pause", destination)

    def resume(self, destination: str) -> None:
        self._reach("resume", destination)

    def move_cursor(self, destination: str, target: str) -> EntryPosition:
        self._reach("cursor", destination, target)
        if destination == "d1":
            raise ActionRefused("d1 is running: pause it first, then move its cursor")
        return EntryPosition("mysql-bin.000002", 4, gtid=None, timestamp=1_700_000_000_000)

    def check_config(self, text: str) -> ConfigChange:
        self._reach("check", "<config>")
        config = parse_config(yaml.safe_load(text), source="<api>")
        return ConfigChange((), (), (), tuple(d.name for d in config.destinations))

    def apply_config(self, text: str) -> ConfigChange:
        self._reach("apply", "<config>")
        return self.check_config(text)


@dataclasses.dataclass
class Api:
    base: str
    control: FakeControl
    observed: FakeObserved

    def call(
        self, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body or {}).encode()
        return send(method, self.base + path, data if method != "GET" else None, headers)

    def change(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        return self.call(method, path, body, {**JSON, **AUTH})


def serve(config: AdminConfig) -> Iterator[Api]:
    control, observed = FakeControl(), FakeObserved(RUNNING, PAUSED)
    server = AdminServer(config, observed, control=control)
    server.start()
    try:
        yield Api(f"http://{config.listen}", control, observed)
    finally:
        server.stop()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    token = tmp_path / "token"
    token.write_text(TOKEN_TEXT + "\n")
    yield from serve(AdminConfig(listen=f"127.0.0.1:{free_port()}", token_file=token))


@pytest.fixture
def open_api() -> Iterator[Api]:
    yield from serve(AdminConfig(listen=f"127.0.0.1:{free_port()}"))


def test_destinations_are_listed_with_state_cursor_progress_and_error(open_api: Api) -> None:
    status, document = open_api.call("GET", "/api/v1/destinations")
    assert status == 200
    running, paused = document["destinations"]
    assert running["name"] == "d1" and running["state"] == "running" and running["ready"]
    assert paused["state"] == "paused" and paused["readiness"] == "paused"
    assert "resume it" in paused["reason"]
    assert paused["cursor"] == "mysql-bin.000003:1234" and paused["rows"] == 40
    assert paused["snapshot"] == {"rows": 500, "tables_done": 1, "tables_total": 4, "percent": 25}
    assert paused["error"] == PAUSED.error
    assert paused["rows_per_s"] is None  # one sample so far
    assert open_api.call("GET", "/api/v1/destinations/d2") == (200, paused | {"rows_per_s": None})
    status, missing = open_api.call("GET", "/api/v1/destinations/nobody")
    assert status == 404 and "GET /api/v1/destinations lists" in missing["error"]


def test_reads_need_the_token_once_a_token_file_is_set(api: Api) -> None:
    assert api.call("GET", "/api/v1/destinations")[0] == 401
    assert api.call("GET", "/api/v1/destinations/d1", headers={"Authorization": "Bearer no"}) == (
        401,
        {"error": UNAUTHORIZED},
    )
    assert api.call("GET", "/api/v1/destinations", headers=AUTH)[0] == 200
    # The OpenAPI document describes routes only: open like the probes.
    assert api.call("GET", "/api/openapi.json")[0] == 200


def test_without_a_token_file_every_change_is_refused_and_says_how_to_allow_it(
    open_api: Api,
) -> None:
    for method, path in [
        ("POST", "/api/v1/destinations/d1/pause"),
        ("POST", "/api/v1/destinations/d1/resume"),
        ("POST", "/api/v1/destinations/d1/snapshot"),
        ("PUT", "/api/v1/destinations/d1/cursor"),
        ("POST", "/destinations/d1/snapshot"),
    ]:
        status, document = open_api.call(method, path, {"tables": ["s.t"]}, {**JSON, **AUTH})
        assert status == 403 and "set admin.token_file" in document["error"], path
    assert (
        open_api.call("POST", "/api/v1/config", CONFIG.encode(), {"Content-Type": "text/plain"})[0]
        == 403
    )
    assert open_api.control.calls == []


def test_a_missing_or_wrong_token_is_401_and_nothing_is_done(api: Api) -> None:
    assert api.call("POST", "/api/v1/destinations/d1/pause", headers=JSON)[0] == 401
    wrong = {**JSON, "Authorization": "Bearer wrong-guess"}
    assert api.call("POST", "/api/v1/destinations/d1/pause", headers=wrong)[0] == 401
    assert api.control.calls == []


def test_cross_site_and_form_posts_are_refused_before_the_token_is_checked(api: Api) -> None:
    pause = "/api/v1/destinations/d1/pause"
    evil = {**JSON, **AUTH, "Origin": "http://evil.example"}
    status, document = api.call("POST", pause, headers=evil)
    assert status == 403 and "cross-site request refused" in document["error"]
    for form in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, document = api.call("POST", pause, b"a=1", {**AUTH, "Content-Type": form})
        assert status == 415 and "application/json" in document["error"]
    plain = {**AUTH, "Content-Type": "text/plain"}
    assert api.call("POST", "/destinations/d1/snapshot", b'{"tables": ["s.t"]}', plain)[0] == 415
    assert api.control.calls == []
    # The console's own page: same origin.
    own = {**JSON, **AUTH, "Origin": api.base}
    assert api.call("POST", pause, headers=own) == (200, {"destination": "d1", "state": "paused"})


def test_pause_and_resume_answer_each_code(api: Api) -> None:
    assert api.change("POST", "/api/v1/destinations/d1/pause") == (
        200,
        {"destination": "d1", "state": "paused"},
    )
    assert api.change("POST", "/api/v1/destinations/d1/resume")[1]["state"] == "running"
    status, document = api.change("POST", "/api/v1/destinations/elsewhere/pause")
    assert status == 404 and "it runs on 10.0.0.7:11112" in document["error"]
    assert api.change("POST", "/api/v1/destinations/nobody/resume")[0] == 404
    api.control.failure = ActionRefused("d1 is starting: wait until it runs, then pause it")
    assert api.change("POST", "/api/v1/destinations/d1/pause") == (
        409,
        {"error": "d1 is starting: wait until it runs, then pause it"},
    )
    api.control.failure = BridgeError("the meta store did not answer: check meta.dir")
    assert api.change("POST", "/api/v1/destinations/d1/resume")[0] == 503


def test_snapshot_answers_through_both_routes(api: Api) -> None:
    planned = {"destination": "d2", "tables": ["shop.orders"], "persisted": True}
    body = {"tables": ["shop.orders"]}
    assert api.change("POST", "/api/v1/destinations/d2/snapshot", body) == (202, planned)
    assert api.change("POST", "/destinations/d2/snapshot", body) == (202, planned)
    assert api.change("POST", "/api/v1/destinations/d2/snapshot", {"tables": "x"})[0] == 400
    assert api.change("POST", "/api/v1/destinations/nobody/snapshot", body)[0] == 404


@pytest.mark.parametrize(
    ("body", "target"),
    [
        ({"position": "mysql-bin.000002:4"}, "mysql-bin.000002:4"),
        ({"gtid": " 0-1-100 "}, "0-1-100"),
        ({"timestamp": "2026-01-31T12:00:00+00:00"}, "2026-01-31T12:00:00+00:00"),
    ],
)
def test_a_cursor_moves_to_a_position_a_gtid_or_a_time(
    api: Api, body: dict[str, str], target: str
) -> None:
    status, document = api.change("PUT", "/api/v1/destinations/d2/cursor", body)
    assert status == 200
    assert document["cursor"] == {
        "file": "mysql-bin.000002",
        "position": 4,
        "gtid": None,
        "timestamp_ms": 1_700_000_000_000,
    }
    assert api.control.calls == [("cursor", "d2", target)]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"not json", "not JSON"),
        (b"", "exactly one of"),
        ({"position": "a:1", "gtid": "0-1-1"}, "exactly one of"),
        ({"file": "mysql-bin.000002"}, "exactly one of"),
        ({"position": 4}, "position must be a non-empty string"),
        ({"position": "mysql-bin.000002"}, "is not file:pos"),
        ({"timestamp": "yesterday"}, "is not ISO-8601"),
    ],
)
def test_a_bad_cursor_body_is_400_and_never_reaches_the_destination(
    api: Api, body: object, says: str
) -> None:
    status, document = api.change("PUT", "/api/v1/destinations/d2/cursor", body)
    assert status == 400 and says in document["error"]
    assert api.control.calls == []


def test_moving_a_running_destinations_cursor_is_refused(api: Api) -> None:
    status, document = api.change("PUT", "/api/v1/destinations/d1/cursor", {"gtid": "0-1-1"})
    assert status == 409 and "pause it first" in document["error"]


def test_a_configuration_is_validated_or_applied(api: Api) -> None:
    yaml_type = {**AUTH, "Content-Type": "application/yaml"}
    assert api.call("POST", "/api/v1/config", CONFIG.encode(), yaml_type) == (
        200,
        {
            "applied": False,
            "summary": "no change",
            "added": [],
            "removed": [],
            "changed": [],
            "unchanged": ["d1"],
        },
    )
    status, applied = api.call("POST", "/api/v1/config?apply=true", CONFIG.encode(), yaml_type)
    assert status == 200 and applied["applied"] is True
    assert [call[0] for call in api.control.calls] == ["check", "apply", "check"]
    assert api.call("POST", "/api/v1/config", b" \n", yaml_type)[0] == 400
    assert api.call("POST", "/api/v1/config", CONFIG.encode(), {**AUTH, **JSON})[0] == 415


def test_an_invalid_configuration_lists_its_problems_and_never_echoes_a_secret(
    api: Api,
) -> None:
    bad = CONFIG.replace("slave_id: 7", f"slave_id: {PASSWORD}").replace(
        "topic: t1", "topic: t1, colour: red"
    )
    headers = {**AUTH, "Content-Type": "text/plain"}
    status, document = api.call("POST", "/api/v1/config?apply=true", bad.encode(), headers)
    assert status == 400
    assert document["error"] == "<api>: invalid configuration (2 problems):"
    assert document["problems"][0] == "destinations[0].source.slave_id: must be an integer"
    assert document["problems"][1].startswith("destinations[0].mq.colour: unknown key")
    assert PASSWORD not in json.dumps(document)


def test_each_change_logs_one_line_without_the_token_or_the_body(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bridge")
    api.change("POST", "/api/v1/destinations/d1/pause")
    api.change("PUT", "/api/v1/destinations/d1/cursor", {"gtid": "0-1-1"})
    api.call("POST", "/api/v1/config", CONFIG.encode(), {**AUTH, "Content-Type": "text/plain"})
    api.call("POST", "/api/v1/destinations/d1/resume", headers=JSON)
    lines = [r.getMessage() for r in caplog.records if r.name in ("bridge.admin.api", AUTH_LOG)]
    assert lines[0].startswith("admin endpoint: pause of d1 requested from 127.0.0.1: 200")
    assert lines[1].startswith("admin endpoint: cursor move of d1 requested from 127.0.0.1: 409")
    assert lines[2].startswith("admin endpoint: validation of destinations.yaml requested")
    assert lines[3] == (
        "admin endpoint: refused POST /api/v1/destinations/d1/resume from 127.0.0.1 (no token)"
    )
    assert len(lines) == 4
    assert not any(TOKEN_TEXT in line or PASSWORD in line for line in lines)


def test_every_route_is_documented_and_every_documented_path_is_routed() -> None:
    server = AdminServer(AdminConfig(listen="127.0.0.1:1"), FakeObserved(RUNNING))
    app = server._application(None)
    routed = {
        (route.method.lower(), route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None
        and route.resource.canonical.startswith(("/api/", "/destinations/"))
        and route.method != "HEAD"
    }
    openapi = json.loads(resources.files("bridge.admin").joinpath("openapi.json").read_text())
    documented = {
        (method, path) for path, operations in openapi["paths"].items() for method in operations
    }
    assert routed == documented
    assert openapi["openapi"].startswith("3.1")


def test_rates_are_rows_per_second_between_samples_and_restart_after_a_reset() -> None:
    now = [0.0]
    rates = RowRates(clock=lambda: now[0])
    assert rates.rate("d1", 100) is None
    now[0] = 0.2
    assert rates.rate("d1", 150) is None  # too close to measure
    now[0] = 2.0
    assert rates.rate("d1", 300) == 100.0
    now[0] = 2.1
    assert rates.rate("d1", 310) == 100.0  # the last interval's rate until the next
    now[0] = 3.0
    assert rates.rate("d1", 5) is None  # restarted: counting again from 5
    rates.keep_only({"d2"})
    now[0] = 4.0
    assert rates.rate("d1", 50) is None  # forgotten


def test_documents_are_kept_fresh_while_read_and_not_computed_while_idle() -> None:
    now = [0.0]
    computed: list[float] = []

    def compute() -> list[dict[str, object]]:
        computed.append(now[0])
        return [{"name": "d1", "rows": len(computed)}]

    recent = RecentDocuments(compute, clock=lambda: now[0])
    recent.tick()
    assert computed == []  # nobody has read: an idle bridge computes nothing
    assert recent.latest() is None  # cold: the reader computes
    assert recent.refresh() == [{"name": "d1", "rows": 1}]
    now[0] = 0.5
    recent.tick()  # read 0.5 s ago: refreshed
    now[0] = 0.9
    assert recent.latest() == [{"name": "d1", "rows": 2}]
    now[0] = 2.0  # the refresher fell behind: too old to answer with
    assert recent.latest() is None
    recent.refresh()
    recent.forget()  # an action changed what they say
    assert recent.latest() is None
    now[0] = 20.0
    recent.tick()  # last read 18 s ago: idle again
    assert computed == [0.0, 0.5, 2.0]
