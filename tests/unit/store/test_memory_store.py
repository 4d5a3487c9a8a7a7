"""MemoryEventStore: canal's ring buffer semantics, blocking behaviour and accounting."""

from __future__ import annotations

import gc
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from bridge.entry import Column, Entry, EntryType, EventType, RowChange, RowData
from bridge.position import SnapshotHeader
from bridge.store import (
    AckOutOfRange,
    BatchMode,
    BatchTooLarge,
    Event,
    MemoryEventStore,
    MemoryStoreConfig,
    NoMatchingPosition,
    StoreAlreadyStarted,
    StoreError,
    StoreStopped,
)
from tests.unit.store.factories import IDENTITY, begin, ddl, end, ev, row, rows, transaction


def _store(
    buffer_size: int = 8,
    mode: BatchMode = BatchMode.ITEMSIZE,
    mem_unit: int = 1024,
    ddl_isolation: bool = False,
) -> MemoryEventStore:
    store = MemoryEventStore(MemoryStoreConfig(buffer_size, mem_unit, mode, ddl_isolation))
    store.start()
    return store


@pytest.fixture
def store() -> Iterator[MemoryEventStore]:
    s = _store()
    yield s
    s.stop()


class _Runner:
    """Runs a call in a thread and records its result or exception (bounded joins)."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.result: object = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call: Callable[[], object]) -> None:
        try:
            self.result = call()
        except BaseException as exc:
            self.error = exc

    def join(self, timeout: float = 2.0) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "call did not return in time"


def _offsets(entries: object) -> list[int]:
    return [e.header.logfile_offset for e in entries]  # type: ignore[attr-defined]


# -- configuration and lifecycle -----------------------------------------------------------


@pytest.mark.parametrize("size", [0, 3, 6, 1000, -8])
def test_buffer_size_must_be_power_of_two(size: int) -> None:
    with pytest.raises(StoreError, match="power of two"):
        MemoryStoreConfig(buffer_size=size)


def test_mem_unit_must_be_positive() -> None:
    with pytest.raises(StoreError, match="mem_unit"):
        MemoryStoreConfig(mem_unit=0)


def test_defaults() -> None:
    config = MemoryStoreConfig()
    assert (config.buffer_size, config.mem_unit, config.batch_mode) == (
        16384,
        1024,
        BatchMode.ITEMSIZE,
    )
    assert not config.ddl_isolation


def test_double_start_raises(store: MemoryEventStore) -> None:
    assert store.running
    with pytest.raises(StoreAlreadyStarted):
        store.start()


def test_operations_refused_when_not_running() -> None:
    s = MemoryEventStore(MemoryStoreConfig(buffer_size=4))
    with pytest.raises(StoreStopped):
        s.put(IDENTITY, rows(0, 1))
    with pytest.raises(StoreStopped):
        s.get(1)
    s.start()
    s.stop()
    assert not s.running
    with pytest.raises(StoreStopped, match="get"):
        s.get(1)


def test_restart_gives_an_empty_store() -> None:
    s = _store(4)
    s.put(IDENTITY, rows(0, 3))
    s.stop()
    s.start()
    assert len(s.get(10)) == 0
    assert s.latest_position() is None


# -- put / get / ack basics ----------------------------------------------------------------


def test_put_get_ack_sequences(store: MemoryEventStore) -> None:
    assert store.put(IDENTITY, rows(0, 5))
    assert store.put_sequence == 4
    batch = store.get(3)
    assert _offsets(batch.entries) == [0, 100, 200]
    assert (batch.first_sequence, batch.last_sequence) == (0, 2)
    assert store.get_sequence == 2
    assert store.ack_sequence == -1
    store.ack(batch.last_sequence)
    assert store.ack_sequence == 2
    rest = store.get(10)
    assert _offsets(rest.entries) == [300, 400]
    assert (rest.first_sequence, rest.last_sequence) == (3, 4)


def test_empty_get(store: MemoryEventStore) -> None:
    batch = store.get(5)
    assert not batch
    assert batch.range is None
    assert batch.last_sequence == batch.first_sequence - 1


def test_empty_put_is_a_no_op(store: MemoryEventStore) -> None:
    assert store.put(IDENTITY, [])
    assert store.put_sequence == -1


def test_ring_wraps_around_over_many_cycles() -> None:
    s = _store(8)
    offset = 0
    for cycle in range(500):
        n = 1 + cycle % 8
        assert s.try_put(IDENTITY, rows(offset, n, size=10)), (
            f"cycle {cycle}: store should have room"
        )
        got = s.get(8)
        assert _offsets(got.entries) == [offset + 10 * i for i in range(n)]
        s.ack(got.last_sequence)
        offset += 10 * n
    assert s.put_sequence == s.get_sequence == s.ack_sequence > 8 * 100
    assert s.used_memory == 0
    s.stop()


def test_ring_wraps_with_partial_acks() -> None:
    """Consumer lags by a few entries; contents stay in order across wrap-around."""
    s = _store(4)
    seen: list[int] = []
    offset = 0
    for _ in range(200):
        while s.try_put(IDENTITY, rows(offset, 1, size=1)):
            offset += 1
        got = s.get(3)
        seen += _offsets(got.entries)
        s.ack(got.last_sequence)
    seen += _offsets(s.get(10).entries)
    assert seen == list(range(offset))


def test_try_put_fails_when_full(store: MemoryEventStore) -> None:
    assert store.try_put(IDENTITY, rows(0, 8))
    assert not store.try_put(IDENTITY, rows(800, 1))
    got = store.get(8)
    assert not store.try_put(IDENTITY, rows(800, 1)), (
        "delivered but unacked entries still hold slots"
    )
    store.ack(got.first_sequence)
    assert store.try_put(IDENTITY, rows(800, 1))
    assert not store.try_put(IDENTITY, rows(900, 1))


def test_put_is_all_or_nothing(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 6))
    assert not store.try_put(IDENTITY, rows(600, 3)), "3 do not fit in 2 free slots"
    assert store.put_sequence == 5
    assert store.try_put(IDENTITY, rows(600, 2))


def test_put_larger_than_buffer_is_rejected(store: MemoryEventStore) -> None:
    with pytest.raises(BatchTooLarge, match="9 entries") as info:
        store.put(IDENTITY, rows(0, 9))
    assert (info.value.size, info.value.buffer_size) == (9, 8)


def test_put_timeout_returns_false(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 8))
    started = time.monotonic()
    assert store.put(IDENTITY, rows(800, 1), timeout=0.1) is False
    assert 0.09 <= time.monotonic() - started < 1.0


def test_put_blocks_until_ack_frees_room(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 8))
    runner = _Runner(lambda: store.put(IDENTITY, rows(800, 2)))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "put must block while the store is full"
    got = store.get(1)
    store.ack(got.last_sequence)
    time.sleep(0.05)
    assert runner.thread.is_alive(), "one free slot is not enough for two entries"
    store.ack(store.get(1).last_sequence)
    runner.join()
    assert runner.error is None and runner.result is True
    assert store.put_sequence == 9


def test_get_does_not_free_slots_rollback_does_not_either(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 8))
    store.get(8)
    store.rollback()
    assert not store.try_put(IDENTITY, rows(800, 1))


# -- the three get modes -------------------------------------------------------------------


def test_get_without_timeout_returns_what_is_there(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    started = time.monotonic()
    got = store.get(5, timeout=None)
    assert len(got) == 2
    assert time.monotonic() - started < 0.1


def test_get_with_timeout_zero_blocks_for_a_full_batch(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    runner = _Runner(lambda: store.get(4, timeout=0))
    time.sleep(0.05)
    assert runner.thread.is_alive()
    store.put(IDENTITY, rows(200, 1))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "3 of 4 is not a full batch"
    store.put(IDENTITY, rows(300, 3))
    runner.join()
    assert runner.error is None
    assert _offsets(runner.result.entries) == [0, 100, 200, 300]  # type: ignore[attr-defined]


def test_get_with_negative_timeout_also_blocks(store: MemoryEventStore) -> None:
    runner = _Runner(lambda: store.get(1, timeout=-1))
    time.sleep(0.05)
    assert runner.thread.is_alive()
    store.put(IDENTITY, rows(0, 1))
    runner.join()
    assert len(runner.result) == 1  # type: ignore[arg-type]


def test_get_with_positive_timeout_returns_partial_after_timeout(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    started = time.monotonic()
    got = store.get(5, timeout=0.15)
    elapsed = time.monotonic() - started
    assert len(got) == 2
    assert 0.14 <= elapsed < 1.0


def test_get_with_positive_timeout_returns_early_when_batch_fills(
    store: MemoryEventStore,
) -> None:
    runner = _Runner(lambda: store.get(3, timeout=1.5))
    started = time.monotonic()
    time.sleep(0.05)
    store.put(IDENTITY, rows(0, 3))
    runner.join()
    assert len(runner.result) == 3  # type: ignore[arg-type]
    assert time.monotonic() - started < 1.0


def test_get_with_positive_timeout_on_empty_store_returns_empty(store: MemoryEventStore) -> None:
    assert not store.get(2, timeout=0.05)


def test_caught_up_source_ends_the_wait_for_a_fuller_batch(store: MemoryEventStore) -> None:
    runner = _Runner(lambda: store.get(5, timeout=30))
    store.put(IDENTITY, rows(0, 2))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "2 of 5, and more may come: the get waits"
    store.source_caught_up()
    runner.join()  # not the 30 s timeout
    assert _offsets(runner.result.entries) == [0, 100]  # type: ignore[attr-defined]


def test_caught_up_with_nothing_new_keeps_waiting_for_an_entry(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 1))
    store.source_caught_up()
    assert len(store.get(5, timeout=30)) == 1  # at once
    runner = _Runner(lambda: store.get(5, timeout=30))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "caught up, but nothing to hand out: wait for the next put"
    store.put(IDENTITY, rows(100, 1))
    store.source_caught_up()
    runner.join()
    assert _offsets(runner.result.entries) == [100]  # type: ignore[attr-defined]


def test_a_put_after_caught_up_means_more_is_coming(store: MemoryEventStore) -> None:
    store.source_caught_up()
    store.put(IDENTITY, rows(0, 2))  # a put without the reader saying it caught up again
    started = time.monotonic()
    assert len(store.get(5, timeout=0.15)) == 2
    assert time.monotonic() - started >= 0.14, "the get waited its timeout for a fuller batch"


def test_caught_up_does_not_end_a_blocking_get(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    store.source_caught_up()
    runner = _Runner(lambda: store.get(3, timeout=0))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "timeout <= 0 asks for a full batch, whatever the reader"
    store.put(IDENTITY, rows(200, 1))
    runner.join()
    assert len(runner.result) == 3  # type: ignore[arg-type]


def test_idle_get_sleeps_until_the_first_entry_then_waits_its_timeout(
    store: MemoryEventStore,
) -> None:
    runner = _Runner(lambda: store.get(3, timeout=0.2, idle_timeout=30))
    time.sleep(0.3)
    assert runner.thread.is_alive()  # nothing there: the get timeout does not end the wait
    started = time.monotonic()
    store.put(IDENTITY, rows(0, 1))
    runner.join()
    # Woken by the put; then the batch timeout (0.2 s) for more, partial after it.
    assert _offsets(runner.result.entries) == [0]  # type: ignore[attr-defined]
    assert 0.15 <= time.monotonic() - started < 5


def test_idle_get_returns_empty_after_its_idle_timeout(store: MemoryEventStore) -> None:
    started = time.monotonic()
    assert not store.get(3, timeout=10, idle_timeout=0.1)
    assert 0.09 <= time.monotonic() - started < 5  # not the 10 s batch timeout


def test_one_small_entry_ends_the_idle_wait_in_memsize_mode() -> None:
    s = _store(4, BatchMode.MEMSIZE, mem_unit=1000)  # one 100-byte entry is no batch of one
    runner = _Runner(lambda: s.get(1, timeout=0.05, idle_timeout=30))
    time.sleep(0.1)
    s.put(IDENTITY, rows(0, 1))
    runner.join()
    assert _offsets(runner.result.entries) == [0]  # type: ignore[attr-defined]
    s.stop()


def test_idle_timeout_is_ignored_when_entries_are_there(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    assert len(store.get(5, timeout=None, idle_timeout=30)) == 2


def test_stop_ends_an_idle_get(store: MemoryEventStore) -> None:
    runner = _Runner(lambda: store.get(3, timeout=0.1, idle_timeout=30))
    time.sleep(0.1)
    store.stop()
    runner.join()
    assert isinstance(runner.error, StoreStopped)


def test_batch_size_must_be_positive(store: MemoryEventStore) -> None:
    with pytest.raises(StoreError, match="batch_size"):
        store.get(0)


# -- position range ------------------------------------------------------------------------


def test_range_ack_is_after_the_last_transaction_end(store: MemoryEventStore) -> None:
    store.put(IDENTITY, transaction(0, 2) + transaction(400, 1)[:2])  # second transaction is cut
    got = store.get(8)
    assert got.range is not None
    assert got.range.start.position.position == 0
    assert got.range.end.position.position == 500
    assert got.range.start.identity == IDENTITY
    assert got.range.ack is not None
    assert got.range.ack.position.position == 400, "END at 300 + 100 bytes"
    assert got.range.ack.position.journal_name == "mysql-bin.000001"
    assert not got.range.start.position.included


def test_range_without_transaction_end_has_no_ack(store: MemoryEventStore) -> None:
    store.put(IDENTITY, [begin(0), *rows(100, 3)])
    got = store.get(8)
    assert got.range is not None and got.range.ack is None


def test_range_ack_after_a_ddl(store: MemoryEventStore) -> None:
    store.put(IDENTITY, [*transaction(0, 1), ddl(300, size=50), *rows(350, 1)])
    got = store.get(8)
    assert got.range is not None and got.range.ack is not None
    assert got.range.ack.position.position == 350


def test_get_ack_rollback_entries_object(store: MemoryEventStore) -> None:
    store.put(IDENTITY, transaction(0, 1))
    got = store.get(8)
    assert [e.entry_type.name for e in got.entries] == [
        "TRANSACTIONBEGIN",
        "ROWDATA",
        "TRANSACTIONEND",
    ]
    assert got.mem_size == 300


# -- DDL isolation -------------------------------------------------------------------------


def test_ddl_isolation_returns_ddl_alone() -> None:
    s = _store(8, ddl_isolation=True)
    s.put(IDENTITY, [*rows(0, 2), ddl(200), *rows(300, 2)])
    assert _offsets(s.get(8).entries) == [0, 100]
    second = s.get(8)
    assert _offsets(second.entries) == [200]
    assert second.entries[0].is_ddl
    assert _offsets(s.get(8).entries) == [300, 400]


def test_ddl_isolation_two_ddls_in_a_row() -> None:
    s = _store(8, ddl_isolation=True)
    s.put(IDENTITY, [ddl(0), ddl(100)])
    assert _offsets(s.get(8).entries) == [0]
    assert _offsets(s.get(8).entries) == [100]


def test_without_ddl_isolation_ddl_is_batched() -> None:
    s = _store(8)
    s.put(IDENTITY, [*rows(0, 2), ddl(200), *rows(300, 2)])
    assert len(s.get(8)) == 5


def test_ddl_isolation_in_memsize_mode() -> None:
    s = _store(8, BatchMode.MEMSIZE, mem_unit=100, ddl_isolation=True)
    s.put(IDENTITY, [*rows(0, 1), ddl(100), *rows(200, 1)])
    assert _offsets(s.get(8).entries) == [0]
    assert _offsets(s.get(8).entries) == [100]
    assert _offsets(s.get(8).entries) == [200]


# -- rollback ------------------------------------------------------------------------------


def test_rollback_then_get_returns_the_same_entries(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 6))
    first = store.get(2)
    store.ack(first.last_sequence)
    second = store.get(3)
    store.rollback()
    assert store.get_sequence == store.ack_sequence == 1
    again = store.get(3)
    assert again.entries == second.entries
    assert (again.first_sequence, again.last_sequence) == (2, 4)


def test_rollback_restores_memsize_get_accounting() -> None:
    s = _store(8, BatchMode.MEMSIZE, mem_unit=100)
    s.put(IDENTITY, rows(0, 4))
    assert len(s.get(1)) == 2  # 0 <= 100, 100 <= 100, then 200 > 100
    s.rollback()
    assert len(s.get(1)) == 2


# -- ack -----------------------------------------------------------------------------------


def test_ack_by_position_frees_up_to_that_entry(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 5))
    got = store.get(5)
    target = ev(got.entries[2]).log_position()
    store.ack(target)
    assert store.ack_sequence == 2
    assert got.range is not None
    store.ack(got.range.end)
    assert store.ack_sequence == 4


def test_ack_by_position_matches_last_delivered_entry_at_that_position(
    store: MemoryEventStore,
) -> None:
    same = row(100)
    store.put(IDENTITY, [row(0), same, same, row(200)])
    store.get(4)
    store.ack(ev(same).log_position())
    assert store.ack_sequence == 2


def test_ack_unknown_position_raises(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 3))
    store.get(2)
    undelivered = ev(rows(200, 1)[0]).log_position()
    with pytest.raises(NoMatchingPosition):
        store.ack(undelivered)
    assert store.ack_sequence == -1


@pytest.mark.parametrize("sequence", [-1, 3, 10])
def test_ack_sequence_out_of_range_raises(store: MemoryEventStore, sequence: int) -> None:
    store.put(IDENTITY, rows(0, 5))
    store.get(3)  # delivered: 0..2
    with pytest.raises(AckOutOfRange) as info:
        store.ack(sequence)
    assert (info.value.ack_sequence, info.value.get_sequence) == (-1, 2)


def test_ack_twice_raises(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    got = store.get(2)
    store.ack(got.last_sequence)
    with pytest.raises(AckOutOfRange):
        store.ack(got.last_sequence)


def test_ack_after_rollback_raises(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 2))
    got = store.get(2)
    store.rollback()
    with pytest.raises(AckOutOfRange):
        store.ack(got.last_sequence)


# -- MEMSIZE -------------------------------------------------------------------------------


def test_memsize_capacity_counts_bytes() -> None:
    s = _store(4, BatchMode.MEMSIZE, mem_unit=100)  # 400 bytes
    assert s.capacity_bytes == 400
    big = [row(i * 150, size=150) for i in range(4)]
    assert s.try_put(IDENTITY, big[:1])
    assert s.try_put(IDENTITY, big[1:2])
    assert s.try_put(IDENTITY, big[2:3])
    assert s.used_memory == 450
    assert not s.try_put(IDENTITY, big[3:]), "450 bytes >= 400: full although a slot is free"
    got = s.get(1)  # 0 <= 100, 150 > 100: one event
    assert len(got) == 1
    s.ack(got.last_sequence)
    assert s.used_memory == 300
    assert s.try_put(IDENTITY, big[3:])


def test_memsize_single_oversized_entry_is_admitted() -> None:
    s = _store(4, BatchMode.MEMSIZE, mem_unit=10)  # 40 bytes
    assert s.try_put(IDENTITY, [row(0, size=1000)])
    assert not s.try_put(IDENTITY, [row(1000, size=1)])


def test_memsize_slots_still_bound_the_store() -> None:
    s = _store(4, BatchMode.MEMSIZE, mem_unit=1024)
    assert s.try_put(IDENTITY, rows(0, 4, size=1))
    assert not s.try_put(IDENTITY, rows(4, 1, size=1))


def test_memsize_get_counts_batch_size_in_mem_units() -> None:
    s = _store(16, BatchMode.MEMSIZE, mem_unit=100)
    s.put(IDENTITY, rows(0, 10))
    # canal takes events while the bytes taken so far are <= batch_size * mem_unit
    assert len(s.get(2)) == 3
    assert len(s.get(5)) == 6
    assert len(s.get(5)) == 1


@pytest.mark.parametrize("mode", [BatchMode.MEMSIZE, BatchMode.ITEMSIZE])
def test_blocking_get_returns_once_the_bytes_are_there(mode: BatchMode) -> None:
    """In ITEMSIZE mode too: 2 of 3 items, but 300 of 300 bytes."""
    s = _store(16, mode, mem_unit=100)
    s.put(IDENTITY, rows(0, 1, size=150))
    runner = _Runner(lambda: s.get(3, timeout=0))
    time.sleep(0.05)
    assert runner.thread.is_alive(), "150 of 300 bytes"
    s.put(IDENTITY, rows(150, 1, size=150))
    runner.join()
    assert len(runner.result) == 2  # type: ignore[arg-type]


def test_itemsize_batch_also_ends_at_batch_size_mem_units() -> None:
    s = _store(16, BatchMode.ITEMSIZE, mem_unit=100)
    s.put(IDENTITY, rows(0, 4, size=150) + rows(600, 4, size=10))
    # 3 items or 300 bytes, whichever comes first
    assert len(s.get(3)) == 2, "two 150-byte events reach the bytes"
    assert len(s.get(3)) == 2
    assert len(s.get(3)) == 3, "small events: the item count ends the batch"


def test_ack_frees_memory() -> None:
    s = _store(8, BatchMode.MEMSIZE, mem_unit=100)
    s.put(IDENTITY, [row(0, size=30), row(30, size=70), row(100, size=200)])
    assert s.used_memory == 300
    got = s.get(8)
    assert s.used_memory == 300, "get alone frees nothing"
    s.ack(ev(got.entries[1]).log_position())
    assert s.used_memory == 200
    s.ack(got.last_sequence)
    assert s.used_memory == 0


# -- positions -----------------------------------------------------------------------------


def test_first_and_latest_position() -> None:
    s = _store(8)
    assert s.first_position() is None and s.latest_position() is None
    s.put(IDENTITY, rows(0, 3))
    first = s.first_position()
    assert first is not None
    assert (first.position.position, first.position.included) == (0, False)
    latest = s.latest_position()
    assert latest is not None
    assert (latest.position.position, latest.position.included) == (200, True)
    s.ack(s.get(2).last_sequence)
    first = s.first_position()
    assert first is not None
    assert (first.position.position, first.position.included) == (100, True)
    s.ack(s.get(2).last_sequence)
    first = s.first_position()
    assert first is not None and first.position.position == 200
    assert first.identity == IDENTITY


def test_first_position_survives_slot_reuse() -> None:
    s = _store(2)
    s.put(IDENTITY, rows(0, 2))
    s.ack(s.get(2).last_sequence)
    s.put(IDENTITY, rows(200, 2))  # overwrites both slots
    first = s.first_position()
    assert first is not None and first.position.position == 100


# -- stop releases waiters -----------------------------------------------------------------


def test_stop_releases_blocked_put(store: MemoryEventStore) -> None:
    store.put(IDENTITY, rows(0, 8))
    runner = _Runner(lambda: store.put(IDENTITY, rows(800, 1)))
    time.sleep(0.05)
    store.stop()
    runner.join()
    assert isinstance(runner.error, StoreStopped)
    assert runner.error.operation == "put"


def test_stop_releases_blocked_get(store: MemoryEventStore) -> None:
    runner = _Runner(lambda: store.get(4, timeout=0))
    timed = _Runner(lambda: store.get(4, timeout=30))
    time.sleep(0.05)
    store.stop()
    runner.join()
    timed.join()
    assert isinstance(runner.error, StoreStopped)
    assert isinstance(timed.error, StoreStopped)


# -- concurrency ---------------------------------------------------------------------------


def test_producer_consumer_keep_order_and_lose_nothing() -> None:
    s = _store(8)
    total = 3000
    received: list[int] = []

    def produce() -> None:
        for start in range(0, total, 3):
            s.put(IDENTITY, [row(i) for i in range(start, min(start + 3, total))])

    def consume() -> None:
        while len(received) < total:
            got = s.get(5, timeout=0.5)
            received.extend(_offsets(got.entries))
            if got:
                s.ack(got.last_sequence)

    producer, consumer = _Runner(produce), _Runner(consume)
    producer.join(5)
    consumer.join(5)
    assert producer.error is None and consumer.error is None
    assert received == list(range(total))


def test_event_log_position_carries_identity() -> None:
    event: Event = ev(end(0))
    position = event.log_position(included=True)
    assert position.identity == IDENTITY
    assert position.position.included


def _snapshot_rows(offset: int, count: int) -> Entry:
    """A snapshot entry of ``count`` rows (each becomes a record of its own)."""
    header = SnapshotHeader("mysql-bin.000001", offset, 1, 1000, "shop", "orders")
    image = RowData(after=(Column(0, 4, "id", True, True, False, "1", "int"),))
    change = RowChange(EventType.INSERT, row_datas=(image,) * count)
    return Entry(header, EntryType.ROWDATA, change)


def test_an_itemsize_batch_counts_a_snapshot_entry_as_its_rows(store: MemoryEventStore) -> None:
    # A batch of 4 items: one streamed rows event counts one (one record), a snapshot entry
    # its rows (a record each), so 1 + 2 + 1 fill it and the entry after waits.
    store.put(
        IDENTITY,
        [rows(0, 1)[0], _snapshot_rows(100, 2), _snapshot_rows(200, 1), _snapshot_rows(300, 3)],
    )
    started = time.monotonic()
    got = store.get(4, timeout=1.0)  # a full batch is there: no wait for the timeout
    assert time.monotonic() - started < 0.5
    assert _offsets(got.entries) == [0, 100, 200]
    # One entry over the batch is still taken whole; a rollback counts them again.
    store.rollback()
    assert _offsets(store.get(2).entries) == [0, 100]
    assert _offsets(store.get(1).entries) == [200]
    assert _offsets(store.get(1).entries) == [300]
    assert store.unacked_items == 1 + 2 + 1 + 3
    store.ack(store.get_sequence)
    assert store.unacked_items == 0
    store.put(IDENTITY, [_snapshot_rows(400, 2)])
    assert store.unacked_items == 2
    started = time.monotonic()
    got = store.get(3, timeout=0.1)  # 2 items of 3: the get waits out its timeout
    assert time.monotonic() - started >= 0.09
    assert _offsets(got.entries) == [400]


def test_a_store_holds_a_ring_as_large_as_its_unacked_events_need() -> None:
    """100 quiet destinations are 100 stores holding a transaction now and then: each takes
    a small ring, not buffer_size slots (8 bytes each, three lists)."""
    full_ring = 3 * 8 * 16384
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = MemoryEventStore(MemoryStoreConfig(buffer_size=16384))
        store.start()
        assert store.put(IDENTITY, transaction(100, 1))
        quiet = tracemalloc.get_traced_memory()[0] - before
        busy = transaction(10_000, 10_000)
        assert store.put(IDENTITY, busy)
        grown = tracemalloc.get_traced_memory()[0] - before
        got = store.get(100_000)
        # Moved to the grown ring, in order.
        assert list(got.entries) == transaction(100, 1) + busy
        del got, busy
        store.stop()
        gc.collect()
        stopped = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert quiet < full_ring / 10
    assert grown > full_ring
    assert stopped < full_ring / 10  # the ring and its events are let go
