"""Tables a widened filter newly selects, end to end on both servers: a destination streams
table ``a`` while table ``b`` already holds rows; restarted with a filter selecting both, every
existing row of ``b`` arrives as a snapshot record (INSERT, header ``canal-bridge-snapshot``)
while changes of both keep streaming, and ``a`` is not read again. The negative cases: a
restart with the same filter snapshots nothing; a table dropped from the filter stops
producing; a keyless table the filter newly selects is reported in one line, not skipped
silently. Selected again by a live configuration change, the dropped table is backfilled."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.conftest import Connection, MysqlEndpoint
from tests.e2e.bridge_process import (
    BridgeProcess,
    ReadRecord,
    create_topic,
    read_records_to_end,
    write_config,
)

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

ROWS = 120
SNAPSHOT_HEADER = "canal-bridge-snapshot"


def _ids(records: list[ReadRecord], table: str, *, snapshot: bool) -> list[int]:
    return [
        int(row["id"])
        for record in records
        if (SNAPSHOT_HEADER in record.headers) == snapshot
        and record.message.get("table") == table
        and record.message.get("data")
        for row in record.message["data"]
    ]


class Run:
    """One destination restarted with different filters over one topic and one cursor."""

    def __init__(self, path: Path, kafka: str, topic: str, schema: str) -> None:
        self.path, self.kafka, self.topic = path, kafka, topic
        self.schema = schema
        self.name: str = yaml.safe_load(path.read_text())["destinations"][0]["name"]
        self.bridge: BridgeProcess | None = None

    def select(self, *tables: str) -> None:
        """Write the config with a filter selecting ``tables`` of the schema."""
        config = yaml.safe_load(self.path.read_text())
        regex = ",".join(f"{self.schema}\\.{table}" for table in tables)
        config["destinations"][0]["filter"] = {"regex": regex}
        config["destinations"][0]["snapshot"] = {"mode": "never", "chunk_size": 50}
        self.path.write_text(yaml.safe_dump(config))

    def start(self, *tables: str) -> BridgeProcess:
        """Start with a filter selecting ``tables``; wait until it reads."""
        self.select(*tables)
        self.bridge = BridgeProcess(self.path).start()
        self.bridge.wait_for_output(f"destination {self.name} reading", timeout_s=60)
        return self.bridge

    def reload(self, *tables: str) -> None:
        """Select ``tables`` in the running bridge: a live configuration change (SIGHUP)."""
        assert self.bridge is not None
        self.select(*tables)
        self.bridge.signal(signal.SIGHUP)

    def output(self) -> str:
        assert self.bridge is not None
        return self.bridge.output()

    def stop(self) -> str:
        """Stop cleanly (the cursor is flushed); the run's log."""
        assert self.bridge is not None
        self.bridge.signal(signal.SIGTERM)
        self.bridge.wait(60)
        return self.bridge.output()

    def wait_for(self, check: Callable[[list[ReadRecord]], bool]) -> list[ReadRecord]:
        assert self.bridge is not None
        deadline = time.monotonic() + 60
        while True:
            records = read_records_to_end(self.kafka, self.topic)
            if check(records):
                return records
            process = self.bridge.process
            assert process is not None and process.poll() is None, self.bridge.output()
            assert time.monotonic() < deadline, self.bridge.output()[-4000:]
            time.sleep(0.3)


def _write(conn: Connection, *statements: str) -> None:
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def test_a_widened_filter_backfills_only_the_new_table_while_streaming(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    kafka_bootstrap: str,
    scratch_schema: str,
) -> None:
    s = f"`{scratch_schema}`"
    _write(
        admin_connection,
        f"CREATE TABLE {s}.a (id INT PRIMARY KEY, v VARCHAR(20))",
        f"CREATE TABLE {s}.b (id INT PRIMARY KEY, v VARCHAR(20))",
        f"CREATE TABLE {s}.nokey (id INT, v VARCHAR(20))",
        f"INSERT INTO {s}.a VALUES " + ",".join(f"({i}, 'a{i}')" for i in range(ROWS)),
        f"INSERT INTO {s}.b VALUES " + ",".join(f"({i}, 'b{i}')" for i in range(ROWS)),
        f"INSERT INTO {s}.nokey VALUES (1, 'x')",
    )
    topic = f"backfill-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(tmp_path / "config.yaml", mysql, kafka_bootstrap, scratch_schema, topic)
    run = Run(path, kafka_bootstrap, topic, scratch_schema)

    # 1. Only a: its changes stream, b's do not; nothing is snapshotted (mode never).
    run.start("a")
    _write(
        admin_connection,
        f"INSERT INTO {s}.b VALUES (1000, 'b before')",
        f"INSERT INTO {s}.a VALUES (1000, 'a before')",
    )
    first = run.wait_for(lambda r: 1000 in _ids(r, "a", snapshot=False))
    assert _ids(first, "b", snapshot=False) == []
    assert not any(SNAPSHOT_HEADER in record.headers for record in first)
    run.stop()

    # 2. a and b (and the keyless table): b's existing rows arrive as snapshot rows, 1000
    # (written while b was not selected) among them; changes of both stream meanwhile.
    run.start("a", "b", "nokey")
    _write(
        admin_connection,
        f"INSERT INTO {s}.a VALUES (1001, 'a during')",
        f"INSERT INTO {s}.b VALUES (1001, 'b during')",
    )
    second = run.wait_for(
        lambda r: (
            {*range(ROWS), 1000} <= set(_ids(r, "b", snapshot=True))
            and 1001 in _ids(r, "a", snapshot=False)
            and 1001 in _ids(r, "b", snapshot=False)
        )
    )
    log = run.stop()
    snapshot = [record for record in second if SNAPSHOT_HEADER in record.headers]
    assert {r.headers[SNAPSHOT_HEADER].decode().split(";")[0] for r in snapshot} == {
        f"{scratch_schema}.b"
    }  # a is covered: never read again
    assert all(r.message["type"] == "INSERT" for r in snapshot)
    assert sorted(_ids(second, "b", snapshot=True)) in (
        [*range(ROWS), 1000],
        [*range(ROWS), 1000, 1001],  # the streamed insert may also fall inside a chunk's read
    )
    assert (
        f"destination {run.name}: the filter now selects {scratch_schema}.b, "
        f"{scratch_schema}.nokey: snapshotting their existing rows while streaming"
    ) in log
    # The keyless table: one line saying why and what to do, not a silent skip.
    (keyless,) = [
        line for line in log.splitlines() if f"snapshotting {scratch_schema}.nokey" in line
    ]
    assert "WARNING" in keyless and "has no primary key" in keyless
    assert "Traceback" not in log

    # 3. The same filter again: nothing is snapshotted.
    run.start("a", "b", "nokey")
    _write(admin_connection, f"INSERT INTO {s}.b VALUES (1002, 'b again')")
    third = run.wait_for(lambda r: 1002 in _ids(r, "b", snapshot=False))
    log = run.stop()
    assert [r for r in third if SNAPSHOT_HEADER in r.headers] == snapshot
    assert "the filter now selects" not in log and "the filter changed" not in log

    # 4. a dropped from the filter: its changes stop, b's go on.
    run.start("b")
    _write(
        admin_connection,
        f"INSERT INTO {s}.a VALUES (1003, 'a dropped')",
        f"INSERT INTO {s}.b VALUES (1003, 'b still')",
    )
    fourth = run.wait_for(lambda r: 1003 in _ids(r, "b", snapshot=False))
    assert 1003 not in _ids(fourth, "a", snapshot=False)
    assert [r for r in fourth if SNAPSHOT_HEADER in r.headers] == snapshot
    assert "selects no existing table it did not select before" in run.output()

    # 5. a selected again by a live configuration change (SIGHUP): the destination restarts
    # from its cursor and a's rows arrive as snapshot rows, 1003 (not streamed) among them.
    run.reload("a", "b")
    fifth = run.wait_for(
        lambda r: {*range(ROWS), 1000, 1001, 1003} <= set(_ids(r, "a", snapshot=True))
    )
    log = run.stop()
    assert f"the filter now selects {scratch_schema}.a: snapshotting" in log
    assert _ids(fifth, "b", snapshot=True) == _ids(second, "b", snapshot=True)
    assert "Traceback" not in log
