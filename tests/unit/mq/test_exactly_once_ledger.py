"""The exactly-once cursor ledger: what each batch commits with its records, and which rows a
restarted process leaves out because its predecessor already committed them."""

from __future__ import annotations

import orjson
import pytest

from bridge.entry import Entry, EntryType
from bridge.mq.exactly_once import CommittedCursor, CursorLedger, OffsetsTopicError
from bridge.position import LogIdentity, LogPosition, resume_position_after
from tests.unit.mq.conftest import EntryMaker

IDENTITY = LogIdentity("127.0.0.1:3306", 9)


def ledger(start: CommittedCursor | None = None) -> CursorLedger:
    return CursorLedger("d1", "offsets", IDENTITY, start or CommittedCursor(None))


def after(entry: Entry) -> LogPosition:
    return LogPosition(IDENTITY, resume_position_after(entry))


def rows_of(entries: list[Entry]) -> list[str]:
    return [
        e.header.logfile_name + f":{e.header.logfile_offset}"
        for e in entries
        if e.entry_type is EntryType.ROWDATA
    ]


def test_the_cursor_is_the_last_transaction_end_and_the_rows_after_it(make: EntryMaker) -> None:
    first = [make.begin(), make.insert("1"), make.end()]
    second = [make.begin(), make.insert("2"), make.insert("3")]  # a transaction goes on
    book = ledger()
    sent, record = book.batch(1, first + second)
    assert sent == first + second
    assert (record.topic, record.partition, record.key) == ("offsets", 0, b"d1")
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(after(first[-1]), 2)
    more = [make.insert("4"), make.end()]
    _, record = book.batch(2, more)
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(after(more[-1]), 0)


def test_a_restart_leaves_out_exactly_the_rows_already_committed(make: EntryMaker) -> None:
    boundary = make.end()
    txn = [make.begin(), make.insert("1"), make.insert("2"), make.insert("3"), make.end()]
    book = ledger(CommittedCursor(after(boundary), 2))
    sent, record = book.batch(1, txn[:3])  # the two committed rows come again
    assert rows_of(sent) == []
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(after(boundary), 2)
    sent, record = book.batch(2, txn[3:])
    assert rows_of(sent) == rows_of(txn[3:4])
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(after(txn[-1]), 0)


def test_a_rollback_returns_to_the_last_acked_batch(make: EntryMaker) -> None:
    boundary = make.end()
    book = ledger(CommittedCursor(after(boundary), 1))
    batch = [make.insert("1"), make.insert("2")]
    book.batch(1, batch)
    book.batch(2, [make.insert("3")])  # built while batch 1 was being sent
    book.rolled_back()  # batch 1 failed: both are got again
    sent, record = book.batch(3, batch)
    assert rows_of(sent) == rows_of(batch[1:])  # the committed row is still left out
    book.acked(3)
    assert book.committed == CommittedCursor(after(boundary), 2)
    assert CommittedCursor.decode(record.value, "test") == book.committed


def test_an_empty_transaction_the_restarted_sink_passes_does_not_end_the_skip(
    make: EntryMaker,
) -> None:
    """The sink passes the first filtered-out (empty) transaction after a restart (canal's
    periodic pass-through starts afresh), so the new process may meet an ack point between the
    cursor and the committed rows that the old one never saw: the committed rows still belong
    to the transaction after it and must still be left out (a chaos run caught the repeat)."""
    boundary = make.end()
    empty_end = make.end()  # an empty transaction's end, stored by the restarted sink only
    txn = [make.begin(), make.insert("1"), make.insert("2"), make.insert("3"), make.end()]
    book = ledger(CommittedCursor(after(boundary), 2))
    sent, record = book.batch(1, [empty_end, *txn[:3]])
    assert rows_of(sent) == []
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(after(empty_end), 2)
    sent, _ = book.batch(2, txn[3:])
    assert rows_of(sent) == rows_of(txn[3:4])


def test_without_the_skip_the_restart_would_duplicate(make: EntryMaker) -> None:
    """The negative case: a ledger that does not know the committed rows sends them again."""
    boundary = make.end()
    batch = [make.insert("1"), make.insert("2")]
    sent, _ = ledger(CommittedCursor(after(boundary), 0)).batch(1, batch)
    assert rows_of(sent) == rows_of(batch)


@pytest.mark.parametrize(
    "value",
    [b"not json", b"{}", b'{"cursor": null, "rowsAfter": -1}', b'{"cursor": 7, "rowsAfter": 0}'],
)
def test_a_damaged_committed_cursor_is_one_clear_error(value: bytes) -> None:
    with pytest.raises(OffsetsTopicError, match=r"offsets@3 is damaged .*delete the destination"):
        CommittedCursor.decode(value, "offsets@3")


def test_the_committed_cursor_is_canals_position_json(make: EntryMaker) -> None:
    cursor = CommittedCursor(after(make.end()), 3)
    data = orjson.loads(cursor.encode("d1"))
    assert data["destination"] == "d1" and data["rowsAfter"] == 3
    assert data["cursor"]["@type"] == "com.alibaba.otter.canal.protocol.position.LogPosition"
    assert CommittedCursor.decode(cursor.encode("d1"), "x") == cursor


def test_rows_before_any_transaction_end_count_from_where_reading_started(
    make: EntryMaker,
) -> None:
    """A first batch inside a large source transaction: the committed cursor is the start
    position (made durable by the offsets record), not null with rows that count from
    nowhere."""
    started = after(make.end())
    book = CursorLedger("d1", "offsets", IDENTITY, CommittedCursor(None), lambda: started)
    _, record = book.batch(1, [make.begin(), make.insert("1"), make.insert("2")])
    assert CommittedCursor.decode(record.value, "test") == CommittedCursor(started, 2)
