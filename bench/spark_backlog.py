"""A backlog of one table's changes, produced straight into Kafka as canal FlatMessages.

The Spark jobs' catch-up measurements and tests need big topics quickly; going through MySQL
and the bridge would measure those too. ``produce_backlog`` writes what the bridge writes for
a table keyed by ``id`` hashed over the topic's partitions: one FlatMessage per row change,
with the binlog headers (file, position, server id) the jobs order changes by.

The mix is the bridge user's: per 16 changes 10 INSERTs of new keys, 5 UPDATEs of live keys
and 1 DELETE (600k / 300k / 60k out of 960k). ``snapshot=True`` makes every change an INSERT
carrying the snapshot header instead (an initial snapshot). The changes are a pure function
of their index, so ``final_rows`` gives the table they leave without keeping the history:
the source a reconcile compares the mirror with.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bridge.mq.records import HEADER_FILE, HEADER_POSITION, HEADER_SERVER_ID, HEADER_SNAPSHOT

DATABASE = "bench_spark"
TABLE = "items"
PARTITIONS = 3
BINLOG_FILE = "mysql-bin.000001"
FIRST_ES_MS = 1_700_000_000_000
CREATE_TABLE = (
    "CREATE TABLE {database}.{table} (id INT PRIMARY KEY, name VARCHAR(40), qty INT, "
    "price DECIMAL(10,2), note VARCHAR(255), updated DATETIME(3))"
)
MYSQL_TYPES = {
    "id": "int",
    "name": "varchar(40)",
    "qty": "int",
    "price": "decimal(10,2)",
    "note": "varchar(255)",
    "updated": "datetime(3)",
}
SQL_TYPES = {"id": 4, "name": 12, "qty": 4, "price": 3, "note": 12, "updated": 93}
# Every 5th key (1, 6, 11, ...) is deleted, in key order, by the DELETEs of the mix (keys are
# inserted twice as fast as that, so the next one to delete always exists).
DELETED_EVERY = 5


@dataclass(frozen=True, slots=True)
class Change:
    index: int
    kind: str  # INSERT | UPDATE | DELETE
    key: int
    version: int  # the key's version after the change (0 = as inserted)
    previous: int  # index of the key's previous change (-1 for an INSERT)


def changes(count: int, snapshot: bool = False) -> Iterator[Change]:
    """The first ``count`` changes, in binlog order."""
    inserted = 0
    deleted = 0  # keys 1, 6, ... up to the deleted-th one are gone
    versions = array("I")
    last = array("q")  # per key: index of its last change
    for index in range(count):
        slot = index % 16
        if snapshot or slot < 10:
            inserted += 1
            versions.append(0)
            last.append(index)
            yield Change(index, "INSERT", inserted, 0, -1)
            continue
        if slot < 15:
            key = _live_key(_spread(index) % inserted + 1, deleted)
            versions[key - 1] += 1
            kind = "UPDATE"
        else:
            key = deleted * DELETED_EVERY + 1
            deleted += 1
            kind = "DELETE"
        yield Change(index, kind, key, versions[key - 1], last[key - 1])
        last[key - 1] = index


def _spread(index: int) -> int:
    return zlib.crc32(index.to_bytes(8, "little"))


def _live_key(key: int, deleted: int) -> int:
    """``key``, or the key after it when ``key`` has been deleted."""
    if key % DELETED_EVERY == 1 and (key - 1) // DELETED_EVERY < deleted:
        return key + 1
    return key


def values(key: int, version: int, es_ms: int) -> dict[str, str]:
    """The row of ``key`` at ``version`` as canal's text."""
    price = Decimal((key * 13 + version) % 10_000_000) / 100
    updated = _datetime_text(es_ms)
    return {
        "id": str(key),
        "name": f"item {key}",
        "qty": str((key * 7 + version) % 1000),
        "price": f"{price:.2f}",
        "note": f"version {version} of item {key} " + "x" * (key % 150),
        "updated": updated,
    }


def _datetime_text(es_ms: int) -> str:
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(es_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{es_ms % 1000:03d}"


def es_of(index: int) -> int:
    return FIRST_ES_MS + index


def flat_message(change: Change, padding: int = 0) -> dict[str, Any]:
    """The change's FlatMessage; ``padding`` characters appended to the row's ``note`` make
    records as large as a test of memory needs (the table they leave is then not
    ``final_rows``'s)."""
    es = es_of(change.index)
    row = values(change.key, change.version, es)
    row["note"] += "y" * padding
    old = None
    if change.kind == "UPDATE":
        before = values(change.key, change.version - 1, es_of(change.previous))
        old = [{k: v for k, v in before.items() if v != row[k]}]
    if change.kind == "DELETE":
        row = values(change.key, change.version, es_of(change.previous))
    return {
        "id": change.index + 1,
        "database": DATABASE,
        "table": TABLE,
        "pkNames": ["id"],
        "isDdl": False,
        "type": change.kind,
        "es": es,
        "ts": es,
        "sql": "",
        "sqlType": SQL_TYPES,
        "mysqlType": MYSQL_TYPES,
        "data": [row],
        "old": old,
    }


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce_backlog(
    bootstrap: str,
    topic: str,
    count: int,
    snapshot: bool = False,
    partitions: int = PARTITIONS,
    *,
    padding: int = 0,
) -> int:
    """Write the first ``count`` changes to ``topic`` (made by the caller), each padded by
    ``padding`` characters (``flat_message``); returns the bytes of the values written.
    Raises when Kafka did not take every record."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    failures: list[str] = []
    written = 0

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None and len(failures) < 5:
            failures.append(str(err))

    for change in changes(count, snapshot):
        value = orjson.dumps(flat_message(change, padding))
        headers = [
            (HEADER_FILE, BINLOG_FILE.encode()),
            (HEADER_POSITION, str(4 + change.index * 100).encode()),
            (HEADER_SERVER_ID, b"1"),
        ]
        if snapshot:
            headers.append((HEADER_SNAPSHOT, f"{DATABASE}.{TABLE};{change.index // 1000}".encode()))
        while True:
            try:
                producer.produce(
                    topic,
                    value=value,
                    key=str(change.key).encode(),
                    partition=change.key % partitions,
                    headers=headers,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.5)
        written += len(value)
        if change.index % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left or failures:
        raise RuntimeError(f"{topic}: {left} records not delivered; errors: {failures}")
    return written


def final_rows(count: int, snapshot: bool = False) -> Iterator[tuple[Any, ...]]:
    """The rows the first ``count`` changes leave, in key order, as SQL parameters."""
    versions = array("I")
    last = array("q")
    gone = bytearray()
    for change in changes(count, snapshot):
        if change.kind == "INSERT":
            versions.append(0)
            last.append(change.index)
            gone.append(0)
            continue
        versions[change.key - 1] = change.version
        last[change.key - 1] = change.index
        if change.kind == "DELETE":
            gone[change.key - 1] = 1
    for key in range(1, len(versions) + 1):
        if gone[key - 1]:
            continue
        row = values(key, versions[key - 1], es_of(last[key - 1]))
        yield (key, row["name"], int(row["qty"]), row["price"], row["note"], row["updated"])
