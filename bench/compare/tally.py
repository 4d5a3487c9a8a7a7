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

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

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
    """Reads ``topic`` (one partition or many) from its start when asked: ``appended`` tells how
    far the writer has come without reading a record, ``drain`` reads and counts what is
    there. Partitions are assigned, not subscribed: no group to join, and no rebalance that
    would read the topic again after a long wait between two drains."""

    def __init__(self, topic: str, count: RowCounter) -> None:
        self.topic = topic
        self.count = count
        self.tally = Tally()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap(),
                "group.id": f"bench-compare-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
            }
        )
        self._partitions = self._partitions_of(topic)
        self.consumer.assign(
            [TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in self._partitions]
        )
        self._appended = 0

    def _partitions_of(self, topic: str) -> list[int]:
        """The partitions of ``topic``, made by the caller just before (its metadata may take
        a moment to reach the broker)."""
        deadline = time.monotonic() + 30
        while True:
            found = self.consumer.list_topics(topic, timeout=30).topics.get(topic)
            if found is not None and found.partitions:
                return sorted(found.partitions)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: no partitions within 30 s of its creation")
            time.sleep(0.1)

    def appended(self) -> int:
        """Records in the topic now (the sum of its partitions' end offsets), asked of the
        broker without reading any; the last answer again when the broker does not answer
        within two seconds (a watch must neither stall nor end the round)."""
        with contextlib.suppress(KafkaException):
            self._appended = sum(self._ends(timeout_s=2).values())
        return self._appended

    def _ends(self, timeout_s: float) -> dict[int, int]:
        """Each partition's end offset, asked of the broker (``appended``, ``drain``)."""
        return {
            partition: self.consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=timeout_s, cached=False
            )[1]
            for partition in self._partitions
        }

    def poll(self, timeout_s: float) -> None:
        for message in self.consumer.consume(500, timeout_s):
            if message.error() is not None:
                continue  # partition EOF and the like; real failures show as missing rows
            self.tally.add(message.timestamp()[1], self.count(message.value()))

    def drain(self) -> None:
        """Reads on to the end of every partition as it is now (extra records would be
        duplicates: the caller compares the count)."""
        ends = self._ends(timeout_s=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            positions = self.consumer.position([TopicPartition(self.topic, p) for p in ends])
            if all(p.offset >= ends[p.partition] or ends[p.partition] == 0 for p in positions):
                return
            self.poll(0.5)
        raise TimeoutError(f"{self.topic}: could not read to the end within 60s")

    def close(self) -> None:
        self.consumer.close()
