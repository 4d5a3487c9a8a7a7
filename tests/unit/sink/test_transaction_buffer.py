"""TransactionBuffer: flush on transaction boundaries, DDL, heartbeats and size."""

from __future__ import annotations

import random

import pytest

from bridge.entry import Entry, EntryType, EventType
from bridge.sink import SinkError, TransactionBuffer
from tests.unit.store.factories import begin, ddl, end, heartbeat, row


class Recorder:
    def __init__(self, fail: int = 0) -> None:
        self.flushes: list[list[int]] = []
        self.fail = fail

    def __call__(self, entries: list[Entry]) -> None:
        if self.fail:
            self.fail -= 1
            raise RuntimeError("store unavailable")
        self.flushes.append([e.header.logfile_offset for e in entries])


def _buffer(size: int = 1024, fail: int = 0) -> tuple[TransactionBuffer, Recorder]:
    recorder = Recorder(fail)
    return TransactionBuffer(recorder, size), recorder


def test_flushes_a_whole_transaction_at_its_end() -> None:
    buf, rec = _buffer()
    for entry in (begin(0), row(1), row(2)):
        buf.add(entry)
    assert rec.flushes == []
    assert len(buf) == 3
    buf.add(end(3))
    assert rec.flushes == [[0, 1, 2, 3]]
    assert len(buf) == 0


def test_consecutive_transactions_are_flushed_separately() -> None:
    buf, rec = _buffer()
    for entry in (begin(0), row(1), end(2), begin(3), row(4), end(5)):
        buf.add(entry)
    assert rec.flushes == [[0, 1, 2], [3, 4, 5]]


def test_huge_transaction_goes_through_in_pieces() -> None:
    buf, rec = _buffer(size=4)
    buf.add(begin(0))
    for offset in range(1, 10):
        buf.add(row(offset))
        assert len(buf) < 4, "memory bounded by transaction_size"
    buf.add(end(10))
    assert rec.flushes == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]


def test_ddl_flushes_immediately() -> None:
    buf, rec = _buffer()
    buf.add(row(0))
    buf.add(ddl(1))
    assert rec.flushes == [[0, 1]]


def test_non_dml_query_rowdata_flushes() -> None:
    buf, rec = _buffer()
    buf.add(row(0, event_type=EventType.QUERY))
    assert rec.flushes == [[0]]


def test_heartbeat_flushes() -> None:
    buf, rec = _buffer()
    buf.add(begin(0))
    buf.add(row(1))
    buf.add(heartbeat(2))
    assert rec.flushes == [[0, 1, 2]]


def test_begin_flushes_an_unterminated_previous_piece() -> None:
    buf, rec = _buffer()
    buf.add(begin(0))
    buf.add(row(1))
    buf.add(begin(2))
    assert rec.flushes == [[0, 1]]
    assert len(buf) == 1


def test_explicit_flush_and_reset() -> None:
    buf, rec = _buffer()
    buf.flush()
    assert rec.flushes == [], "nothing buffered, no callback"
    buf.add(begin(0))
    buf.flush()
    assert rec.flushes == [[0]]
    buf.add(begin(1))
    buf.reset()
    buf.add(end(2))
    assert rec.flushes == [[0], [2]]


def test_failed_flush_keeps_entries_and_propagates() -> None:
    buf, rec = _buffer(fail=1)
    buf.add(begin(0))
    with pytest.raises(RuntimeError):
        buf.add(end(1))
    assert len(buf) == 2
    buf.flush()
    assert rec.flushes == [[0, 1]]


def test_full_buffer_with_failing_callback_does_not_grow() -> None:
    buf, rec = _buffer(size=2, fail=2)
    buf.add(begin(0))
    with pytest.raises(RuntimeError):
        buf.add(row(1))  # fills the buffer, flush fails
    with pytest.raises(RuntimeError):
        buf.add(row(2))  # must flush before accepting, fails again
    assert len(buf) == 2
    buf.add(row(2))
    assert rec.flushes == [[0, 1]]
    assert len(buf) == 1


def test_entry_kinds_cover_all() -> None:
    assert {e.value for e in EntryType} == {
        "TRANSACTIONBEGIN",
        "ROWDATA",
        "TRANSACTIONEND",
        "HEARTBEAT",
    }


def test_size_must_be_positive() -> None:
    with pytest.raises(SinkError, match="transaction_size"):
        TransactionBuffer(Recorder(), 0)


# --- add_batch: whole transactions of a batch flushed together


def _one_row_transactions(count: int, first: int = 0) -> list[Entry]:
    entries: list[Entry] = []
    for i in range(first, first + 3 * count, 3):
        entries += [begin(i), row(i + 1), end(i + 2)]
    return entries


def test_a_batch_of_whole_transactions_is_one_flush() -> None:
    buf, rec = _buffer()
    buf.add_batch(_one_row_transactions(3))
    assert rec.flushes == [[0, 1, 2, 3, 4, 5, 6, 7, 8]]
    assert len(buf) == 0
    one_by_one, rec_one = _buffer()
    for entry in _one_row_transactions(3):
        one_by_one.add(entry)
    assert len(rec_one.flushes) == 3, "add flushes each transaction"


def test_an_open_transaction_waits_for_the_next_batch() -> None:
    buf, rec = _buffer()
    buf.add_batch([*_one_row_transactions(2), begin(6), row(7)])
    assert rec.flushes == [[0, 1, 2, 3, 4, 5]], "the whole ones go, the open one stays"
    assert len(buf) == 2
    buf.add_batch([end(8), begin(9)])
    assert rec.flushes == [[0, 1, 2, 3, 4, 5], [6, 7, 8]]
    assert len(buf) == 1


def test_a_failed_batch_flush_keeps_the_entries() -> None:
    buf, rec = _buffer(fail=1)
    with pytest.raises(RuntimeError):
        buf.add_batch([*_one_row_transactions(2), begin(6)])
    assert len(buf) == 7
    buf.flush()
    assert rec.flushes == [[0, 1, 2, 3, 4, 5, 6]]


@pytest.mark.parametrize("seed", range(40))
def test_add_batch_flushes_what_add_flushes_on_the_same_boundaries(seed: int) -> None:
    """Random streams (transactions of 0-6 rows, a few unterminated, DDL, heartbeats) cut
    into random batches: the same entries reach the callback in the same order, no flush
    is larger than transaction_size, and every flush ends where ``add`` also ends one, so a
    flush ends on a transaction boundary exactly when ``add``'s would."""
    rng = random.Random(seed)
    stream: list[Entry] = []
    offset = 0
    for _ in range(rng.randrange(1, 60)):
        kind = rng.random()
        if kind < 0.08:
            stream.append(ddl(offset))
            offset += 1
            continue
        if kind < 0.14:
            stream.append(heartbeat(offset))
            offset += 1
            continue
        stream.append(begin(offset))
        offset += 1
        for _ in range(rng.randrange(0, 7)):
            stream.append(row(offset))
            offset += 1
        if rng.random() > 0.1:  # else unterminated: the next BEGIN flushes the piece
            stream.append(end(offset))
            offset += 1
    size = rng.choice((2, 3, 5, 8, 1024))
    single, single_rec = _buffer(size)
    for entry in stream:
        single.add(entry)
    batched, batched_rec = _buffer(size)
    i = 0
    while i < len(stream):
        step = rng.randrange(1, 20)
        batched.add_batch(stream[i : i + step])
        i += step
    flat = [o for flush in batched_rec.flushes for o in flush]
    assert flat == [o for flush in single_rec.flushes for o in flush]
    assert len(batched) == len(single)
    assert all(0 < len(flush) <= size for flush in batched_rec.flushes)
    single_ends = {flush[-1] for flush in single_rec.flushes}
    assert {flush[-1] for flush in batched_rec.flushes} <= single_ends
    if len(single_rec.flushes) > 3 and size > 8:
        assert len(batched_rec.flushes) < len(single_rec.flushes), "batches group flushes"
