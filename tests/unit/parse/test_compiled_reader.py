"""The compiled row image reader against the Python one, on random bytes: for every image,
the same values and sql types, or the same error. Random bytes reach what the type corpus
never writes (corrupt DECIMAL groups, negative fractions, invalid UTF-8, truncation)."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import replace

import pytest

from bridge import native
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.rows import RowDecoder
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from bridge.parse.binlog.values import DecodeOptions
from tests.native_paths import compiled_module

from .rowbytes import Opaque, bitmap, datetime2_bytes, decimal_bytes, jsonb

_Value = Callable[[random.Random], bytes]


def _sized(size: int) -> _Value:
    return lambda rng: rng.randbytes(size)


def _prefixed(prefix: int, utf8: bool) -> _Value:
    def value(rng: random.Random) -> bytes:
        if utf8 and rng.random() < 0.7:
            text = "".join(rng.choice('aZ0 é😀"\\\n\x00') for _ in range(rng.randrange(12)))
            raw = text.encode()
        else:
            raw = rng.randbytes(rng.randrange(12))
        return len(raw).to_bytes(prefix, "little") + raw

    return value


def _decimal(precision: int, scale: int) -> _Value:
    def value(rng: random.Random) -> bytes:
        if rng.random() < 0.01:
            return rng.randbytes(len(decimal_bytes("0", precision, scale)))
        digits = "".join(rng.choice("0123456789") for _ in range(precision))
        sign = rng.choice(["", "-"])
        text = f"{sign}{digits[: precision - scale] or '0'}.{digits[precision - scale :] or '0'}"
        return decimal_bytes(text, precision, scale)

    return value


def _datetime2(fsp: int) -> _Value:
    def value(rng: random.Random) -> bytes:
        if rng.random() < 0.02:
            return rng.randbytes(5 + (fsp + 1) // 2)
        when = [rng.randrange(1, 9999), rng.randrange(13), rng.randrange(32)]
        clock = [rng.randrange(24), rng.randrange(60), rng.randrange(60)]
        return datetime2_bytes(*when, *clock, rng.randrange(10**6) // 10 ** (6 - fsp), fsp)

    return value


def _json_scalar(rng: random.Random) -> object:
    choice = rng.randrange(9)
    if choice == 0:
        return rng.choice([None, True, False])
    if choice == 1:
        bits = rng.choice((15, 16, 31, 32, 63, 64))
        return rng.randrange(-(1 << bits) if bits % 2 else 0, 1 << bits)
    if choice == 2:
        return struct.unpack("<d", rng.randbytes(8))[0]  # any double, NaN and subnormals too
    if choice == 3:
        return rng.choice((0.1, -2.5e-5, 1e23, 1234567.0, 1e7, -0.0, 5e-324, 0.001))
    if choice == 4:
        precision = rng.randrange(1, 66)
        scale = rng.randrange(precision + 1)
        number = f"{rng.randrange(10**precision)}".rjust(precision, "0")
        text = (
            f"{rng.choice('-+')}{number[: precision - scale] or '0'}.{number[precision - scale :]}"
        )
        return Opaque(
            T.NEWDECIMAL, bytes([precision, scale]) + decimal_bytes(text, precision, scale)
        )
    if choice == 5:
        kind = rng.choice((T.DATE, T.TIME, T.DATETIME, T.TIMESTAMP))
        packed = rng.choice((0, rng.randrange(-(1 << 63), 1 << 63)))
        return Opaque(kind, struct.pack("<q", packed))
    if choice == 6:
        return Opaque(rng.choice((T.VARCHAR, T.BLOB)), 'ab"é'.encode() + rng.randbytes(3))
    return "".join(rng.choice('aZ0 é😀"\\\n\x00') for _ in range(rng.randrange(12)))


def _json_document(rng: random.Random, depth: int = 0) -> object:
    if depth > 3 or rng.random() < 0.3:
        return _json_scalar(rng)
    members = [_json_document(rng, depth + 1) for _ in range(rng.randrange(5))]
    if rng.random() < 0.5:
        return members
    return {rng.choice(("a", "bb", "é", 'q"', "k\\")) + str(i): m for i, m in enumerate(members)}


def _json(rng: random.Random) -> bytes:
    """A binary JSON value (small or large containers), now and then empty or corrupt."""
    doc = b"" if rng.random() < 0.05 else jsonb(_json_document(rng), large=rng.random() < 0.3)
    if doc and rng.random() < 0.05:
        at = rng.randrange(len(doc))
        doc = doc[:at] + rng.randbytes(1) + doc[at + 1 :]
    return len(doc).to_bytes(4, "little") + doc


COLUMNS: list[tuple[ColumnMeta, _Value]] = []


def _add(meta: ColumnMeta, value: _Value) -> None:
    COLUMNS.append((replace(meta, index=len(COLUMNS), name=f"c{len(COLUMNS)}"), value))


for code, size in ((T.TINY, 1), (T.SHORT, 2), (T.INT24, 3), (T.LONG, 4), (T.LONGLONG, 8)):
    for unsigned in (False, True):
        _add(ColumnMeta(0, "", code, "int", unsigned=unsigned), _sized(size))
for precision, scale in ((12, 2), (10, 0), (5, 5), (65, 30), (20, 9), (3, 1), (19, 10)):
    _add(
        ColumnMeta(0, "", T.NEWDECIMAL, "decimal", precision=precision, scale=scale),
        _decimal(precision, scale),
    )
for fsp in range(7):
    _add(ColumnMeta(0, "", T.DATETIME2, "datetime", fsp=fsp), _datetime2(fsp))
    _add(ColumnMeta(0, "", T.TIME2, "time", fsp=fsp), _sized(3 + (fsp + 1) // 2))
_add(ColumnMeta(0, "", T.DATE, "date"), _sized(3))
_add(ColumnMeta(0, "", T.YEAR, "year"), _sized(1))
_add(ColumnMeta(0, "", T.VARCHAR, "varchar", charset="utf8mb4", max_length=64), _prefixed(1, True))
_add(ColumnMeta(0, "", T.VARCHAR, "varchar", charset="utf8mb4", max_length=900), _prefixed(2, True))
_add(ColumnMeta(0, "", T.STRING, "char", charset="utf8mb4", max_length=40), _prefixed(1, True))
_add(
    ColumnMeta(0, "", T.VARCHAR, "varbinary", charset="binary", max_length=16), _prefixed(1, False)
)
for prefix in (1, 2, 3, 4):
    _add(
        ColumnMeta(0, "", T.BLOB, "blob", charset="binary", max_length=prefix),
        _prefixed(prefix, False),
    )
    _add(
        ColumnMeta(0, "", T.BLOB, "text", charset="utf8mb4", max_length=prefix),
        _prefixed(prefix, True),
    )
_add(ColumnMeta(0, "", T.DOUBLE, "double"), _sized(8))  # decoded by Python, called from Rust
_add(
    ColumnMeta(0, "", T.ENUM, "enum('a','b')", enum_values=("a", "b"), max_length=1),
    lambda rng: bytes([rng.randrange(3) if rng.random() < 0.97 else 3]),  # 3: no label
)
_add(
    ColumnMeta(0, "", T.SET, "set('x','y','z')", set_values=("x", "y", "z"), max_length=1),
    lambda rng: bytes([rng.randrange(8) if rng.random() < 0.97 else 8]),  # 8: no member
)
_MEMBERS = tuple(f"m{i}" for i in range(10))
_add(
    ColumnMeta(0, "", T.SET, "set('m0',...)", set_values=_MEMBERS, max_length=2),
    lambda rng: rng.randrange(1 << 10).to_bytes(2, "little"),
)
_add(
    ColumnMeta(0, "", T.ENUM, "enum('l0',...)", enum_values=tuple(f"l{i}" for i in range(300))),
    lambda rng: rng.randrange(301).to_bytes(2, "little"),  # no metadata: 2 bytes for 300
)
_add(ColumnMeta(0, "", T.TIME, "time"), _sized(3))
_add(ColumnMeta(0, "", T.JSON, "json", max_length=4), _json)
_add(ColumnMeta(0, "", T.VARCHAR, "varchar", charset="latin1", max_length=20), _prefixed(1, False))

TABLE = TableMeta("shop", "fuzz", tuple(meta for meta, _ in COLUMNS))


def _body(rng: random.Random, rows: int) -> bytes:
    body = bitmap([True] * len(COLUMNS))
    for _ in range(rows):
        nulls = [rng.random() < 0.2 for _ in COLUMNS]
        body += bitmap(nulls)
        body += b"".join(v(rng) for (_, v), null in zip(COLUMNS, nulls, strict=True) if not null)
    return body


def _decode(decoder: RowDecoder, body: bytes) -> object:
    try:
        return [(r.new_values, r.new_types) for r in decoder.decode("insert", body)]  # type: ignore[attr-defined]
    except Exception as exc:  # the outcome compared is the error itself
        return (type(exc), str(exc))


@pytest.mark.parametrize(
    "options",
    [
        DecodeOptions(),
        DecodeOptions(value_mode="canal"),
        DecodeOptions(binary_encoding="base64"),
        DecodeOptions(value_mode="canal", binary_encoding="base64"),
    ],
    ids=["faithful", "canal", "faithful-base64", "canal-base64"],
)
def test_random_images_decode_the_same_in_both_readers(
    options: DecodeOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = compiled_module()
    rng = random.Random(f"{options.value_mode}/{options.binary_encoding}")
    outcomes = {"rows": 0, "errors": 0}
    for _ in range(400):
        body = _body(rng, rng.choice((1, 3)))
        if rng.random() < 0.1:
            body = body[: rng.randrange(len(body))]  # truncated somewhere
        monkeypatch.setattr(native, "module", None)
        expected = _decode(RowDecoder(TABLE, options=options), body)
        monkeypatch.setattr(native, "module", compiled)
        assert _decode(RowDecoder(TABLE, options=options), body) == expected
        outcomes["errors" if isinstance(expected, tuple) else "rows"] += 1
    assert outcomes["rows"] > 150 and outcomes["errors"] > 20, outcomes


JSON_TABLE = TableMeta(
    "shop",
    "docs",
    (
        ColumnMeta(0, "id", T.LONG, "int"),
        ColumnMeta(1, "doc", T.JSON, "json", max_length=4),
        ColumnMeta(2, "state", T.ENUM, "enum('a','b')", enum_values=("a", "b"), max_length=1),
        ColumnMeta(3, "tags", T.SET, "set('m0',...)", set_values=_MEMBERS, max_length=2),
    ),
)


@pytest.mark.parametrize("options", [DecodeOptions(), DecodeOptions(value_mode="canal")])
def test_well_formed_json_and_labels_are_rendered_by_the_compiled_reader_alone(
    options: DecodeOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every document MySQL can write (doubles, opaque decimals and temporals, large
    containers included), and ENUM and SET values, are rendered in Rust, exactly as Python
    renders them."""
    compiled = compiled_module()
    rng = random.Random(options.value_mode)
    body = bitmap([True] * 4)
    for i in range(300):
        doc = jsonb(_json_document(rng), large=rng.random() < 0.3)
        body += bitmap([False] * 4) + i.to_bytes(4, "little")
        body += len(doc).to_bytes(4, "little") + doc
        body += bytes([rng.randrange(3)]) + rng.randrange(1 << 10).to_bytes(2, "little")
    monkeypatch.setattr(native, "module", None)
    expected = _decode(RowDecoder(JSON_TABLE, options=options), body)
    monkeypatch.setattr(native, "module", compiled)
    rows = RowDecoder(JSON_TABLE, options=options).decode("insert", body)
    assert [(r.new_values, r.new_types) for r in rows] == expected  # type: ignore[attr-defined]
    readers = {id(r.new_plan.read): r.new_plan.read for r in rows}.values()  # type: ignore[attr-defined]
    assert [type(read) for read in readers] == [compiled.ImageReader]
    assert [read.declined for read in readers] == [0]
