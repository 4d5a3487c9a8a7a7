"""Decoded rows keep their values until asked for Columns: FlatMessages built from them must be
exactly those built from the equivalent plain ``RowData``."""

from __future__ import annotations

import struct

import pytest

from bridge.entry import Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.flat_message import build_flat_messages
from bridge.parse.binlog.rows import DecodedRow, RowDecoder, RowsKind

from .rowbytes import bitmap, lenenc
from .test_rows import ALL, TABLE, image

KEY_ONLY = bitmap([True, False, False, False, False])
CHANGED = bitmap([True, False, True, False, False])
MINIMAL_UPDATE = (
    KEY_ONLY
    + CHANGED
    + bitmap([False])
    + struct.pack("<q", 9)
    + bitmap([False, False])
    + struct.pack("<q", 9)
    + lenenc(b"new", 2)
)
CASES: list[tuple[RowsKind, EventType, bytes]] = [
    (
        "insert",
        EventType.INSERT,
        ALL + image(1, 200, "héllo", "12.30", 5) + image(2, None, None, None, 0),
    ),
    ("delete", EventType.DELETE, ALL + image(7, 5, "", "-0.01", 0) + image(8, None, "x", None, 3)),
    (
        "update",
        EventType.UPDATE,
        ALL
        + ALL
        + image(1, 5, "", None, 0)
        + image(1, None, None, None, 0)
        + image(2, 5, "a", "1.00", 1)
        + image(2, 6, "a", "1.00", 1),
    ),
    ("update", EventType.UPDATE, MINIMAL_UPDATE),
]


def _entry(event_type: EventType, rows: tuple[RowData, ...]) -> Entry:
    header = Header("mariadb-bin.000001", 4, 1, 1000, "shop", "orders", event_type, "0-1-2", 50)
    return Entry(header, EntryType.ROWDATA, RowChange(event_type, row_datas=rows))


@pytest.mark.parametrize(("kind", "event_type", "body"), CASES)
def test_flat_messages_from_decoded_rows_equal_those_from_columns(
    kind: RowsKind, event_type: EventType, body: bytes
) -> None:
    decoded = RowDecoder(TABLE).decode(kind, body)
    assert all(type(row) is DecodedRow for row in decoded)
    plain = tuple(RowData(before=row.before, after=row.after) for row in decoded)
    fast = build_flat_messages([_entry(event_type, RowDecoder(TABLE).decode(kind, body))], 1, 2)
    slow = build_flat_messages([_entry(event_type, plain)], 1, 2)
    assert [m.message.to_json() for m in fast] == [m.message.to_json() for m in slow]
    assert [m.message for m in fast] == [m.message for m in slow]


def test_a_decoded_row_equals_the_row_data_of_its_columns() -> None:
    (row,) = RowDecoder(TABLE).decode("update", ALL + ALL + image(1, 5, "a", None, 0) * 2)
    plain = RowData(before=row.before, after=row.after)
    assert row == plain and plain == row and hash(row) == hash(plain)
