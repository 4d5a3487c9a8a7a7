"""A snapshot under load, shared by tests/e2e/test_snapshot.py and tests/spark:
three tables with 110k rows (one with a composite key), a writer that keeps updating,
deleting and inserting them, ``snapshot.mode: initial`` with a source account that has only
SELECT, REPLICATION SLAVE and REPLICATION CLIENT, the bridge killed -9 during the snapshot;
``run_snapshot`` compares the topic's final state per key with the source's."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import yaml

from tests.conftest import Account, MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end, write_config

# (table, DDL, rows): one composite key; 110k rows in all.
TABLES = (
    ("items", "id BIGINT PRIMARY KEY, v INT NOT NULL, note VARCHAR(40)", 50_000),
    (
        "pairs",
        "region VARCHAR(8) NOT NULL, n INT NOT NULL, v INT NOT NULL, PRIMARY KEY (region, n)",
        40_000,
    ),
    ("notes", "id BIGINT PRIMARY KEY, v INT NOT NULL, note VARCHAR(40)", 20_000),
)
KEYS = {"items": ("id",), "pairs": ("region", "n"), "notes": ("id",)}
REGIONS = ("eu", "us", "ap", "sa")

Key = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class SnapshotRun:
    """What ``run_snapshot`` leaves: the keys whose final state differs, the writer, the
    bridge (still running) and its topic."""

    differences: list[str]
    writer: Writer
    bridge: BridgeProcess
    topic: str


def _row_values(table: str, i: int) -> tuple[Any, ...]:
    if table == "pairs":
        return (REGIONS[i % 4], i // 4, 0)
    return (i, 0, f"note {i}")


def fill(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            for table, columns, rows in TABLES:
                cur.execute(f"CREATE TABLE `{schema}`.{table} ({columns})")
                marks = ", ".join(["%s"] * 3)
                for first in range(0, rows, 5000):
                    cur.executemany(
                        f"INSERT INTO `{schema}`.{table} VALUES ({marks})",
                        [_row_values(table, i) for i in range(first, min(rows, first + 5000))],
                    )
    finally:
        conn.close()


@dataclass
class Writer:
    """Updates (v+1), deletes and inserts rows of every table in small transactions until
    stopped; records its worst statement latency."""

    mysql: MysqlEndpoint
    schema: str
    stop: threading.Event = field(default_factory=threading.Event)
    worst_s: float = 0.0
    statements: int = 0
    error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(18)
        conn = connect_admin(self.mysql)
        conn.autocommit(True)
        next_id = {"items": 10_000_000, "notes": 10_000_000, "pairs": 10_000_000}
        try:
            while not self.stop.is_set():
                table, _, rows = rng.choice(TABLES)
                statements = []
                for _ in range(rng.randint(1, 10)):
                    i = rng.randrange(rows)
                    roll = rng.random()
                    where = "region = %s AND n = %s" if table == "pairs" else "id = %s"
                    key = _row_values(table, i)[:2] if table == "pairs" else (i,)
                    if roll < 0.8:
                        statements.append((f"UPDATE {table} SET v = v + 1 WHERE {where}", key))
                    elif roll < 0.9:
                        statements.append((f"DELETE FROM {table} WHERE {where}", key))
                    else:
                        next_id[table] += 1
                        values = _row_values(table, next_id[table])
                        statements.append((f"INSERT INTO {table} VALUES (%s, %s, %s)", values))
                with conn.cursor() as cur:
                    cur.execute(f"USE `{self.schema}`")
                    self._timed(cur, "BEGIN", ())
                    for sql, params in statements:
                        self._timed(cur, sql, params)
                    self._timed(cur, "COMMIT", ())
                time.sleep(0.002)
        except BaseException as exc:
            self.error = exc
        finally:
            conn.close()

    def _timed(self, cur: Any, sql: str, params: tuple[Any, ...]) -> None:
        started = time.perf_counter()
        cur.execute(sql, params)
        self.worst_s = max(self.worst_s, time.perf_counter() - started)
        self.statements += 1


def source_state(mysql: MysqlEndpoint, schema: str) -> dict[Key, dict[str, str]]:
    conn = connect_admin(mysql)
    state: dict[Key, dict[str, str]] = {}
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            for table, _, _ in TABLES:
                cur.execute(f"SELECT * FROM `{schema}`.{table}")
                for row in cur.fetchall():
                    text = {k: str(v) for k, v in row.items()}
                    state[(table, tuple(text[k] for k in KEYS[table]))] = text
    finally:
        conn.close()
    return state


def keyed_state(messages: Iterable[dict[str, Any]]) -> dict[Key, dict[str, str]]:
    """The tables' rows folded per key from FlatMessages (the last wins, a DELETE removes)."""
    state: dict[Key, dict[str, str]] = {}
    for message in messages:
        table = message.get("table")
        if table not in KEYS or message.get("isDdl"):
            continue
        for row in message.get("data") or ():
            key = (table, tuple(row[k] for k in KEYS[table]))
            if message["type"] == "DELETE":
                state.pop(key, None)
            else:
                state[key] = dict(row)
    return state


def topic_state(bootstrap: str, topic: str) -> tuple[dict[Key, dict[str, str]], int]:
    """The topic folded per key (``keyed_state``), and its length."""
    records = read_to_end(bootstrap, topic, timeout_s=120)
    return keyed_state(message for *_, message in records), len(records)


def differences(source: dict[Key, dict[str, str]], kafka: dict[Key, dict[str, str]]) -> list[str]:
    out = []
    for key in sorted(set(source) | set(kafka)):
        if source.get(key) != kafka.get(key):
            out.append(f"{key}: source {source.get(key)} kafka {kafka.get(key)}")
    return out


def run_snapshot(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    schema: str,
    account: Account,
    *,
    kills: int,
    env: dict[str, str] | None = None,
) -> SnapshotRun:
    """Fill, start the writer, run the bridge (killed -9 ``kills`` times during the snapshot),
    stop the writer once the snapshot is done, and compare the topic with the source."""
    fill(mysql, schema)
    topic = f"snapshot-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(tmp_path / "destinations.yaml", mysql, kafka_bootstrap, schema, topic)
    config = yaml.safe_load(path.read_text())
    destination = config["destinations"][0]
    destination["source"]["username"] = account.user
    destination["snapshot"] = {"mode": "initial", "chunk_size": 2000, "parallelism": 2}
    destination["snapshot"]["max_rows_per_second"] = 4000  # ~30 s: room for two kills
    path.write_text(yaml.safe_dump(config))
    writer = Writer(mysql, schema)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    bridge = BridgeProcess(path, env={"CANAL_PASSWORD": account.password, **(env or {})})
    try:
        for _ in range(kills):
            bridge.start()
            bridge.wait_for_output("snapshot of", timeout_s=60)
            time.sleep(6)
            assert "snapshot done" not in bridge.output(), "the snapshot ended before the kill"
            bridge.kill()
        bridge.start()
        bridge.wait_for_output("snapshot done", timeout_s=240)
        time.sleep(2)
    finally:
        writer.stop.set()
        thread.join(30)
    assert writer.error is None, writer.error
    print(
        f"writer: {writer.statements} statements during the snapshot, "
        f"worst statement latency {writer.worst_s * 1000:.1f} ms"
    )
    source = source_state(mysql, schema)
    assert len(source) > 100_000
    deadline = time.monotonic() + 120
    length = -1
    while True:  # until it matches, or the topic stops growing (the bridge caught up)
        kafka, now = topic_state(kafka_bootstrap, topic)
        diff = differences(source, kafka)
        if not diff or now == length or time.monotonic() > deadline:
            break
        length = now
        time.sleep(3)
    return SnapshotRun(diff, writer, bridge, topic)
