"""Entries survive the trip from the reader's process to the instance's
(``bridge.parse.entry_codec``)."""

from __future__ import annotations

import struct

from bridge.entry import Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.flat_message import build_flat_messages
from bridge.parse.binlog.rows import RowDecoder
from bridge.parse.entry_codec import EntryDecoder, EntryEncoder

from .rowbytes import bitmap, lenenc
from .test_rows import ALL, TABLE, col, image


def header(offset: int, event_type: EventType | None = EventType.INSERT, gtid: str = "") -> Header:
    return Header(
        "mariadb-bin.000003", offset, 1, 1_700_000_000_000, "shop", "orders", event_type, gtid, 77
    )


def rows_entry(offset: int, kind: str, event_type: EventType, body: bytes) -> Entry:
    rows = RowDecoder(TABLE).decode(kind, body)  # type: ignore[arg-type]
    return Entry(
        header(offset, event_type, "0-1-9"),
        EntryType.ROWDATA,
        RowChange(event_type, row_datas=rows),
    )


def sample_entries() -> list[Entry]:
    minimal_before = bitmap([True, False, False, False, False])
    minimal_after = bitmap([True, False, True, False, False])
    minimal = (
        minimal_before
        + minimal_after
        + bitmap([False])
        + struct.pack("<q", 9)
        + bitmap([False, False])
        + struct.pack("<q", 9)
        + lenenc(b"new", 2)
    )
    return [
        Entry(header(4, None, "0-1-9"), EntryType.TRANSACTIONBEGIN),
        rows_entry(
            100,
            "insert",
            EventType.INSERT,
            ALL + image(1, 5, "a ✓", "1.50", 7) + image(2, None, None, None, 0),
        ),
        rows_entry(
            200,
            "update",
            EventType.UPDATE,
            ALL + ALL + image(1, 5, "a", None, 1) + image(1, 6, "b", "2.00", 1),
        ),
        rows_entry(300, "update", EventType.UPDATE, minimal),
        rows_entry(400, "delete", EventType.DELETE, ALL + image(2, None, None, None, 0)),
        Entry(
            header(500, EventType.UPDATE),
            EntryType.ROWDATA,
            RowChange(
                EventType.UPDATE,
                row_datas=(
                    RowData(before=(col(0, -5, "3", False),), after=(col(0, -5, "4", True),)),
                ),
            ),
        ),
        Entry(
            header(600, EventType.ALTER),
            EntryType.ROWDATA,
            RowChange(
                EventType.ALTER,
                is_ddl=True,
                sql="ALTER TABLE orders ADD c INT",
                ddl_schema_name="shop",
            ),
        ),
        Entry(header(700, None), EntryType.TRANSACTIONEND, transaction_id="42"),
        Entry(Header("mariadb-bin.000003", 800, 1, 0), EntryType.HEARTBEAT),
    ]


def test_entries_round_trip_equal_with_their_columns() -> None:
    entries = sample_entries()
    decoded = EntryDecoder().decode(EntryEncoder().encode(entries))
    assert decoded == entries
    for sent, received in zip(entries, decoded, strict=True):
        for a, b in zip(
            sent.row_change.row_datas if sent.row_change else (),
            received.row_change.row_datas if received.row_change else (),
            strict=True,
        ):
            assert (a.before, a.after) == (b.before, b.after)


def test_flat_messages_are_the_same_after_the_trip() -> None:
    entries = sample_entries()
    decoded = EntryDecoder().decode(EntryEncoder().encode(entries))
    sent = [m.message.to_json() for m in build_flat_messages(entries, 7, 1)]
    received = [m.message.to_json() for m in build_flat_messages(decoded, 7, 1)]
    assert received == sent
    assert len(sent) == 6


def test_a_plan_is_sent_once_and_named_by_number_afterwards() -> None:
    encoder, decoder = EntryEncoder(), EntryDecoder()
    decoder_ = RowDecoder(TABLE)
    first = Entry(
        header(1),
        EntryType.ROWDATA,
        RowChange(
            EventType.INSERT, row_datas=decoder_.decode("insert", ALL + image(1, 1, "x", "1.00", 1))
        ),
    )
    second = Entry(
        header(2),
        EntryType.ROWDATA,
        RowChange(
            EventType.INSERT, row_datas=decoder_.decode("insert", ALL + image(2, 2, "y", "2.00", 2))
        ),
    )
    one, two = encoder.encode([first]), encoder.encode([second])
    assert b"varchar(64)" in one
    assert b"varchar(64)" not in two  # the plan travelled with the first batch only
    assert decoder.decode(one) == [first]
    assert decoder.decode(two) == [second]
    rebuilt = decoder.decode(encoder.encode([first, second]))
    assert (
        rebuilt[0].row_change.row_datas[0].new_plan is rebuilt[1].row_change.row_datas[0].new_plan
    )  # type: ignore[union-attr]
