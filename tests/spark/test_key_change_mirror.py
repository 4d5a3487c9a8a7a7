"""The mirror job under both ``mq.key_change`` modes: a key-changing UPDATE (``update``) and
its DELETE + INSERT halves (``split``) leave the same table, the old key gone.

Records are the bridge's own (``record_builder``) written straight to a 3-partition topic,
hashed by key and region: in ``split`` mode a row whose region changes (its key kept) has its
DELETE and INSERT, at the same binlog position, on two partitions, the DELETE on the higher
one, which Kafka coordinates alone would order last."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Literal

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from bridge.config import MqConfig
from bridge.entry import Column, Entry, EventType, RowData
from bridge.mq.formats import placement_of, record_builder
from spark_jobs.mirror import MirrorJob, parse_args
from spark_jobs.mirror_table import table_path
from spark_jobs.reconcile import read_mirror
from spark_jobs.stream import stream_options
from tests.e2e.bridge_process import create_topic
from tests.unit.mq.conftest import EntryMaker

pytestmark = pytest.mark.services

PARTITIONS = 3
# Hashed by key and region: a key change and a region change both move a row.
HASH = r"shop\.orders:id^region"
QUERY_TIMEOUT_S = 240


def moved(make: EntryMaker, old: tuple[str, str], new: tuple[str, str]) -> RowData:
    """An ``orders`` row going from ``(id, region)`` to ``(id, region)``."""
    before = make.order(old[0], region=old[1])
    after = make.order(new[0], region=new[1])
    return RowData(
        before=before,
        after=tuple(
            Column(
                a.index,
                a.sql_type,
                a.name,
                a.is_key,
                a.value != b.value,
                a.is_null,
                a.value,
                a.mysql_type,
            )
            for a, b in zip(after, before, strict=True)
        ),
    )


def regions_falling(config: MqConfig) -> tuple[str, str]:
    """Two regions for which row 10 hashes to a high then a low partition: moving from the
    first to the second puts its DELETE half on the higher partition."""
    router = placement_of(config).partitions
    by_partition = {
        router.partition_for("shop", "orders", {"id": "10", "region": r}, ("id",), PARTITIONS): r
        for r in ("eu", "us", "ap", "af", "sa", "oc", "na", "an")
    }
    assert len(by_partition) > 1
    return by_partition[max(by_partition)], by_partition[min(by_partition)]


def history(make: EntryMaker, config: MqConfig) -> list[Entry]:
    """Row 1 changes its key twice, row 10 its region (the hashed column) only, row 20 is
    deleted; the source ends with rows 3 (eu) and 10 (low)."""
    high, low = regions_falling(config)
    return [
        make.begin(),
        make.rows(EventType.INSERT, [RowData(after=make.order("1", region="eu"))]),
        make.rows(EventType.INSERT, [RowData(after=make.order("10", region=high))]),
        make.rows(EventType.INSERT, [RowData(after=make.order("20", region="eu"))]),
        make.end(),
        make.begin(),
        make.rows(EventType.UPDATE, [moved(make, ("1", "eu"), ("2", "eu"))]),
        make.rows(EventType.UPDATE, [moved(make, ("10", high), ("10", low))]),
        make.rows(EventType.UPDATE, [moved(make, ("2", "eu"), ("3", "eu"))]),
        make.rows(EventType.DELETE, [RowData(before=make.order("20", region="eu"))]),
        make.end(),
    ]


def mirrored(
    spark: SparkSession, bootstrap: str, tmp_path: Path, mode: Literal["split", "update"]
) -> dict[str, str]:
    """The mirror's ``{id: region}`` after the history went to Kafka in ``mode``."""
    topic = f"spark-keys-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    config = MqConfig(
        topic=topic,
        partitions=PARTITIONS,
        partition_hash=HASH,
        key_change=mode,
    )
    records = record_builder(config, compiled=None).build(
        history(EntryMaker(), config), 1, 1_700_000_000_000
    )
    types = [r.value.split(b'"type":"')[1][:6] for r in records]
    assert types.count(b"UPDATE") == (3 if mode == "update" else 0)
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        producer.produce(
            record.topic,
            value=record.value,
            key=record.key,
            partition=record.partition,
            headers=list(record.headers),
        )
    assert producer.flush(30) == 0
    args = parse_args(
        [
            "--bootstrap-servers",
            bootstrap,
            "--topics",
            topic,
            "--available-now",
            "--mirror",
            str(tmp_path / mode / "mirror"),
            "--checkpoint",
            str(tmp_path / mode / "cp"),
        ]
    )
    query = MirrorJob(stream_options(args), args.mirror).start(spark)
    assert query.awaitTermination(QUERY_TIMEOUT_S), "query still running"
    assert query.exception() is None
    _, rows = read_mirror(spark, table_path(args.mirror, "shop", "orders"), "UTC")
    return {str(row["id"]): row["region"] for row in rows}


@pytest.mark.parametrize("mode", ["split", "update"])
def test_the_mirror_drops_the_old_key_in_both_modes(
    spark: SparkSession,
    kafka_bootstrap: str,
    tmp_path: Path,
    mode: Literal["split", "update"],
) -> None:
    _, low = regions_falling(MqConfig(topic="t", partitions=PARTITIONS, partition_hash=HASH))
    assert mirrored(spark, kafka_bootstrap, tmp_path, mode) == {"3": "eu", "10": low}
