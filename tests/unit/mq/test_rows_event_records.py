"""A rows event's record written straight from its bytes (``EventRenderer``, the compiled
path's ``rows_event_parts``) is the record of its rows decoded and rendered (``render_rows``),
byte for byte; what it cannot write it leaves to that path (None), never half-written."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

from bridge.entry import EventType, Header, RowChange
from bridge.mq.rendering import EventRenderer, render_rows
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.rows import RowDecoder, RowsKind
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from tests.native_paths import compiled_module
from tests.unit.parse.rowbytes import (
    bitmap,
    date_bytes,
    datetime2_bytes,
    decimal_bytes,
    int_bytes,
    lenenc,
    time2_bytes,
)
from tests.unit.parse.test_decoded_rows import CASES
from tests.unit.parse.test_rows import TABLE

ROOMY = 1 << 20
KINDS: dict[RowsKind, EventType] = {
    "insert": EventType.INSERT,
    "update": EventType.UPDATE,
    "delete": EventType.DELETE,
}

# Every column kind the compiled reader decodes, with a random value's bytes (None: NULL).
Value = Callable[[random.Random], bytes]
COLUMNS: list[tuple[ColumnMeta, Value]] = [
    (
        ColumnMeta(0, "id", T.LONGLONG, "bigint(20)", is_key=True, nullable=False),
        lambda r: int_bytes(T.LONGLONG, r.choice([1, 2, -(2**63), 2**63 - 1])),
    ),
    (
        ColumnMeta(1, "k2", T.LONG, "int(11)", is_key=True),
        lambda r: int_bytes(T.LONG, r.choice([0, -1, 7])),
    ),
    (
        ColumnMeta(2, "small", T.TINY, "tinyint(3) unsigned", unsigned=True),
        lambda r: bytes([r.randrange(256)]),
    ),
    (
        ColumnMeta(3, "mid", T.INT24, "mediumint(8)"),
        lambda r: int_bytes(T.INT24, r.randrange(-(2**23), 2**23)),
    ),
    (
        ColumnMeta(4, "big_u", T.LONGLONG, "bigint(20) unsigned", unsigned=True),
        lambda r: struct.pack("<Q", r.choice([0, 2**63, 2**64 - 1, r.randrange(2**64)])),
    ),
    (
        ColumnMeta(5, "note", T.VARCHAR, "varchar(64)", charset="utf8mb4", max_length=256),
        lambda r: lenenc(r.choice(['say "hi"\\', "tab\t\n", "é😀\u2028", "", "\x00"]).encode(), 2),
    ),
    (
        ColumnMeta(6, "price", T.NEWDECIMAL, "decimal(30,11)", precision=30, scale=11),
        lambda r: decimal_bytes(
            r.choice(["0.00000000000", "-12.50000000000", "1234567890123456789.10000000000"]),
            30,
            11,
        ),
    ),
    (
        ColumnMeta(7, "at", T.DATETIME2, "datetime(3)", fsp=3),
        lambda r: datetime2_bytes(r.randrange(1, 9999), 12, 31, 23, 59, 59, 999000, 3),
    ),
    (
        ColumnMeta(8, "day", T.DATE, "date"),
        lambda r: date_bytes(r.choice([0, 1, 2024]), r.randrange(13), r.randrange(32)),
    ),
    (
        ColumnMeta(9, "span", T.TIME2, "time(4)", fsp=4),
        lambda r: time2_bytes(r.random() < 0.5, r.randrange(839), 59, 59, 123400, 4),
    ),
    (
        ColumnMeta(10, "yr", T.YEAR, "year(4)"),
        lambda r: bytes([r.randrange(256)]),
    ),
    (
        ColumnMeta(11, "raw", T.BLOB, "blob", max_length=2),
        lambda r: lenenc(bytes(r.randrange(256) for _ in range(r.randrange(5))), 2),
    ),
]
WIDE = TableMeta("shop", "wide", tuple(column for column, _ in COLUMNS))


def _header(event_type: EventType, table: str = "wide") -> Header:
    return Header("mariadb-bin.000001", 4, 1, 1000, "shop", table, event_type, "0-1-2", 50)


def _image(rng: random.Random, present: list[bool]) -> bytes:
    """A row image of the present columns, some of them NULL (never the first key)."""
    values = [
        write(rng) if rng.random() < 0.8 or column.index == 0 else None
        for (column, write), here in zip(COLUMNS, present, strict=True)
        if here
    ]
    return bitmap([v is None for v in values]) + b"".join(v for v in values if v is not None)


def _random_event(rng: random.Random) -> tuple[RowsKind, bytes]:
    kind: RowsKind = rng.choice(list(KINDS))
    full = [True] * len(COLUMNS)
    # MINIMAL images: the key alone before, the changed columns after.
    minimal_before = [column.is_key for column, _ in COLUMNS]
    some = [i == 0 or rng.random() < 0.5 for i in range(len(COLUMNS))]
    before = rng.choice([full, full, minimal_before]) if kind != "insert" else full
    after = rng.choice([full, full, some]) if kind != "delete" else full
    if kind == "update":
        body = bitmap(before) + bitmap(after)
    else:
        body = bitmap(after if kind == "insert" else before)
    for _ in range(rng.choice([1, 1, 2, 7])):
        if kind == "insert":
            body += _image(rng, after)
        elif kind == "delete":
            body += _image(rng, before)
        else:
            old = _image(rng, before)
            new = old if before == after and rng.random() < 0.3 else _image(rng, after)
            body += old + new
    return kind, body


def _written(
    decoder: RowDecoder, kind: RowsKind, body: bytes, header: Header, limit: int = ROOMY
) -> tuple[Any, ...] | None:
    """``EventRenderer`` of one event, with ``header``'s fields."""
    assert header.event_type is not None
    before, after, pos = decoder.images(kind, body)
    return EventRenderer(limit)(
        header.schema_name,
        header.table_name,
        header.event_type,
        header.execute_time,
        header.gtid,
        before,
        after,
        body,
        pos,
    )


def _both(
    decoder: RowDecoder, kind: RowsKind, body: bytes, header: Header, limit: int = ROOMY
) -> tuple[tuple[Any, ...] | None, tuple[object, ...] | None]:
    """(written from the bytes, the decoded rows rendered) of one event."""
    change = RowChange(KINDS[kind], row_datas=decoder.decode(kind, body))
    return _written(decoder, kind, body, header, limit), render_rows(header, change, limit)


def test_random_events_of_every_compiled_type_give_the_rendered_rows_bytes() -> None:
    compiled_module()
    rng = random.Random(20261127)
    decoder = RowDecoder(WIDE)
    for _ in range(600):
        kind, body = _random_event(rng)
        header = _header(KINDS[kind], rng.choice(["wide", ""]))
        ahead, rendered = _both(decoder, kind, body, header)
        assert rendered is not None
        assert ahead == rendered, (kind, body.hex())


@pytest.mark.parametrize(("kind", "event_type", "body"), CASES)
def test_hand_made_events_give_the_rendered_rows_bytes(
    kind: RowsKind, event_type: EventType, body: bytes
) -> None:
    compiled_module()
    ahead, rendered = _both(RowDecoder(TABLE), kind, body, _header(event_type, "orders"))
    assert rendered is not None and ahead == rendered


def test_what_it_cannot_write_is_left_to_the_decoded_path() -> None:
    compiled_module()
    decoder = RowDecoder(TABLE)
    kind, body = "insert", CASES[0][2]
    header = _header(EventType.INSERT, "orders")
    # Over the size limit: the rows are decoded, to meet the oversize policy.
    ahead, rendered = _both(decoder, kind, body, header, limit=100)
    assert ahead is None and rendered is None
    # A value running past the event: the Python reader decides (it raises).
    assert _written(decoder, kind, body[:-3], header) is None
    # A column only a Python decoder renders (FLOAT: Java's shortest text).
    floats = TableMeta("shop", "f", (ColumnMeta(0, "x", T.FLOAT, "float"),))
    float_body = b"\x01\x00" + struct.pack("<f", 0.1)
    assert _written(RowDecoder(floats), "insert", float_body, header) is None


@pytest.mark.parametrize("case", range(len(CASES)), ids=[case[0] for case in CASES])
def test_a_table_s_records_share_one_middle_and_tail_object(case: int) -> None:
    # What marshal then sends once per batch and the instance holds once: equal middles
    # and tails are the same bytes object; heads and keys are each event's own, and so is an
    # UPDATE's middle, which holds its old values (a cache of those would grow with them).
    compiled_module()
    decoder = RowDecoder(TABLE)
    kind, event_type, body = CASES[case]
    first, second = (_written(decoder, kind, body, _header(event_type, "orders")) for _ in range(2))
    assert first is not None and second is not None
    assert first == second
    assert first[3] is second[3]
    assert (first[2] is second[2]) is (kind != "update")
    assert first[1] is not second[1]
