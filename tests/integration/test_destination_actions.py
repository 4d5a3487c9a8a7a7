"""Pause, resume and cursor moves on a running ``Runner`` (the admin API's actions) against the
real MariaDB and Kafka: one runner, one destination, checked step by step."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from bridge.admin import RunnerObserver
from bridge.config import parse_config
from bridge.exceptions import ActionRefused
from bridge.runner import Runner
from tests.conftest import MysqlEndpoint, gtid_state_at
from tests.e2e.bridge_process import create_topic, read_records_to_end
from tests.integration.binlog_helpers import execute, master_position
from tests.ops.helpers import wait_until

Connection = pymysql.connections.Connection  # type: ignore[type-arg]


@pytest.fixture
def runner(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    admin_connection: Connection,
) -> Iterator[Runner]:
    execute(admin_connection, f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY)")
    topic = f"actions-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": kafka_bootstrap, "producer": {"linger.ms": 5}},
            "meta": {"store": "file", "dir": str(tmp_path / "meta"), "flush_period_ms": 200},
            "admin": {"listen": None},
            "destinations": [
                {
                    "name": "orders",
                    "source": {
                        "address": mysql.address,
                        "username": mysql.user,
                        "password": mysql.password,
                        "slave_id": 30000 + os.getpid() % 10000,
                    },
                    "filter": {"regex": rf"{scratch_schema}\..*"},
                    "get_timeout_ms": 100,
                    "heartbeat_period_s": 1,
                    "mq": {"topic": topic},
                    "snapshot": {"mode": "never"},
                }
            ],
        }
    )
    runner = Runner(config)
    runner.start()
    yield runner
    runner.stop(10)


def _ids(runner: Runner) -> list[int]:
    topic = runner.config.destination("orders").mq.topic
    bootstrap = runner.config.kafka.bootstrap_servers
    records = read_records_to_end(bootstrap, topic, timeout_s=10)
    return [
        int(row["id"]) for r in records if not r.message.get("isDdl") for row in r.message["data"]
    ]


def _insert(conn: Connection, schema: str, ids: range) -> None:
    execute(conn, *(f"INSERT INTO `{schema}`.t VALUES ({i})" for i in ids))


def _unusable_gtids(conn: Connection, mysql: MysqlEndpoint) -> tuple[str, str]:
    """A GTID set beyond what the source wrote, and one of the other server kind."""
    if mysql.flavor == "mariadb":
        return "0-99999-5", f"{uuid.UUID(int=1)}:1-5"
    with conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        ((server_uuid,),) = cur.fetchall()
    return f"{server_uuid}:1-999999999", "0-99999-5"


def _state(runner: Runner) -> tuple[str, object]:
    (snapshot,) = RunnerObserver(runner).snapshots()
    return snapshot.state, snapshot.cursor


@pytest.mark.both_servers
def test_pause_resume_and_moving_the_cursor_of_a_paused_destination(
    runner: Runner, admin_connection: Connection, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    conn = admin_connection
    wait_until(lambda: _state(runner)[1] is not None, 30, "the destination reading")
    _insert(conn, scratch_schema, range(0, 5))
    fifth = master_position(conn)
    _insert(conn, scratch_schema, range(5, 10))
    wait_until(lambda: len(_ids(runner)) >= 10, 30, "rows 0-9 delivered")

    foreign, other_kind = _unusable_gtids(conn, mysql)
    with pytest.raises(ActionRefused, match="orders is running: pause it first"):
        runner.move_cursor("orders", f"{fifth.journal_name}:{fifth.position}")

    runner.pause("orders")
    runner.pause("orders")  # pausing a paused destination does nothing
    state, cursor = _state(runner)
    assert state == "paused" and cursor is not None, (state, cursor)
    _insert(conn, scratch_schema, range(10, 20))
    time.sleep(1.5)  # several get timeouts and flush periods: nothing may come while paused
    assert sorted(_ids(runner)) == list(range(10))

    for target, says in (
        ("nonexistent-bin.000001:4", "nonexistent-bin.000001 is not on the source"),
        (f"{fifth.journal_name}:{2**40}", f"past the end of {fifth.journal_name}"),
        ("2000-01-01T00:00:00Z", "oldest binlog .* begins at .*purged"),
        (foreign, f"binlog does not go on from GTID set {foreign}"),
        (other_kind, "GTID set and the source is"),
        ("yesterday", "is not a cursor target"),
    ):
        with pytest.raises(ActionRefused, match=says):
            runner.move_cursor("orders", target)
    assert _state(runner) == ("paused", cursor)  # a refused move wrote nothing

    runner.resume("orders")
    wait_until(lambda: len(_ids(runner)) >= 20, 30, "rows 10-19 after resume")
    assert sorted(_ids(runner)) == list(range(20)), "lost or duplicated across pause/resume"

    runner.pause("orders")
    moved = runner.move_cursor("orders", f"{fifth.journal_name}:{fifth.position}")
    assert (moved.journal_name, moved.position) == (fifth.journal_name, fifth.position)
    assert _state(runner) == ("paused", moved)
    runner.resume("orders")
    expected = list(range(20)) + list(range(5, 20))
    wait_until(lambda: len(_ids(runner)) >= len(expected), 30, "rows 5-19 re-delivered")
    assert _ids(runner) == expected

    # The same place named by the GTID state there: rows 5-19 a third time.
    gtid = gtid_state_at(conn, mysql, str(fifth.journal_name), int(fifth.position or 4))
    runner.pause("orders")
    assert runner.move_cursor("orders", gtid) == moved
    runner.resume("orders")
    expected += list(range(5, 20))
    wait_until(lambda: len(_ids(runner)) >= len(expected), 30, "rows 5-19 from the GTID")
    assert _ids(runner) == expected
