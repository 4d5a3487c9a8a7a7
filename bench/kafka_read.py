"""Reading a benchmark topic back after a run: row counts, and append times per row id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import orjson
from confluent_kafka import Consumer, TopicPartition

from bench.measure import bootstrap


def records(topic: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(broker timestamp ms, FlatMessage) of every record now in ``topic``, then stops."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap(),
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        ends: dict[int, int] = {}
        for partition in metadata.topics[topic].partitions:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            if high > 0:
                ends[partition] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        while ends:
            batch = consumer.consume(1000, 5.0)
            for message in batch:
                if message.error() is None:
                    yield message.timestamp()[1], orjson.loads(message.value())
            # By position, not by the last record's offset: in exactly-once delivery the
            # transaction markers take offsets too (the last one is a marker).
            for position in consumer.position([TopicPartition(topic, p) for p in ends]):
                if position.offset >= ends[position.partition]:
                    ends.pop(position.partition)
            if not batch and ends:
                raise TimeoutError(f"{topic}: no records within 5s, {ends} left")
    finally:
        consumer.close()


def count_rows(topic: str) -> int:
    return sum(len(message["data"] or ()) for _, message in records(topic))


def arrival_times(topic: str) -> dict[int, tuple[int, int]]:
    """Row id -> (the broker's append time, the FlatMessage's ``ts``: when the bridge built
    it), in ms, of the record carrying it. The two split a row's latency into the bridge's
    part up to building the record (reading the binlog included) and Kafka's."""
    times: dict[int, tuple[int, int]] = {}
    for timestamp, message in records(topic):
        for row in message["data"] or ():
            times[int(row["id"])] = (timestamp, int(message["ts"]))
    return times
