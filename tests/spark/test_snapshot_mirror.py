"""Snapshots through the Spark jobs: a mirror built from a topic that ``canal-bridge
run`` wrote with ``snapshot.mode: initial`` (rows the tables held before it started, read in
chunks) interleaved with live changes equals the source (``reconcile`` exits 0); the same topic
without its snapshot records leaves a mirror that ``reconcile`` rejects.

A snapshot row is an INSERT of a key the mirror may already hold (a streamed change of it came
first): the mirror upserts it, in binlog-position order. A second test pins that order on
hand-written records: a snapshot row whose ``es`` (the chunk's read time, in ms) is later than
the ``es`` of the streamed change that follows it (a binlog timestamp, in whole seconds) must
still lose to that change: the topic's order decides, not ``es``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
import yaml
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from bridge.mq.records import HEADER_FILE, HEADER_POSITION, HEADER_SERVER_ID, HEADER_SNAPSHOT
from spark_jobs.decode import changes, parse_messages
from spark_jobs.mirror_table import table_path
from spark_jobs.reconcile import read_mirror
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import create_topic, read_records_to_end
from tests.spark.mirroring import mirror_topic, read_topic, reconcile_table
from tests.spark.pipeline import (
    PARTITIONS,
    Workload,
    bridge_config,
    connect,
    mark,
    new_topic,
    run_in_thread,
    running_bridge,
    stop_bridge,
    wait_for,
)

pytestmark = [pytest.mark.services, pytest.mark.timeout(600)]

TABLES = ("everything", "pairs", "marker")


@dataclass(frozen=True)
class SnapshotTopic:
    schema: str
    topic: str
    snapshot_records: int


@pytest.fixture(scope="module")
def snapshot_topic(
    mysql: MysqlEndpoint, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SnapshotTopic]:
    """Rows of every type family written before the bridge starts, then the bridge with a
    throttled snapshot in small chunks while the same workload keeps changing those rows."""
    schema = f"t_spark_snapshot_{uuid.uuid4().hex[:6]}"
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {schema} CHARACTER SET utf8mb4")
    try:
        workload = Workload(mysql, schema, seed=18)
        workload.create_tables()
        workload.run(operations=300, pause_s=0)  # the rows the snapshot must bring
        mark(mysql, schema, 0)
        topic = new_topic(kafka_bootstrap, "spark-snapshot")
        config = bridge_config(
            tmp_path_factory.mktemp("bridge"), mysql, kafka_bootstrap, schema, topic
        )
        settings = yaml.safe_load(config.read_text())
        settings["destinations"][0]["snapshot"] = {
            "mode": "initial",
            "chunk_size": 16,
            "parallelism": 2,
            "max_rows_per_second": 60,  # a few seconds: live changes interleave with chunks
        }
        config.write_text(yaml.safe_dump(settings))
        with running_bridge(config) as bridge:
            writer = run_in_thread(lambda: workload.run(operations=250, pause_s=0.01))
            bridge.wait_for_output("snapshot done", timeout_s=180)
            writer.join(180)
            assert not writer.is_alive() and not writer.failures  # type: ignore[attr-defined]
            wait_for(kafka_bootstrap, topic, mark(mysql, schema, 1), timeout_s=120)
            stop_bridge(bridge)
            assert "Traceback" not in bridge.output(), bridge.output()[-3000:]
        records = read_records_to_end(kafka_bootstrap, topic)
        snapshot_records = sum(1 for r in records if HEADER_SNAPSHOT in r.headers)
        yield SnapshotTopic(schema, topic, snapshot_records)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {schema}")
        conn.close()


def test_a_mirror_built_from_snapshot_and_stream_reconciles(
    spark: SparkSession,
    snapshot_topic: SnapshotTopic,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    tmp_path: Path,
) -> None:
    assert snapshot_topic.snapshot_records > 100, "the snapshot brought too few rows to count"
    mirror = mirror_topic(spark, kafka_bootstrap, snapshot_topic.topic, tmp_path)
    for table in TABLES:
        code, report = reconcile_table(spark, mirror, f"{snapshot_topic.schema}.{table}", mysql)
        assert code == 0, report


def test_without_its_snapshot_records_the_mirror_fails_reconcile(
    spark: SparkSession,
    snapshot_topic: SnapshotTopic,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    tmp_path: Path,
) -> None:
    """The negative case: the stream alone lacks the rows nobody touched since the start."""
    stream_only = f"spark-stream-only-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, stream_only, PARTITIONS)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    copied = 0
    for record in read_records_to_end(kafka_bootstrap, snapshot_topic.topic):
        if HEADER_SNAPSHOT in record.headers:
            continue
        producer.produce(
            stream_only,
            value=orjson.dumps(record.message),
            key=record.key,
            partition=record.partition,
            headers=list(record.headers.items()),
        )
        copied += 1
    assert producer.flush(30) == 0 and copied > 0
    mirror = mirror_topic(spark, kafka_bootstrap, stream_only, tmp_path)
    code, report = reconcile_table(spark, mirror, f"{snapshot_topic.schema}.everything", mysql)
    assert code == 1, report
    assert "missing from the mirror" in report, report


def _flat(key: int, value: str, kind: str, es: int) -> bytes:
    return orjson.dumps(
        {
            "id": 1,
            "database": "shop",
            "table": "stock",
            "pkNames": ["id"],
            "isDdl": False,
            "type": kind,
            "es": es,
            "ts": es,
            "sql": "",
            "sqlType": {"id": 4, "v": 12},
            "mysqlType": {"id": "int", "v": "varchar(20)"},
            "data": [{"id": str(key), "v": value}],
            "old": [{"v": "streamed-before"}] if kind == "UPDATE" else None,
        }
    )


def test_a_snapshot_row_with_a_later_es_loses_to_the_change_after_it(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Key 1: snapshot row at position 1000 (read at second + 900 ms), then an UPDATE at
    position 1100 whose binlog timestamp is that second: ``es`` orders them backwards.
    Key 2 the other way round (the snapshot row after the change, with the earlier ``es``).
    Key 3: a chunk read twice at the same position (the stream idle between the reads, so
    nothing changed between them): the later record wins."""
    topic = f"spark-snap-order-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    second = 1_700_000_000_000

    def headers(position: int, chunk: str | None) -> list[tuple[str, bytes]]:
        out = [
            (HEADER_FILE, b"binlog.000007"),
            (HEADER_POSITION, str(position).encode()),
            (HEADER_SERVER_ID, b"1"),
        ]
        return out + ([(HEADER_SNAPSHOT, chunk.encode())] if chunk else [])

    records = [
        (_flat(1, "snapshot", "INSERT", second + 900), headers(1000, "shop.stock;0")),
        (_flat(2, "streamed", "INSERT", second + 100), headers(1050, None)),
        (_flat(3, "first read", "INSERT", second + 950), headers(1060, "shop.stock;0")),
        (_flat(1, "streamed", "UPDATE", second), headers(1100, None)),
        (_flat(2, "snapshot", "INSERT", second + 50), headers(1200, "shop.stock;1")),
        (_flat(3, "second read", "INSERT", second + 960), headers(1060, "shop.stock;0")),
    ]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for value, record_headers in records:
        producer.produce(topic, value=value, key=b"k", partition=0, headers=record_headers)
    assert producer.flush(30) == 0
    mirror = mirror_topic(spark, kafka_bootstrap, topic, tmp_path)
    _, rows = read_mirror(spark, table_path(str(mirror), "shop", "stock"), "UTC")
    assert {str(r["id"]): r["v"] for r in rows} == {
        "1": "streamed",
        "2": "snapshot",
        "3": "second read",
    }
    # The changelog's rows name the chunk of each snapshot row (null for streamed ones).
    kafka = read_topic(spark, kafka_bootstrap, topic)
    logged = changes(parse_messages(kafka)).orderBy("kafka_offset").collect()
    assert [r.snapshot_chunk for r in logged] == [
        "shop.stock;0",
        None,
        "shop.stock;0",
        None,
        "shop.stock;1",
        "shop.stock;0",
    ]
