"""``broker: memory`` (bridge.mq.memory): the sender factory shipped for users' tests keeps
every record a worker sends, confirms it at once, and lets a test read it."""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest

from bridge.config import BridgeConfig, DestinationConfig, parse_config
from bridge.entry import Entry
from bridge.instance.api import Message
from bridge.meta import ClientIdentity
from bridge.mq.exceptions import DeliveryCancelled, DeliveryFailed
from bridge.mq.formats import rows_encoder
from bridge.mq.memory import MemorySenders
from bridge.mq.records import OutgoingRecord
from bridge.mq.senders import sender_factory
from bridge.mq.worker import build_worker
from tests.unit.mq.conftest import EntryMaker


def config(**top: Any) -> BridgeConfig:
    return parse_config(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:1"},
            "destinations": [
                {
                    "name": "example",
                    "source": {"address": "127.0.0.1:3306", "username": "u", "slave_id": 9},
                    "mq": {"topic": "t"},
                }
            ],
            **top,
        },
        environ={},
    )


def record(topic: str = "t") -> OutgoingRecord:
    return OutgoingRecord(topic, 0, b"k", b"v", ())


def test_broker_memory_picks_the_memory_senders() -> None:
    senders = sender_factory(config(broker="memory"))
    assert isinstance(senders, MemorySenders)
    assert senders.max_record_bytes == 1_000_000  # the kafka section's message.max.bytes


def test_records_are_kept_in_order_and_confirmed_at_once() -> None:
    senders = MemorySenders(1000)
    destination = config().destinations[0]
    sender = senders.sender(destination)
    sender.start([record("a"), record("b")])()
    sender.start([record("c")])()
    assert [r.topic for r in senders.records("example")] == ["a", "b", "c"]
    assert senders.records("other") == []
    # A restarted destination's new sender appends to the same list.
    senders.sender(destination).start([record("d")])()
    assert [r.topic for r in senders.wait_for("example", 4)] == ["a", "b", "c", "d"]
    senders.clear()
    assert senders.records("example") == []


def test_a_closed_sender_and_a_cancelled_send_keep_nothing() -> None:
    senders = MemorySenders(1000)
    sender = senders.sender(config().destinations[0])
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DeliveryCancelled):
        sender.start([record()], cancel=cancel)
    sender.close()
    with pytest.raises(DeliveryFailed):
        sender.start([record()])
    assert senders.records("example") == []


def test_wait_for_says_how_many_came() -> None:
    with pytest.raises(TimeoutError, match="example: 0 of 1 records sent"):
        MemorySenders(1000).wait_for("example", 1, timeout_s=0.01)


class OneBatchService:
    """A CanalService handing out one batch, then nothing."""

    def __init__(self, entries: list[Entry]) -> None:
        self.batches = [Message(1, tuple(entries))]
        self.acked: list[int] = []

    def subscribe(self, client: ClientIdentity) -> None:
        pass

    def get_without_ack(
        self, client: ClientIdentity, batch_size: int, timeout_s: float | None = None, **_: Any
    ) -> Message:
        return self.batches.pop() if self.batches else Message(-1, ())

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        self.acked.append(batch_id)

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        pass

    def wake(self, client: ClientIdentity) -> None:
        pass


def test_a_worker_sends_through_the_memory_broker(make: EntryMaker) -> None:
    bridge = config(broker="memory")
    destination: DestinationConfig = bridge.destinations[0]
    senders = sender_factory(bridge)
    assert isinstance(senders, MemorySenders)
    service = OneBatchService([make.begin(), make.insert("1", "2"), make.end()])
    worker = build_worker(
        destination,
        service,  # type: ignore[arg-type]
        senders.sender(destination),
        encoder=rows_encoder(destination.mq),
    )
    worker.start()
    try:
        (sent,) = senders.wait_for("example", 1)
    finally:
        worker.stop()
        assert worker.join(5)
    # One FlatMessage of both rows: no partition_hash, so keyed by the table alone.
    assert (sent.topic, sent.partition, sent.key) == ("t", 0, b"shop.orders")
    assert [row["id"] for row in orjson.loads(sent.value)["data"]] == ["1", "2"]
    assert worker.error is None
    assert service.acked == [1]
