"""The mixed workload the end-to-end and fail-over tests write, and the check of what reached
the topic: every change once or more, each key on canal's partition, in order."""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from bridge.mq.routing import java_string_hash
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import create_topic, write_config

TABLES = ("alpha", "beta", "gamma")
PARTITIONS = 3


def keyed_run(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    schema: str,
    prefix: str,
    **mq: Any,
) -> tuple[str, Path]:
    """A new topic of ``PARTITIONS`` partitions and a config streaming ``schema`` to it with
    canal's primary-key hash (``mq`` adds settings); returns (topic, config path)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, PARTITIONS)
    config = write_config(
        tmp_path / "destinations.yaml",
        mysql,
        kafka_bootstrap,
        schema,
        topic,
        partitions=PARTITIONS,
        partition_hash=r".*\..*:$pk$",
        **mq,
    )
    return topic, config


def create_tables(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute(
                f"CREATE TABLE `{schema}`.{table} (id INT PRIMARY KEY, version INT NOT NULL, "
                "note VARCHAR(40), amount DECIMAL(10,2), seen DATETIME(3))"
            )
    conn.close()


def workload(
    mysql: MysqlEndpoint, schema: str, keys: int, rounds: int, pause_s: float = 0.0
) -> dict[tuple[str, str], int]:
    """Insert ``keys`` rows per table, update each ``rounds`` times, delete every 5th key.

    Returns the last version of each surviving (table, id); deleted keys map to -1.
    """
    conn = connect_admin(mysql)
    final: dict[tuple[str, str], int] = {}
    with conn.cursor() as cur:
        for table in TABLES:
            for key in range(keys):
                cur.execute(
                    f"INSERT INTO `{schema}`.{table} VALUES (%s, 0, %s, %s, NOW(3))",
                    (key, f"ünïcode-{key}-😀", f"{key}.25"),
                )
                final[(table, str(key))] = 0
        for version in range(1, rounds + 1):
            for key in range(keys):
                cur.execute("BEGIN")
                for table in TABLES:
                    cur.execute(
                        f"UPDATE `{schema}`.{table} SET version = %s, amount = amount + 1 "
                        "WHERE id = %s",
                        (version, key),
                    )
                    final[(table, str(key))] = version
                cur.execute("COMMIT")
                time.sleep(pause_s)
        for table in TABLES:
            for key in range(0, keys, 5):
                cur.execute(f"DELETE FROM `{schema}`.{table} WHERE id = %s", (key,))
                final[(table, str(key))] = -1
    conn.close()
    return final


def _row_changes(
    records: list[tuple[int, int, bytes | None, dict[str, Any]]],
) -> list[tuple[str, str, str, int]]:
    changes = []
    for _, _, _, message in sorted(records, key=lambda r: (r[0], r[1])):
        if message.get("isDdl"):
            continue
        for row in message["data"]:
            changes.append((message["table"], row["id"], message["type"], int(row["version"])))
    return changes


def assert_complete_and_ordered(
    records: list[tuple[int, int, bytes | None, dict[str, Any]]],
    keys: int,
    rounds: int,
    schema: str,
) -> int:
    """Every change arrived, each key on canal's partition, in order; returns the duplicates."""
    expected = set()
    for table in TABLES:
        for key in range(keys):
            expected.add((table, str(key), "INSERT", 0))
            expected |= {(table, str(key), "UPDATE", v) for v in range(1, rounds + 1)}
            if key % 5 == 0:
                expected.add((table, str(key), "DELETE", rounds))
    changes = _row_changes(records)
    assert set(changes) == expected, (
        f"missing {sorted(expected - set(changes))[:5]}, "
        f"unexpected {sorted(set(changes) - expected)[:5]}"
    )
    per_key: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for partition, _, key, message in sorted(records, key=lambda r: (r[0], r[1])):
        if message.get("isDdl"):
            continue
        for row in message["data"]:
            # canal's $pk$ rule: hash(db) ^ hash(pk value), abs() % partitions
            h = java_string_hash(schema) ^ java_string_hash(row["id"])
            assert partition == abs(h) % PARTITIONS
            assert key == f"{schema}.{message['table']}:{row['id']}".encode()
            per_key[(message["table"], row["id"])].append((message["type"], int(row["version"])))
    rank = {"INSERT": 0, "UPDATE": 1, "DELETE": 2}
    for key_id, events in per_key.items():
        first_seen: list[tuple[int, int]] = []
        for kind, version in events:
            item = (version, rank[kind])
            if item not in first_seen:
                first_seen.append(item)
        assert first_seen == sorted(first_seen), f"{key_id} out of order: {events}"
    return len(changes) - len(set(changes))
