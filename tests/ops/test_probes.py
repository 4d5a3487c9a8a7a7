"""Readiness and health follow the destinations: the runner in-process with real services."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bridge.admin import HA_ROLES, AdminListenFailed
from bridge.config import BridgeConfig, parse_config
from bridge.runner import Runner
from tests.chaos.partition import TcpRelay
from tests.conftest import MysqlEndpoint
from tests.integration.mariadb_server import throwaway_mariadb
from tests.ops.helpers import free_port, get, metric, scrape, wait_until


def _destination(name: str, address: str, user: str, password: str, slave_id: int) -> Any:
    return {
        "name": name,
        "source": {
            "address": address,
            "username": user,
            "password": password,
            "slave_id": slave_id,
            "connect_timeout_s": 2,
        },
        "filter": {"regex": r"ops_probe_nothing\..*"},
        "heartbeat_period_s": 1,
        "mq": {"topic": "ops-probe-unused"},
    }


def _config(kafka: str, listen: str | None, *destinations: Any) -> BridgeConfig:
    return parse_config(
        {
            "kafka": {"bootstrap_servers": kafka},
            "meta": {"store": "memory"},
            "admin": {"listen": listen},
            "destinations": list(destinations),
        }
    )


def _slave_id() -> int:
    return 40000 + os.getpid() % 10000


@pytest.fixture
def runner_factory() -> Iterator[Any]:
    started: list[Runner] = []

    def start(config: BridgeConfig) -> Runner:
        runner = Runner(config)
        started.append(runner)
        runner.start()
        return runner

    yield start
    for runner in started:
        runner.stop(10)
    HA_ROLES.clear()


def test_unreachable_source_is_not_ready_and_a_stopped_destination_neither(
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    runner_factory: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A destination pointed at a closed port: ``starting`` until its first attempt fails,
    then ``source-unreachable`` (logged once, the reason in /status without the address)."""
    caplog.set_level(logging.INFO)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    live = _destination("live", mysql.address, mysql.user, mysql.password, _slave_id())
    closed = f"127.0.0.1:{free_port()}"  # bound and released: nothing listens there
    dead = _destination("dead", closed, "canal", "x", _slave_id() + 1)
    runner = runner_factory(_config(kafka_bootstrap, f"127.0.0.1:{port}", live, dead))

    wait_until(lambda: "live ready" in get(f"{base}/readyz")[1], 30, "live ready")
    body = wait_until(
        lambda: "dead source-unreachable" in (r := get(f"{base}/readyz"))[1] and r[1],
        30,
        "the closed port's destination source-unreachable",
    )
    assert body == "not ok\nlive ready\ndead source-unreachable\n"
    assert get(f"{base}/healthz") == (200, "ok\nlive ok\ndead ok\n")
    # No data, addresses or error text in the probes: status words only.
    assert "127.0.0.1" not in body and "refused" not in body
    reasons = {d["name"]: d["reason"] for d in json.loads(get(f"{base}/status")[1])["destinations"]}
    assert reasons["dead"] == "the binlog reader is retrying after: SourceUnreachable"

    def dead_lines() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.name == "bridge.admin.probes"]
        return [line for line in lines if line.startswith("destination dead")]

    # The readiness log looks for changes every READINESS_LOG_INTERVAL_S (5 s).
    wait_until(dead_lines, 15, "the readiness log's line")
    assert dead_lines() == [
        "destination dead not ready: source-unreachable (the binlog reader is retrying after: "
        "SourceUnreachable)"
    ]

    runner.workers["dead"].stop()
    runner.workers["dead"].join(10)
    assert get(f"{base}/readyz") == (503, "not ok\nlive ready\ndead stopped\n")
    samples = scrape(base)
    assert metric(samples, "canal_bridge_destination_state", destination="dead", state="stopped")
    assert metric(samples, "canal_bridge_lag_seconds", destination="dead") is None


def test_standby_is_ready_and_reported(
    mysql: MysqlEndpoint, kafka_bootstrap: str, runner_factory: Any
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    live = _destination("live", mysql.address, mysql.user, mysql.password, _slave_id() + 2)
    runner_factory(_config(kafka_bootstrap, f"127.0.0.1:{port}", live))
    wait_until(lambda: get(f"{base}/readyz")[0] == 200, 30, "ready")
    assert metric(scrape(base), "canal_bridge_ha_active", destination="live") == 1

    HA_ROLES.set("live", "standby")  # what bridge.ha does when it loses the running node
    assert get(f"{base}/readyz") == (200, "ok\nlive standby\n")
    samples = scrape(base)
    assert metric(samples, "canal_bridge_ha_active", destination="live") == 0
    assert metric(samples, "canal_bridge_destination_state", destination="live", state="standby")


def test_source_going_away_turns_ready_into_stalled(
    kafka_bootstrap: str, runner_factory: Any
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with throwaway_mariadb("--log-bin=mysql-bin", "--server-id=7", "--binlog-format=ROW") as db:
        destination = _destination("gone", db.address, db.user, db.password, _slave_id() + 3)
        runner_factory(_config(kafka_bootstrap, f"127.0.0.1:{port}", destination))
        wait_until(lambda: get(f"{base}/readyz")[0] == 200, 30, "ready")
        pid = int((db.datadir.parent / "mariadbd.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)  # the server this test started
        started = time.monotonic()
        body = wait_until(
            lambda: (r := get(f"{base}/readyz"))[0] == 503 and r[1],
            40,
            "not ready after the source went away",
        )
        assert body == "not ok\ngone stalled\n"
        assert time.monotonic() - started >= 5  # the stale window, not an instant flip
        assert get(f"{base}/healthz")[0] == 200  # the process itself is fine


def test_admin_listen_null_serves_nothing_and_a_taken_port_fails_first(
    mysql: MysqlEndpoint, kafka_bootstrap: str, runner_factory: Any
) -> None:
    live = _destination("live", mysql.address, mysql.user, mysql.password, _slave_id() + 4)
    runner = runner_factory(_config(kafka_bootstrap, None, live))
    assert runner.admin is None
    runner.stop(10)

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        runner = Runner(_config(kafka_bootstrap, address, live))
        with pytest.raises(AdminListenFailed, match=r"set admin\.listen to a free host:port"):
            runner.start()
        assert runner.workers == {}  # no destination started
        runner.stop(10)


def test_kafka_unreachable_with_nothing_to_send_is_not_ready_and_logged_then_ready_again(
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    runner_factory: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The bridge reaches Kafka through a relay that refuses connections (a closed port, as
    far as librdkafka can tell), then lets them through."""
    caplog.set_level(logging.INFO)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with TcpRelay(int(kafka_bootstrap.rsplit(":", 1)[1])) as relay:
        relay.cut()
        idle = _destination("idle", mysql.address, mysql.user, mysql.password, _slave_id() + 5)
        runner_factory(_config(relay.address, f"127.0.0.1:{port}", idle))
        body = wait_until(
            lambda: (r := get(f"{base}/readyz"))[0] == 503 and "kafka" in r[1] and r[1],
            60,
            "not ready while Kafka does not answer",
        )
        assert body == "not ok\nidle kafka-unreachable\n"
        (status,) = json.loads(get(f"{base}/status")[1])["destinations"]
        assert status["reason"].startswith("no Kafka metadata for ")
        assert "127.0.0.1" not in status["reason"]
        assert get(f"{base}/healthz")[0] == 200  # restarting the process would not help

        relay.heal()
        wait_until(lambda: get(f"{base}/readyz") == (200, "ok\nidle ready\n"), 60, "ready again")
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("bridge.admin")]
    assert len([line for line in lines if line.startswith("Kafka unreachable: ")]) == 1
    assert lines.count("Kafka answers again") == 1
    not_ready = "destination idle not ready: kafka-unreachable (no Kafka metadata for "
    assert len([line for line in lines if line.startswith(not_ready)]) == 1
