"""Whole rows events: bitmaps, NULLs, INSERT/UPDATE/DELETE shapes and canal's ``updated``."""

from __future__ import annotations

import struct
from datetime import UTC

import pytest

from bridge.entry import Column, RowData
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.rows import (
    ColumnCountMismatch,
    DecodedRow,
    Plan,
    RowDecoder,
    decoded_row,
)
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from bridge.parse.binlog.values import TruncatedRowImage, UnsupportedColumnType
from bridge.parse.exceptions import SchemaMismatch
from bridge.types import JdbcType as J

from .rowbytes import bitmap, datetime2_bytes, decimal_bytes, lenenc

TABLE = TableMeta(
    "shop",
    "orders",
    (
        ColumnMeta(0, "id", T.LONGLONG, "bigint(20)", is_key=True, nullable=False),
        ColumnMeta(1, "qty", T.TINY, "tinyint(3) unsigned", unsigned=True),
        ColumnMeta(2, "note", T.VARCHAR, "varchar(64)", charset="utf8mb4", max_length=256),
        ColumnMeta(3, "price", T.NEWDECIMAL, "decimal(12,2)", precision=12, scale=2),
        ColumnMeta(4, "at", T.DATETIME2, "datetime(6)", fsp=6),
    ),
)
ALL = bitmap([True] * 5)


def image(id_: int, qty: int | None, note: str | None, price: str | None, usec: int) -> bytes:
    """One full row image."""
    values = [id_, qty, note, price, usec]
    out = bitmap([v is None for v in values])
    out += struct.pack("<q", id_)
    if qty is not None:
        out += bytes([qty])
    if note is not None:
        out += lenenc(note.encode(), 2)
    if price is not None:
        out += decimal_bytes(price, 12, 2)
    out += datetime2_bytes(2024, 1, 2, 3, 4, 5, usec, 6)
    return out


def col(index: int, sql_type: int, value: str | None, updated: bool) -> Column:
    meta = TABLE.columns[index]
    return Column(
        index=index,
        sql_type=sql_type,
        name=meta.name,
        is_key=meta.is_key,
        updated=updated,
        is_null=value is None,
        value=value or "",
        mysql_type=meta.mysql_type,
    )


def test_insert_two_rows_with_nulls() -> None:
    body = ALL + image(1, 200, "héllo 😀", "12.30", 5) + image(2, None, None, None, 0)
    rows = RowDecoder(TABLE, UTC).decode("insert", body)
    assert rows == (
        RowData(
            after=(
                col(0, J.BIGINT, "1", True),
                col(1, J.SMALLINT, "200", True),
                col(2, J.VARCHAR, "héllo 😀", True),
                col(3, J.DECIMAL, "12.30", True),
                col(4, J.TIMESTAMP, "2024-01-02 03:04:05.000005", True),
            )
        ),
        RowData(
            after=(
                col(0, J.BIGINT, "2", True),
                col(1, J.TINYINT, None, True),
                col(2, J.VARCHAR, None, True),
                col(3, J.DECIMAL, None, True),
                col(4, J.TIMESTAMP, "2024-01-02 03:04:05.000000", True),
            )
        ),
    )


def test_delete_fills_before_and_nothing_is_updated() -> None:
    rows = RowDecoder(TABLE).decode("delete", ALL + image(7, 5, "", "-0.01", 0))
    assert len(rows) == 1
    assert rows[0].after == ()
    assert [c.value for c in rows[0].before] == [
        "7",
        "5",
        "",
        "-0.01",
        "2024-01-02 03:04:05.000000",
    ]
    assert [c.sql_type for c in rows[0].before][:2] == [J.BIGINT, J.TINYINT]
    assert not any(c.updated for c in rows[0].before)
    assert [c.is_null for c in rows[0].before] == [False] * 5


def test_update_flags_follow_canal_is_update() -> None:
    before = image(1, 5, "old", None, 1)
    after = image(1, 6, "old", "1.00", 1)
    rows = RowDecoder(TABLE).decode("update", ALL + ALL + before + after)
    (row,) = rows
    assert not any(c.updated for c in row.before)
    assert [c.updated for c in row.after] == [False, True, False, True, False]
    assert row.after[3].value == "1.00"
    assert row.before[3].is_null


def test_update_value_to_null_and_empty_string() -> None:
    first = image(1, 5, "", None, 0)
    second = image(1, None, None, None, 0)
    (row,) = RowDecoder(TABLE).decode("update", ALL + ALL + first + second)
    # qty 5 -> NULL and note '' -> NULL are changes; price NULL -> NULL is not.
    assert [c.updated for c in row.after] == [False, True, True, False, False]
    (back,) = RowDecoder(TABLE).decode("update", ALL + ALL + second + first)
    assert [c.updated for c in back.after] == [False, True, True, False, False]


def test_update_with_minimal_before_image() -> None:
    """binlog_row_image=MINIMAL: the before image has the key only, the after image the changed
    columns; columns missing from the before image count as updated (canal)."""
    key_only = bitmap([True, False, False, False, False])
    changed = bitmap([True, False, True, False, False])
    before = bitmap([False]) + struct.pack("<q", 9)
    after = bitmap([False, False]) + struct.pack("<q", 9) + lenenc(b"new", 2)
    (row,) = RowDecoder(TABLE).decode("update", key_only + changed + before + after)
    assert [(c.index, c.value) for c in row.before] == [(0, "9")]
    assert [(c.index, c.value, c.updated) for c in row.after] == [(0, "9", False), (2, "new", True)]


def test_many_update_rows() -> None:
    body = ALL + ALL
    for i in range(50):
        body += image(i, i, f"n{i}", "1.00", i) + image(i, i, f"n{i}!", "1.00", i)
    rows = RowDecoder(TABLE).decode("update", body)
    assert len(rows) == 50
    assert all([c.updated for c in r.after] == [False, False, True, False, False] for r in rows)
    assert rows[49].after[2].value == "n49!"


def test_nine_columns_need_two_byte_null_bitmap() -> None:
    columns = tuple(ColumnMeta(i, f"c{i}", T.TINY, "tinyint(4)") for i in range(9))
    table = TableMeta("s", "t", columns)
    nulls = [i % 2 == 1 for i in range(9)]
    values = bytes(i for i in range(9) if not nulls[i])
    body = bitmap([True] * 9) + bitmap(nulls) + values
    (row,) = RowDecoder(table).decode("insert", body, column_count=9)
    assert [c.value for c in row.after] == ["0", "", "2", "", "4", "", "6", "", "8"]
    assert [c.is_null for c in row.after] == nulls


def test_column_count_mismatch_names_table_counts_and_columns() -> None:
    with pytest.raises(ColumnCountMismatch) as caught:
        RowDecoder(TABLE).decode("insert", ALL + image(1, 1, "x", "1.00", 0), column_count=6)
    message = str(caught.value)
    assert "shop.orders" in message
    assert "6 columns" in message
    assert "has 5" in message
    assert "id bigint(20), qty tinyint(3) unsigned, note varchar(64)" in message
    assert isinstance(caught.value, SchemaMismatch)


def test_truncated_and_trailing_bytes_raise_schema_mismatch() -> None:
    body = ALL + image(1, 1, "x", "1.00", 0)
    decoder = RowDecoder(TABLE)
    with pytest.raises(TruncatedRowImage, match=r"shop\.orders"):
        decoder.decode("insert", body[:-3])
    with pytest.raises(TruncatedRowImage, match=r"shop\.orders"):
        decoder.decode("insert", body + b"\x00")


def test_unsupported_column_fails_only_when_a_value_needs_it() -> None:
    table = TableMeta(
        "s",
        "t",
        (ColumnMeta(0, "id", T.LONG, "int(11)"), ColumnMeta(1, "v", 99, "vector(2)")),
    )
    decoder = RowDecoder(table)
    null_v = bitmap([True, True]) + bitmap([False, True]) + struct.pack("<i", 1)
    (row,) = decoder.decode("insert", null_v)
    assert row.after[1].is_null
    assert row.after[1].sql_type == J.OTHER
    with_v = bitmap([True, True]) + bitmap([False, False]) + struct.pack("<i", 1) + b"\x00"
    with pytest.raises(UnsupportedColumnType, match=r"table s\.t: column #1 `v`"):
        decoder.decode("insert", with_v)


def test_empty_event_has_no_rows() -> None:
    assert RowDecoder(TABLE).decode("insert", ALL) == ()


def test_no_present_columns_with_data_raises_instead_of_looping() -> None:
    with pytest.raises(TruncatedRowImage, match="does not fit"):
        RowDecoder(TABLE).decode("delete", bitmap([False] * 5) + b"\x00\x00")


def test_fast_decoded_row_constructor_sets_each_image_in_argument_order() -> None:
    old = Plan.described([(0, "id", True, "int", 4)])
    new = Plan.described([(0, "id", True, "int", 4), (1, "name", False, "varchar(9)", 12)])
    row = decoded_row(old, ("1",), (4,), new, ("1", "x"), (4, 12))
    assert type(row) is DecodedRow
    assert (row.old_plan, row.old_values, row.old_types) == (old, ("1",), (4,))
    assert (row.new_plan, row.new_values, row.new_types) == (new, ("1", "x"), (4, 12))
    assert row.after[1] == Column(1, 12, "name", False, True, False, "x", "varchar(9)")
