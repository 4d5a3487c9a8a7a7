"""The streaming jobs read committed by default: of a topic written in Kafka transactions (as a
bridge in exactly-once delivery writes it), records of an aborted transaction never reach the
changelog; ``--kafka-option kafka.isolation.level=read_uncommitted`` overrides the default and
shows that they are in the topic."""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from bridge.config import DEFAULT_MAX_RECORD_BYTES
from bridge.entry import EventType, RowData
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.records import Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from spark_jobs.changelog import ChangelogJob, parse_args
from spark_jobs.stream import stream_options
from tests.e2e.bridge_process import create_topic
from tests.unit.mq.conftest import EntryMaker

pytestmark = pytest.mark.services

QUERY_TIMEOUT_S = 240


def write_transactions(bootstrap: str, topic: str) -> None:
    """Orders 1-3 committed, 4 and 40 aborted (after they reached the broker), 5-6 committed
    after the aborted transaction, all as the bridge's FlatMessages."""
    placement = Placement(
        CanalTopicRouter(topic, ""),
        CanalPartitionRouter(r"shop\.orders:id"),
        TopicPartitions(2, ""),
        DEFAULT_MAX_RECORD_BYTES,
    )
    make, records = EntryMaker(), RecordBuilder(FlatMessageEncoder(placement))
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{topic}"})
    producer.init_transactions(30)
    for ids, commit in ((("1", "2", "3"), True), (("4", "40"), False), (("5", "6"), True)):
        rows = [RowData(after=make.order(i)) for i in ids]
        batch = [make.begin(), make.rows(EventType.INSERT, rows), make.end()]
        producer.begin_transaction()
        for record in records.build(batch, 1, 1_700_000_000_000):
            producer.produce(
                record.topic,
                value=record.value,
                key=record.key,
                partition=record.partition,
                headers=list(record.headers),
            )
        assert producer.flush(30) == 0, "records not written before the transaction ended"
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def changelog_ids(spark: SparkSession, args: argparse.Namespace) -> list[str]:
    query = ChangelogJob(stream_options(args), args.output).start(spark)
    assert query.awaitTermination(QUERY_TIMEOUT_S), "query still running"
    assert query.exception() is None
    log = spark.read.parquet(args.output)
    return sorted(row.after["id"] for row in log.select("after").collect())


def test_changelog_reads_only_committed_transactions_unless_told_otherwise(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = f"spark-txn-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 2)
    write_transactions(kafka_bootstrap, topic)

    def args(run: str, *extra: str) -> argparse.Namespace:
        return parse_args(
            [
                "--bootstrap-servers",
                kafka_bootstrap,
                "--topics",
                topic,
                "--available-now",
                "--output",
                str(tmp_path / run / "out"),
                "--checkpoint",
                str(tmp_path / run / "cp"),
                *extra,
            ]
        )

    assert changelog_ids(spark, args("default")) == ["1", "2", "3", "5", "6"]
    uncommitted = args("uncommitted", "--kafka-option", "kafka.isolation.level=read_uncommitted")
    assert changelog_ids(spark, uncommitted) == ["1", "2", "3", "4", "40", "5", "6"]
