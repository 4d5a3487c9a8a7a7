"""A benchmark topic a system writes: how far it is written, then its rows counted, first and
last append.

Every system's speed is measured the same way, from the topic itself: the broker's append time
(the topics are made with ``message.timestamp.type=LogAppendTime``) of the first and of the last
record, and the rows those records carry, counted by the system's record format. The tally
reads every record, so the final count is the read-back check too. While the system writes,
only the topic's end offsets are asked (``appended``): reading and counting the records as they
came took CPU from the system being measured (bench.compare.cli.measure).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import Consumer, TopicPartition

from bench.measure import bootstrap

RowCounter = Callable[[bytes | None], int]


def flat_message_rows(value: bytes | None) -> int:
    """Rows of one canal FlatMessage (canal-bridge and canal): its ``data`` list."""
    if value is None:
        return 0
    message: dict[str, Any] = orjson.loads(value)
    return len(message.get("data") or ())


DEBEZIUM_ROW_OPS = frozenset({"c", "u", "d"})


def debezium_rows(value: bytes | None) -> int:
    """A Debezium change event (JSON, schemas off) is one row; tombstones (no value) and
    snapshot reads are none."""
    if value is None:
        return 0
    event: dict[str, Any] = orjson.loads(value)
    return 1 if event.get("op") in DEBEZIUM_ROW_OPS else 0


@dataclass
class Tally:
    rows: int = 0
    records: int = 0
    first_append_ms: int | None = None
    last_append_ms: int | None = None

    def add(self, append_ms: int, rows: int) -> None:
        self.records += 1
        self.rows += rows
        if rows:
            if self.first_append_ms is None:
                self.first_append_ms = append_ms
            self.last_append_ms = append_ms

    @property
    def span_s(self) -> float:
        if self.first_append_ms is None or self.last_append_ms is None:
            return 0.0
        return (self.last_append_ms - self.first_append_ms) / 1000


class TopicFollower:
    """Reads ``topic`` from its start as records arrive; one partition or many."""

    def __init__(self, topic: str, count: RowCounter) -> None:
        self.topic = topic
        self.count = count
        self.tally = Tally()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap(),
                "group.id": f"bench-compare-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self.consumer.subscribe([topic])
        self._partitions: list[int] = []

    def appended(self) -> int:
        """Records in the topic now, all partitions (their end offsets), asked of the broker
        without reading any."""
        if not self._partitions:
            metadata = self.consumer.list_topics(self.topic, timeout=30)
            self._partitions = sorted(metadata.topics[self.topic].partitions)
        return sum(
            self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=30, cached=False
            )[1]
            for partition in self._partitions
        )

    def poll(self, timeout_s: float) -> None:
        for message in self.consumer.consume(500, timeout_s):
            if message.error() is not None:
                continue  # partition EOF and the like; real failures show as missing rows
            self.tally.add(message.timestamp()[1], self.count(message.value()))

    def drain(self) -> None:
        """Reads on to the end of every partition as it is now (extra records would be
        duplicates: the caller compares the count)."""
        metadata = self.consumer.list_topics(self.topic, timeout=30)
        ends = {}
        for partition in metadata.topics[self.topic].partitions:
            tp = TopicPartition(self.topic, partition)
            ends[partition] = self.consumer.get_watermark_offsets(tp, timeout=30)[1]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            positions = self.consumer.position([TopicPartition(self.topic, p) for p in ends])
            if all(p.offset >= ends[p.partition] or ends[p.partition] == 0 for p in positions):
                return
            self.poll(0.5)
        raise TimeoutError(f"{self.topic}: could not read to the end within 60s")

    def close(self) -> None:
        self.consumer.close()
