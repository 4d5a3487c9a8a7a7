"""TransactionBuffer: flush on transaction boundaries, DDL, heartbeats and size."""

from __future__ import annotations

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
