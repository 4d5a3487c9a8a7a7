"""MqWorker's loop (canal's CanalMQStarter.worker) against a scripted service and producer
(``tests.doubles``)."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Sequence

import orjson
import pytest

from bridge.backoff import Backoff
from bridge.config import DEFAULT_MAX_RECORD_BYTES
from bridge.entry import Entry, EventType, RowData
from bridge.instance.api import Message
from bridge.meta import ClientIdentity
from bridge.mq.exceptions import (
    BrokerRejectedTooLarge,
    DeliveryCancelled,
    DeliveryFailed,
    RecordTooLarge,
)
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.records import OutgoingRecord, Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from bridge.mq.worker import MqWorker, WorkerSettings
from tests.doubles import FakeClock, FakeSender, ScriptedService
from tests.unit.mq.conftest import EntryMaker

CLIENT = ClientIdentity("example")


class MaxRng(random.Random):
    """Jitter that always picks the top of the range, so back-off delays are exact."""

    def uniform(self, a: float, b: float) -> float:
        return b


def builder(max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> RecordBuilder:
    placement = Placement(
        CanalTopicRouter("example", ""),
        CanalPartitionRouter(r"shop\.orders:id"),
        TopicPartitions(3, ""),
        max_record_bytes,
    )
    return RecordBuilder(FlatMessageEncoder(placement))


def transaction(make: EntryMaker, *ids: str) -> list[Entry]:
    return [make.begin(), make.insert(*ids), make.end()]


class Harness:
    """A worker wired to a scripted service and producer, with waits recorded, not slept."""

    def __init__(
        self,
        batches: Sequence[Sequence[Entry]] = (),
        outcomes: Sequence[BaseException | None] = (),
        records: RecordBuilder | None = None,
        settings: WorkerSettings | None = None,
        stop_when_drained: bool = True,
    ) -> None:
        self.clock = FakeClock()
        self.waits: list[float] = []
        self.service = ScriptedService(batches)
        self.sender = FakeSender(outcomes)
        self.worker = MqWorker(
            CLIENT,
            self.service,
            records or builder(),
            self.sender,
            settings or WorkerSettings(idle_interval_s=0, progress_log_interval_s=1e9),
            clock=self.clock,
            wall_clock=lambda: 1_700_000_005.0,
            wait=self.waits.append,
            rng=MaxRng(),
        )
        if stop_when_drained:
            self.service.on_drained = self.worker.stop


def test_batch_acked_after_its_records_are_confirmed(make: EntryMaker) -> None:
    first, second = transaction(make, "1", "2", "3"), transaction(make, "4")
    h = Harness([first, second])
    h.worker.run()
    # The next batch is got and built while Kafka confirms the one before; acks keep batch
    # order, and a batch is sent only after the one before it is acked.
    assert h.service.calls == [
        ("subscribe", 1001),
        ("get", 1),
        ("get", 2),
        ("ack", 1),
        ("get", -1),
        ("ack", 2),
        ("get", -1),
    ]
    # One FlatMessage per rows event, split by partition (3 ids over 3 partitions).
    assert [(r.topic, r.key) for r in h.sender.sent[1]] == [("example", b"shop.orders:4")]
    rows = [
        (r.partition, row["id"]) for r in h.sender.sent[0] for row in orjson.loads(r.value)["data"]
    ]
    assert sorted(row for _, row in rows) == ["1", "2", "3"]
    assert len({partition for partition, _ in rows}) == len(h.sender.sent[0]) > 1
    assert {orjson.loads(r.value)["id"] for r in h.sender.sent[0]} == {1}
    assert h.sender.closed
    assert h.waits == []
    # Only a get with nothing in flight may wait idle: with a batch in flight it returns
    # soon, so the batch is settled.
    idle = WorkerSettings().idle_wait_s
    assert h.service.idle_waits == [idle, None, None, idle]
    assert h.service.wakes == 1  # stop() woke the get, so that an idle one ends at once


def test_progress_counts_rows_messages_batches_and_the_cursor(make: EntryMaker) -> None:
    first, second = transaction(make, "1", "2", "3"), transaction(make, "4")
    h = Harness([first, second])
    assert h.worker.progress().state == "new"
    h.worker.run()
    progress = h.worker.progress()
    assert progress.state == "stopped"
    assert (progress.rows_sent, progress.batches_acked) == (4, 2)
    assert progress.messages_sent == len(h.sender.sent[0]) + len(h.sender.sent[1])
    assert progress.last_position is not None
    assert progress.last_position.position == second[-1].header.logfile_offset
    assert progress.cursor == f"mysql-bin.000003:{second[-1].header.logfile_offset}"
    assert progress.last_event_time_ms == 1_700_000_000_000
    assert progress.lag_s(1_700_000_005_000) == 5.0
    assert progress.caught_up
    assert (progress.failures, progress.last_error) == (0, None)


def test_failed_delivery_rolls_back_backs_off_and_sends_the_same_data(
    make: EntryMaker,
) -> None:
    batch = transaction(make, "1", "2")
    failure = DeliveryFailed("_MSG_TIMED_OUT", "example", "Local: Message timed out")
    h = Harness([batch], outcomes=[failure, failure, None])
    h.worker.run()
    assert h.service.calls == [
        ("subscribe", 1001),
        ("get", 1),
        ("get", -1),
        ("rollback", 1),
        ("get", 2),
        ("get", -1),
        ("rollback", 2),
        ("get", 3),
        ("get", -1),
        ("ack", 3),
        ("get", -1),
    ]
    assert h.waits == [0.2, 0.4]
    # At-least-once: every attempt carries the same records; only the batch id differs.
    attempts = [
        [(r.topic, r.partition, r.key, r.headers, _without_id(r.value)) for r in sent]
        for sent in h.sender.sent
    ]
    assert attempts[0] == attempts[1] == attempts[2]
    assert [orjson.loads(sent[0].value)["id"] for sent in h.sender.sent] == [1, 2, 3]
    progress = h.worker.progress()
    assert (progress.failures, progress.consecutive_failures, progress.batches_acked) == (2, 0, 1)
    assert "_MSG_TIMED_OUT" in (progress.last_error or "")


def test_a_failed_batch_rolls_back_the_one_built_meanwhile_and_order_holds(
    make: EntryMaker,
) -> None:
    first, second = transaction(make, "1"), transaction(make, "2")
    failure = DeliveryFailed("_TRANSPORT", "example", "broker down")
    h = Harness([first, second], outcomes=[failure, None, None])
    acked_at_send: list[int] = []
    h.sender.on_send = lambda records: acked_at_send.append(h.service.acked)
    h.worker.run()
    assert h.service.calls == [
        ("subscribe", 1001),
        ("get", 1),
        ("get", 2),  # built while batch 1 was being sent
        ("rollback", 1),  # batch 1 failed: batch 2 is dropped with it, never sent
        ("get", 3),
        ("get", 4),
        ("ack", 3),
        ("get", -1),
        ("ack", 4),
        ("get", -1),
    ]
    sent_keys = [[r.key for r in sent] for sent in h.sender.sent]
    assert sent_keys == [[b"shop.orders:1"], [b"shop.orders:1"], [b"shop.orders:2"]]
    assert acked_at_send == [0, 0, 1]  # each batch goes out once the one before is acked


def _without_id(value: bytes) -> dict[str, object]:
    message = orjson.loads(value)
    del message["id"]
    return message  # type: ignore[no-any-return]


def test_backoff_grows_is_capped_and_resets_after_a_success(make: EntryMaker) -> None:
    failure: BaseException = DeliveryFailed("_TRANSPORT", "example", "broker down")
    outcomes: list[BaseException | None] = [*([failure] * 10), None, failure, None]
    h = Harness(
        [transaction(make, "1"), transaction(make, "2")],
        outcomes=outcomes,
        settings=WorkerSettings(
            idle_interval_s=0, backoff_initial_s=0.2, backoff_max_s=30, progress_log_interval_s=1e9
        ),
    )
    h.worker.run()
    assert h.waits == [0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 0.2]
    assert h.service.count("ack") == 2
    assert h.service.count("rollback") == 11


def test_backoff_jitter_stays_within_half_to_full_ceiling() -> None:
    backoff = Backoff(0.2, 30, random.Random(7))
    delays = [backoff.next() for _ in range(20)]
    ceilings = [min(30, 0.2 * 2**n) for n in range(20)]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    assert max(delays) <= 30
    backoff.reset()
    assert 0.1 <= backoff.next() <= 0.2


def test_oversize_with_policy_fail_stops_the_destination(make: EntryMaker) -> None:
    big = make.rows(
        EventType.INSERT, [RowData(after=make.order(str(i), note="x" * 300)) for i in range(20)]
    )
    h = Harness([[make.begin(), big, make.end()]], records=builder(max_record_bytes=2000))
    with pytest.raises(RecordTooLarge, match="over the limit of"):
        h.worker.run()
    assert h.service.calls == [("subscribe", 1001), ("get", 1), ("rollback", 1)]
    assert h.sender.sent == []
    assert h.sender.closed
    progress = h.worker.progress()
    assert progress.state == "failed"
    assert "RecordTooLarge" in (progress.last_error or "")


def test_broker_rejecting_a_record_as_too_large_stops_without_retrying(
    make: EntryMaker,
) -> None:
    rejected = BrokerRejectedTooLarge("example", 0, 5000, 1_000_000, "MSG_SIZE_TOO_LARGE")
    h = Harness([transaction(make, "1")], outcomes=[rejected])
    with pytest.raises(BrokerRejectedTooLarge, match=r"max\.message\.bytes"):
        h.worker.run()
    assert h.service.calls == [("subscribe", 1001), ("get", 1), ("get", -1), ("rollback", 1)]
    assert h.waits == []
    assert h.worker.progress().state == "failed"


def test_stop_while_sending_rolls_the_batch_back(make: EntryMaker) -> None:
    h = Harness(
        [transaction(make, "1"), transaction(make, "2")],
        outcomes=[DeliveryCancelled("example", 1)],
        stop_when_drained=False,
    )
    h.sender.on_send = lambda records: h.worker.stop()
    h.worker.run()
    calls = h.service.calls
    # Batch 2 may have been got while batch 1 was sent; rolling back 1 drops it too.
    assert calls[:2] == [("subscribe", 1001), ("get", 1)]
    assert calls[2:] in ([("rollback", 1)], [("get", 2), ("rollback", 1)])
    assert len(h.sender.sent) == 1
    assert h.waits == []  # no back-off on the way out
    assert h.worker.progress().state == "stopped"
    assert h.sender.closed


def test_stop_during_a_get_rolls_the_fetched_batch_back(make: EntryMaker) -> None:
    h = Harness([transaction(make, "1")], stop_when_drained=False)
    h.service.on_get = lambda message: h.worker.stop()
    h.worker.run()
    assert h.service.calls == [("subscribe", 1001), ("get", 1), ("rollback", 1)]
    assert h.sender.sent == []


def test_stop_during_back_off_does_not_send_again(make: EntryMaker) -> None:
    failure = DeliveryFailed("_TRANSPORT", "example", "broker down")
    h = Harness([transaction(make, "1")], outcomes=[failure], stop_when_drained=False)
    h.worker._wait = lambda seconds: h.worker.stop()
    h.worker.run()
    assert h.service.calls == [("subscribe", 1001), ("get", 1), ("get", -1), ("rollback", 1)]
    assert len(h.sender.sent) == 1


def test_batch_without_records_is_acked(make: EntryMaker) -> None:
    h = Harness([[make.begin(), make.end()], [make.heartbeat()]])
    h.worker.run()
    assert h.service.count("ack") == 2
    assert h.sender.sent == [[], []]  # nothing to produce
    assert h.worker.progress().rows_sent == 0


def test_idle_gets_are_paced() -> None:
    h = Harness(settings=WorkerSettings(idle_interval_s=0.1), stop_when_drained=False)
    gets = 0

    def count(message: Message) -> None:
        nonlocal gets
        gets += 1
        h.clock.now += 0.03  # the get returned after 30 ms
        if gets == 5:
            h.worker.stop()

    h.service.on_get = count
    h.worker.run()
    assert h.waits == pytest.approx([0.07] * 5)
    assert h.worker.progress().caught_up


def test_progress_line_is_logged_every_interval(
    make: EntryMaker, caplog: pytest.LogCaptureFixture
) -> None:
    batches = [transaction(make, str(i)) for i in range(6)]
    h = Harness(batches, settings=WorkerSettings(idle_interval_s=0, progress_log_interval_s=10))

    def tick(message: Message) -> None:
        h.clock.now += 4

    h.service.on_get = tick
    with caplog.at_level(logging.INFO, logger="bridge.mq.worker"):
        h.worker.run()
    lines = [r.getMessage() for r in caplog.records if "rows/s" in r.getMessage()]
    assert len(lines) == 2  # 8 gets, 32 s
    # At the third get (12 s) one batch is acked: the second is being confirmed.
    assert lines[0].startswith("example: 0.1 rows/s, lag 5.0 s, cursor mysql-bin.000003:")
    assert "caught up" in lines[-1] or "lag" in lines[-1]


def test_thread_lifecycle_and_stop_within_a_bound(make: EntryMaker) -> None:
    service = ScriptedService()
    sender = FakeSender()
    worker = MqWorker(
        CLIENT, service, builder(), sender, WorkerSettings(get_timeout_s=0.2, backoff_initial_s=5)
    )
    worker.start()
    with pytest.raises(RuntimeError, match="already started"):
        worker.start()
    service.push(*transaction(make, "1"))
    assert service.wait_acked(1, timeout_s=5)
    assert worker.running
    # A failing send puts the worker in a 5 s back-off; stop() must cut it short.
    sender.outcomes = [DeliveryFailed("_TRANSPORT", "example", "down")]
    service.push(*transaction(make, "2"))
    deadline = time.monotonic() + 5
    while service.count("rollback") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    worker.stop()
    assert worker.join(2)
    assert time.monotonic() - started < 1
    assert worker.error is None
    assert worker.progress().state == "stopped"
    assert sender.closed


def test_batches_are_handed_over_on_the_workers_own_thread(make: EntryMaker) -> None:
    h = Harness([transaction(make, str(n)) for n in range(1, 5)])
    senders: list[threading.Thread] = []
    h.sender.on_send = lambda records: senders.append(threading.current_thread())
    threads_before = threading.active_count()
    h.worker.run()
    assert h.service.count("ack") == 4
    assert senders == [threading.current_thread()] * 4, "a sending thread"
    assert threading.active_count() == threads_before


def test_thread_keeps_the_error_that_stopped_it(make: EntryMaker) -> None:
    service = ScriptedService([transaction(make, "1")])
    rejected = BrokerRejectedTooLarge("example", 0, 5000, 1_000_000, "MSG_SIZE_TOO_LARGE")
    worker = MqWorker(CLIENT, service, builder(), FakeSender([rejected]))
    worker.start()
    assert worker.join(5)
    assert worker.error is rejected
    assert not worker.running


@pytest.mark.parametrize("get_timeout_s", [2.0, 0.0])  # 0: block for a full batch
def test_a_batch_is_confirmed_at_once_when_nothing_follows_it(
    make: EntryMaker, get_timeout_s: float
) -> None:
    """A quiet source: the get after a batch must not hold back its confirmation (and, in
    exactly-once delivery, its commit) for the get's timeout, or forever; nor the progress's
    ``caught_up``."""
    sender = FakeSender()
    settings = WorkerSettings(get_timeout_s=get_timeout_s, idle_interval_s=0)
    worker = MqWorker(
        CLIENT, ScriptedService([transaction(make, "1")]), builder(), sender, settings
    )
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while not sender.confirmed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sender.confirmed, "batch 1 was never confirmed"
        assert sender.confirmed[0] - sender.started[0] < 1.0, "confirmed after the get timed out"
        # And the worker says it caught up, before its next get (which waits) returns.
        while not worker.progress().caught_up and time.monotonic() < sender.confirmed[0] + 1:
            time.sleep(0.01)
        assert worker.progress().caught_up
    finally:
        worker.stop()
        assert worker.join(5)


class Interrupted(BaseException):
    """Not an Exception: what a confirm may still raise into the worker's cleanup."""


def test_cleanup_rolls_back_and_closes_whatever_the_batch_in_flight_raises(
    make: EntryMaker,
) -> None:
    h = Harness([transaction(make, "1"), transaction(make, "2")], stop_when_drained=False)

    def interrupt(records: Sequence[OutgoingRecord]) -> None:
        raise Interrupted()

    h.sender.on_send = interrupt
    h.service.on_get = lambda message: h.worker.stop() if message.batch_id == 2 else None
    h.worker.run()  # stopped while batch 1 was in flight: its outcome is not raised
    assert h.service.count("rollback") == 1
    assert h.sender.closed
    assert h.worker.progress().state == "stopped"
