"""Snapshots on the paths tests/e2e/snapshot_load.py's run does not take: a table dropped
and one altered (ADD COLUMN) in the middle of their snapshot; a kill -9 mid-snapshot under
``mq.delivery: exactly_once`` (no duplicate read_committed; at-least-once shows the duplicates
the kill causes); writer transactions that hold a row lock while a chunk reads it and commit
late (docs/snapshots.md's delayed-commit case: no stale key).

Each run is throttled (``snapshot.max_rows_per_second``) to last tens of seconds, so that the
DDL, the kill or the late commits land while chunks are being read."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.mq.records import HEADER_SNAPSHOT
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import (
    BridgeProcess,
    ReadRecord,
    create_topic,
    read_records_to_end,
    write_config,
)
from tests.e2e.snapshot_load import (
    Key,
    Writer,
    differences,
    fill,
    keyed_state,
    source_state,
)

pytestmark = [pytest.mark.services, pytest.mark.timeout(420)]


def snapshot_config(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    schema: str,
    snapshot: dict[str, Any],
    **mq: Any,
) -> tuple[str, Path]:
    """A fresh one-partition topic and tests/e2e's config with ``snapshot`` (mode initial)."""
    topic = f"snapshot-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(tmp_path / "destinations.yaml", mysql, kafka_bootstrap, schema, topic, **mq)
    config = yaml.safe_load(path.read_text())
    config["destinations"][0]["snapshot"] = {"mode": "initial", **snapshot}
    path.write_text(yaml.safe_dump(config))
    return topic, path


def create_filled(mysql: MysqlEndpoint, schema: str, tables: dict[str, int]) -> None:
    """Tables ``(id BIGINT PRIMARY KEY, v INT NOT NULL)`` holding ids 0..rows-1, v = 0."""
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            for table, rows in tables.items():
                cur.execute(
                    f"CREATE TABLE `{schema}`.{table} (id BIGINT PRIMARY KEY, v INT NOT NULL)"
                )
                for first in range(0, rows, 5000):
                    cur.executemany(
                        f"INSERT INTO `{schema}`.{table} VALUES (%s, 0)",
                        [(i,) for i in range(first, min(rows, first + 5000))],
                    )
    finally:
        conn.close()


def execute(mysql: MysqlEndpoint, schema: str, *statements: str) -> None:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(f"USE `{schema}`")
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def by_id(rows: Iterable[dict[str, Any]], columns: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {str(row["id"]): tuple(str(row[c]) for c in columns) for row in rows}


def table_rows(mysql: MysqlEndpoint, schema: str, table: str) -> list[dict[str, Any]]:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM `{schema}`.{table}")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()


def folded(records: Iterable[ReadRecord], table: str) -> list[dict[str, Any]]:
    """The topic's rows of ``table`` folded per id (the last record wins, a DELETE removes)."""
    state: dict[str, dict[str, Any]] = {}
    for record in records:
        message = record.message
        if message.get("table") != table or message.get("isDdl"):
            continue
        for row in message.get("data") or ():
            if message["type"] == "DELETE":
                state.pop(row["id"], None)
            else:
                state[row["id"]] = row
    return list(state.values())


def is_snapshot(record: ReadRecord) -> bool:
    return HEADER_SNAPSHOT in record.headers


def wait_until_equal(
    kafka_bootstrap: str, topic: str, expected: object, actual: Any, timeout_s: float = 60
) -> list[ReadRecord]:
    """Read the topic until ``actual(records) == expected`` (the bridge catching up) or the
    time is up; returns the last read."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = read_records_to_end(kafka_bootstrap, topic)
        if actual(records) == expected or time.monotonic() > deadline:
            return records
        time.sleep(1)


# ---------------------------------------------------------------------- dropped and altered


def test_a_table_dropped_and_one_altered_mid_snapshot(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    schema = scratch_schema
    create_filled(mysql, schema, {"altered": 6000, "dropped": 6000})
    topic, config = snapshot_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        schema,
        {"chunk_size": 400, "parallelism": 2, "max_rows_per_second": 1000},
    )
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("snapshot of", timeout_s=60)
        time.sleep(3)  # ~3,000 of the 12,000 rows read: both tables half-way or less
        assert "snapshot done" not in bridge.output(), "the snapshot ended before the DDL"
        execute(
            mysql,
            schema,
            "ALTER TABLE altered ADD COLUMN extra INT NOT NULL DEFAULT 7",
            "UPDATE altered SET v = 1, extra = 8 WHERE id < 50",
            "DROP TABLE dropped",
        )
        bridge.wait_for_output("snapshot done", timeout_s=120)
        execute(mysql, schema, "UPDATE altered SET v = 2 WHERE id >= 5950")
        source = table_rows(mysql, schema, "altered")
        records = wait_until_equal(
            kafka_bootstrap,
            topic,
            by_id(source, ("v",)),
            lambda rs: by_id(folded(rs, "altered"), ("v",)),
        )
        log = bridge.output()
        assert bridge.process is not None and bridge.process.poll() is None, log[-3000:]
    finally:
        bridge.kill()
    assert "Traceback" not in log, log[-3000:]
    # A clear line for each, and the dropped table's snapshot stopped half-way.
    assert "altered changed shape during chunk" in log, log[-3000:]
    assert f"{schema}.dropped was dropped during its snapshot" in log or (
        f"{schema}.dropped is gone" in log
    ), log[-3000:]
    dropped_rows = sum(1 for r in records if is_snapshot(r) and r.message["table"] == "dropped")
    assert 0 < dropped_rows < 6000, dropped_rows
    # Snapshot rows of the altered table: the old shape first, then, from the chunk that
    # followed the ALTER on, the new one (never the old shape again).
    shapes = [
        "extra" in r.message["data"][0]
        for r in records
        if is_snapshot(r) and r.message["table"] == "altered"
    ]
    first_new = shapes.index(True)
    assert first_new > 0 and all(shapes[first_new:]), "no snapshot row in both shapes"
    assert all(
        row["extra"] == "7"
        for r in records
        if is_snapshot(r) and r.message["table"] == "altered" and "extra" in r.message["data"][0]
        for row in r.message["data"]
        if int(row["id"]) >= 50
    )
    # Final state: every row and value of the source, on the columns both shapes have; the
    # new column wherever a record was written after the ALTER.
    kafka = folded(records, "altered")
    assert by_id(kafka, ("v",)) == by_id(source, ("v",))
    extra = by_id(source, ("extra",))
    after_alter = by_id((row for row in kafka if "extra" in row), ("extra",))
    assert after_alter and all(extra[k] == v for k, v in after_alter.items())


# -------------------------------------------------------------------------- exactly-once


def read_until_converged(
    kafka_bootstrap: str, topic: str, source: dict[Key, dict[str, str]], timeout_s: float = 120
) -> tuple[list[ReadRecord], list[str]]:
    """The topic's records once its state per key equals ``source`` (the bridge caught up),
    or when the time is up; and the keys that still differ then."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = read_records_to_end(kafka_bootstrap, topic, timeout_s=120)
        diff = differences(source, keyed_state(r.message for r in records))
        if not diff or time.monotonic() > deadline:
            return records, diff
        time.sleep(2)


def snapshot_duplicates(records: list[ReadRecord]) -> int:
    """Records read twice: a key's snapshot row more than once, or a streamed change (the
    writer's values are unique per change: v counts up) more than once."""
    seen: set[tuple[Any, ...]] = set()
    duplicates = 0
    for record in records:
        message = record.message
        for row in message.get("data") or ():
            identity = (
                is_snapshot(record),
                message["table"],
                message["type"],
                tuple(sorted(row.items())) if not is_snapshot(record) else row.get("id"),
                row.get("region"),
                row.get("n"),
            )
            duplicates += identity in seen
            seen.add(identity)
    return duplicates


@pytest.mark.parametrize("delivery", ["exactly_once", "at_least_once"])
def test_kill_9_mid_snapshot_in_each_delivery_mode(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    delivery: str,
) -> None:
    """Exactly-once: the rows of a chunk and the cursor's progress commit in one Kafka
    transaction, so a kill -9 mid-snapshot leaves no duplicate for a read_committed consumer.
    At-least-once (the negative case): the same kill sends unacknowledged rows again."""
    fill(mysql, scratch_schema)
    mq: dict[str, Any] = {"delivery": delivery}
    if delivery == "exactly_once":
        mq["offsets_topic"] = f"snap-offsets-{uuid.uuid4().hex[:8]}"
    topic, config = snapshot_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        {"chunk_size": 2000, "parallelism": 2, "max_rows_per_second": 8000},
        **mq,
    )
    writer = Writer(mysql, scratch_schema)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    bridge = BridgeProcess(config)
    try:
        bridge.start().wait_for_output("snapshot of", timeout_s=60)
        time.sleep(5)
        assert "snapshot done" not in bridge.output(), "the snapshot ended before the kill"
        bridge.kill()
        bridge.start().wait_for_output("snapshot done", timeout_s=180)
        assert "resumes after its last acknowledged chunk" in bridge.output()
        time.sleep(2)
    finally:
        writer.stop.set()
        thread.join(30)
    try:
        assert writer.error is None, writer.error
        records, diff = read_until_converged(
            kafka_bootstrap, topic, source_state(mysql, scratch_schema)
        )
        log = bridge.output()
    finally:
        bridge.kill()
    assert not diff, f"{len(diff)} keys differ, e.g. {diff[:5]}"
    assert "Traceback" not in log, log[-3000:]
    duplicates = snapshot_duplicates(records)
    print(f"{delivery}: {len(records)} records, {duplicates} duplicates read_committed")
    if delivery == "exactly_once":
        assert duplicates == 0
    else:
        assert duplicates > 0, "no duplicate after a kill -9 at least once: the check is blind"


# ---------------------------------------------------------------------- delayed commits


@dataclass
class LateCommitters:
    """Threads that each, in a loop, update one random row, hold its lock (the transaction
    open) for a while, then commit; they record when each key was locked and committed."""

    mysql: MysqlEndpoint
    schema: str
    rows: int
    stop: threading.Event = field(default_factory=threading.Event)
    held: list[tuple[str, float, float]] = field(default_factory=list)  # (id, locked, committed) ms
    errors: list[BaseException] = field(default_factory=list)

    def run(self, seed: int) -> None:
        rng = random.Random(seed)
        conn = connect_admin(self.mysql)
        try:
            with conn.cursor() as cur:
                cur.execute(f"USE `{self.schema}`")
                while not self.stop.is_set():
                    key = rng.randrange(self.rows)
                    cur.execute("BEGIN")
                    cur.execute("UPDATE items SET v = v + 1 WHERE id = %s", (key,))
                    locked = time.time() * 1000
                    # Long enough to outlast a chunk's time from its read to its put (a
                    # child session reads the next chunk ahead, before the throttle lets
                    # the one before it through): a row read while locked then commits
                    # after its chunk went in, the case staged.
                    time.sleep(rng.uniform(1.0, 3.0))
                    cur.execute("COMMIT")
                    self.held.append((str(key), locked, time.time() * 1000))
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            conn.close()


def test_rows_locked_by_late_committing_writers_are_never_stale(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    """A chunk reads rows whose newer version an open transaction holds (InnoDB's consistent
    read gives the old one without waiting); the transaction commits while, or after, the
    chunk is handed to the stream. The window must drop those keys (their own events carry
    the new row), so no key ends older than the source."""
    rows = 20_000
    create_filled(mysql, scratch_schema, {"items": rows})
    topic, config = snapshot_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        {"chunk_size": 1000, "parallelism": 1, "max_rows_per_second": 2000},
    )
    committers = LateCommitters(mysql, scratch_schema, rows)
    threads = [
        threading.Thread(target=committers.run, args=(seed,), daemon=True) for seed in range(16)
    ]
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading", timeout_s=60)
        for thread in threads:
            thread.start()
        bridge.wait_for_output("snapshot done", timeout_s=120)
    finally:
        committers.stop.set()
        for thread in threads:
            thread.join(30)
    try:
        assert not committers.errors, committers.errors
        source = table_rows(mysql, scratch_schema, "items")
        records = wait_until_equal(
            kafka_bootstrap,
            topic,
            by_id(source, ("v",)),
            lambda rs: by_id(folded(rs, "items"), ("v",)),
        )
        log = bridge.output()
    finally:
        bridge.kill()
    assert "Traceback" not in log, log[-3000:]
    kafka = by_id(folded(records, "items"), ("v",))
    expected = by_id(source, ("v",))
    stale = [k for k in expected if kafka.get(k) != expected[k]]
    assert not stale, f"{len(stale)} stale keys, e.g. {stale[:5]}"
    # The case happened: some chunk read a row while a writer held it (es = the read time).
    read_at = {
        row["id"]: r.message["es"] for r in records if is_snapshot(r) for row in r.message["data"]
    }
    overlapping = sum(
        1
        for key, locked, committed in committers.held
        if locked <= read_at.get(key, -1) <= committed
    )
    dropped = sum(1 for key, _, _ in committers.held if key not in read_at)
    print(
        f"{len(committers.held)} late commits; {overlapping} rows read while locked, "
        f"{dropped} keys left to their events"
    )
    assert overlapping > 0, "no chunk read a locked row: the test did not stage the case"
