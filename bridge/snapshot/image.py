"""Column values written in the binlog's row-image format: the inverse of each value decoder of
``bridge.parse.binlog.values``.

A snapshot row is rendered by the stream's own row decoder (docs/snapshots.md, "Exact
values"): the value read by the snapshot's SELECT is written as the server writes it into a
rows event, and the row image is decoded like any other. So there is one renderer, and these
writers only have to reproduce the server's storage formats (MySQL's ``Field_*::pack``,
``my_*_packed_to_binary``, ``decimal2bin``, ``json_binary::serialize``).

``WRITERS`` maps a ``MYSQL_TYPE_*`` code to a factory that, given the column's ``ColumnMeta``,
returns a ``ValueWriter``: the value as the snapshot's SELECT yields it (see
``bridge.snapshot.rows``: ints for integers, YEAR, ENUM/SET; floats for FLOAT/DOUBLE; text for
DECIMAL, temporal values and JSON; bytes for strings, BIT, GEOMETRY and VECTOR) -> the bytes of
the value in a row image. A value the type cannot hold raises ``ValueError``, never wrong bytes.

``rows_body`` assembles one INSERT rows-event body (columns-present bitmap, then a NULL bitmap
and the values per row) for ``RowDecoder.decode("insert", ...)``; ``insert_body`` one row's.
``body_writer`` is what a snapshot calls: the compiled twin of ``rows_body``
(``native/src/writer.rs``) where ``bridge.native`` loaded it.
"""

from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from bridge import native
from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.parse.binlog.values import INTEGER_LAYOUTS, decimal_layout
from bridge.snapshot.jsonb import binary_json

ValueWriter = Callable[[Any], bytes]
WriterFactory = Callable[[ColumnMeta], ValueWriter]
# Selected rows (one value per column, extra values after them ignored) -> an INSERT body.
BodyWriter = Callable[[Sequence[Sequence[Any]]], bytes]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_TIME = re.compile(r"^(-?)(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_EPOCH = re.compile(r"^(\d+)(?:\.(\d{1,6}))?$")
_DECIMAL = re.compile(r"^([-+]?)(\d*)(?:\.(\d*))?$")


def text_of(value: Any) -> str:
    """A value the server sent as text (bytes under ``character_set_results=binary``, or a
    number PyMySQL converted) as ``str``."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("ascii")
    return str(value)


def _bytes_of(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise ValueError(
        f"expected the column's bytes, got {type(value).__name__}: read it on a connection "
        "prepared by bridge.snapshot.rows.prepare_connection"
    )


def _micros(digits: str | None) -> int:
    """A fraction's digits ("5", "123456", None) as microseconds."""
    return int((digits or "").ljust(6, "0"))


def _fraction(micros: int, fsp: int) -> bytes:
    """The fractional part of DATETIME2/TIMESTAMP2: ``fsp`` 1-2 one byte of hundredths, 3-4
    two bytes of ten-thousandths, 5-6 three bytes of microseconds, big-endian."""
    if fsp == 0:
        return b""
    if fsp <= 2:
        return (micros // 10000).to_bytes(1, "big")
    if fsp <= 4:
        return (micros // 100).to_bytes(2, "big")
    return micros.to_bytes(3, "big")


def _match(pattern: re.Pattern[str], value: Any, what: str) -> re.Match[str]:
    text = text_of(value)
    found = pattern.match(text)
    if found is None:
        raise ValueError(f"{text!r} is not a {what} value")
    return found


# ---------------------------------------------------------------------------------- numbers


def _integer(col: ColumnMeta) -> ValueWriter:
    """Little-endian two's complement; UNSIGNED values take the same bits."""
    size = 3 if col.type_code == MysqlType.INT24 else INTEGER_LAYOUTS[col.type_code][0]
    low, high = (0, 1 << 8 * size) if col.unsigned else (-(1 << 8 * size - 1), 1 << 8 * size - 1)
    mask = (1 << 8 * size) - 1

    def write(value: Any) -> bytes:
        number = int(value)
        if not low <= number < high:
            raise ValueError(f"{number} does not fit column `{col.name}` ({col.mysql_type})")
        return (number & mask).to_bytes(size, "little")

    return write


def _year(col: ColumnMeta) -> ValueWriter:
    """One byte: the year - 1900, 0 for the zero year."""

    def write(value: Any) -> bytes:
        year = int(value)
        return bytes([0 if year == 0 else year - 1900])

    return write


def _float(col: ColumnMeta) -> ValueWriter:
    """FLOAT is read through ``CAST(c AS DOUBLE)`` (exact: every float32 is a double) and
    written back as the float32 it came from."""

    def write(value: Any) -> bytes:
        return _F32.pack(float(value))

    return write


def _double(col: ColumnMeta) -> ValueWriter:
    def write(value: Any) -> bytes:
        return _F64.pack(float(value))

    return write


def _decimal(col: ColumnMeta) -> ValueWriter:
    """MySQL's ``decimal2bin``: the integer and fraction digits in groups of nine (4 bytes
    each; a leading and a trailing partial group in 1..4 bytes), big-endian, the sign bit
    set for positive values and every bit inverted for negative ones."""
    scale, whole_digits = col.scale, col.precision - col.scale
    groups = decimal_layout(col.precision, col.scale)
    size = sum(nbytes for nbytes, _ in groups)
    sign_bit = 1 << (8 * size - 1)
    inverted = ((1 << (8 * size)) - 1) ^ sign_bit

    def write(value: Any) -> bytes:
        text = format(value, "f") if isinstance(value, Decimal) else text_of(value)
        found = _DECIMAL.match(text)
        whole, fraction = (found.group(2), found.group(3) or "") if found else ("", "")
        whole = whole.lstrip("0")
        if found is None or len(whole) > whole_digits or len(fraction.rstrip("0")) > scale:
            raise ValueError(f"{text!r} does not fit column `{col.name}` ({col.mysql_type})")
        digits = whole.rjust(whole_digits, "0") + fraction.ljust(scale, "0")[:scale]
        packed, at = 0, 0
        for nbytes, count in groups:
            packed = packed << (8 * nbytes) | int(digits[at : at + count])
            at += count
        negative = found.group(1) == "-" and int(digits or "0") != 0
        packed = packed ^ inverted if negative else packed | sign_bit
        return packed.to_bytes(size, "big")

    return write


def _bit(col: ColumnMeta) -> ValueWriter:
    """Big-endian, in (bits + 7) // 8 bytes; the server sends BIT values as such bytes."""
    size = ((col.bits or 1) + 7) // 8

    def write(value: Any) -> bytes:
        number = int.from_bytes(value, "big") if isinstance(value, bytes) else int(value)
        return number.to_bytes(size, "big")

    return write


def _enum_set(col: ColumnMeta) -> ValueWriter:
    """The ENUM index / SET bitmask (read as ``CAST(c AS UNSIGNED)``), little-endian in the
    column's storage bytes (TABLE_MAP metadata)."""
    size = col.max_length

    def write(value: Any) -> bytes:
        return int(value).to_bytes(size, "little")

    return write


# ------------------------------------------------------------------------- dates and times


def _date(col: ColumnMeta) -> ValueWriter:
    """Three bytes little-endian: day | month << 5 | year << 9."""

    def write(value: Any) -> bytes:
        year, month, day = map(int, _match(_DATE, value, "DATE").groups())
        return (year << 9 | month << 5 | day).to_bytes(3, "little")

    return write


def _time2(col: ColumnMeta) -> ValueWriter:
    """MySQL's ``my_time_packed_to_binary``: the packed time ((h<<12 | m<<6 | s) << 24 plus
    microseconds, negated when negative) as 3 bytes of integer part (+ 0x800000) and 1 or 2
    bytes of fraction with C's truncating division, or for fsp 5-6 all 6 bytes at once."""
    fsp = col.fsp

    def write(value: Any) -> bytes:
        sign, hours, minutes, seconds, digits = _match(_TIME, value, "TIME").groups()
        packed = ((int(hours) << 12 | int(minutes) << 6 | int(seconds)) << 24) + _micros(digits)
        if sign:
            packed = -packed
        if fsp >= 5:
            return (packed + 0x800000000000).to_bytes(6, "big")
        head = ((packed >> 24) + 0x800000).to_bytes(3, "big")
        if fsp == 0:
            return head
        fraction = abs(packed) % (1 << 24) * (-1 if packed < 0 else 1)  # C's %
        if fsp <= 2:
            return head + (_c_div(fraction, 10000) & 0xFF).to_bytes(1, "big")
        return head + (_c_div(fraction, 100) & 0xFFFF).to_bytes(2, "big")

    return write


def _c_div(value: int, divisor: int) -> int:
    """C's integer division (truncates toward zero)."""
    return value // divisor if value >= 0 else -(-value // divisor)


def _datetime2(col: ColumnMeta) -> ValueWriter:
    """Five bytes big-endian of ((year * 13 + month) << 22 | day << 17 | h << 12 | m << 6 | s)
    + 0x8000000000 (the zero date packs to 0), then the fraction."""
    fsp = col.fsp

    def write(value: Any) -> bytes:
        y, mo, d, h, mi, s, digits = _match(_DATETIME, value, "DATETIME").groups()
        packed = (int(y) * 13 + int(mo)) << 22 | int(d) << 17 | int(h) << 12 | int(mi) << 6
        packed |= int(s)
        return (packed + 0x8000000000).to_bytes(5, "big") + _fraction(_micros(digits), fsp)

    return write


def _timestamp2(col: ColumnMeta) -> ValueWriter:
    """Seconds since the epoch (read as ``UNIX_TIMESTAMP(c)``: 0 for the zero timestamp), four
    bytes big-endian, then the fraction."""
    fsp = col.fsp

    def write(value: Any) -> bytes:
        seconds, digits = _match(_EPOCH, value, "UNIX_TIMESTAMP").groups()
        return int(seconds).to_bytes(4, "big") + _fraction(_micros(digits), fsp)

    return write


# ---------------------------------------------------------------------- strings and blobs


def _prefixed(size: int, value: bytes) -> bytes:
    if len(value) >= 1 << (8 * size):
        raise ValueError(f"a {len(value)}-byte value does not fit a {size}-byte length prefix")
    return len(value).to_bytes(size, "little") + value


def _varchar(col: ColumnMeta) -> ValueWriter:
    """VARCHAR/VARBINARY: a 1-byte length when the column's byte length is below 256, else 2."""
    size = 1 if col.max_length < 256 else 2

    def write(value: Any) -> bytes:
        return _prefixed(size, _bytes_of(value))

    return write


def _char(col: ColumnMeta) -> ValueWriter:
    """CHAR/BINARY as ``Field_string::pack`` writes them: without trailing pad characters.
    The server already strips a CHAR's pad spaces when it sends the value; a BINARY(n) comes
    with its 0x00 padding, which the binlog image drops."""
    size = 1 if col.max_length < 256 else 2
    binary = col.charset is None

    def write(value: Any) -> bytes:
        raw = _bytes_of(value)
        return _prefixed(size, raw.rstrip(b"\0") if binary else raw)

    return write


def _blob(col: ColumnMeta) -> ValueWriter:
    """BLOB/TEXT (MariaDB's JSON too), GEOMETRY (the server's SRID + WKB) and VECTOR (float32s):
    the bytes after a little-endian length of the column's prefix size."""
    size = col.max_length or 4

    def write(value: Any) -> bytes:
        return _prefixed(size, _bytes_of(value))

    return write


def _json(col: ColumnMeta) -> ValueWriter:
    """MySQL's JSON: the server's text of the document written as binary JSON
    (``bridge.snapshot.jsonb``)."""
    size = col.max_length or 4

    def write(value: Any) -> bytes:
        text = bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else value
        return _prefixed(size, binary_json(text))

    return write


WRITERS: dict[int, WriterFactory] = {
    MysqlType.TINY: _integer,
    MysqlType.SHORT: _integer,
    MysqlType.INT24: _integer,
    MysqlType.LONG: _integer,
    MysqlType.LONGLONG: _integer,
    MysqlType.YEAR: _year,
    MysqlType.FLOAT: _float,
    MysqlType.DOUBLE: _double,
    MysqlType.NEWDECIMAL: _decimal,
    MysqlType.BIT: _bit,
    MysqlType.ENUM: _enum_set,
    MysqlType.SET: _enum_set,
    MysqlType.DATE: _date,
    MysqlType.TIME2: _time2,
    MysqlType.DATETIME2: _datetime2,
    MysqlType.TIMESTAMP2: _timestamp2,
    MysqlType.VARCHAR: _varchar,
    MysqlType.STRING: _char,
    MysqlType.BLOB: _blob,
    MysqlType.GEOMETRY: _blob,
    MysqlType.VECTOR: _blob,
    MysqlType.JSON: _json,
}


def make_writer(col: ColumnMeta) -> ValueWriter:
    """The writer of one column; ``KeyError`` for a type no snapshot reads (the legacy
    pre-5.6 temporal types, MariaDB's compressed columns)."""
    return WRITERS[col.type_code](col)


def insert_body(writers: Sequence[ValueWriter], values: Sequence[Any]) -> bytes:
    """The body of an INSERT rows event holding one row (``rows_body`` of one row)."""
    return rows_body(writers, (values,))


def rows_body(writers: Sequence[ValueWriter], rows: Iterable[Sequence[Any]]) -> bytes:
    """The body of an INSERT rows event holding ``rows``, as the server writes a multi-row
    INSERT: the columns-present bitmap (every column) once, then per row its NULL bitmap (None
    values) and its non-NULL values in column order. Each row holds exactly one value per
    writer; a snapshot decodes a whole chunk from one body, with one decoder call."""
    count = len(writers)
    bitmap_size = (count + 7) // 8
    parts = [((1 << count) - 1).to_bytes(bitmap_size, "little")]
    append = parts.append
    for values in rows:
        if len(values) != count:
            raise ValueError(f"a row of {len(values)} values for {count} columns")
        at = len(parts)
        append(b"")
        nulls = 0
        for i, value in enumerate(values):
            if value is None:
                nulls |= 1 << i
            else:
                append(writers[i](value))
        parts[at] = nulls.to_bytes(bitmap_size, "little")
    return b"".join(parts)


# The compiled writer's column kinds (native/src/writer.rs); a column without a spec is
# written by its Python writer, called from the compiled loop.
_NATIVE_INT = 1
_NATIVE_YEAR = 2
_NATIVE_FLOAT = 3
_NATIVE_DOUBLE = 4
_NATIVE_DECIMAL = 5
_NATIVE_DATE = 6
_NATIVE_DATETIME2 = 7
_NATIVE_TIMESTAMP2 = 8
_NATIVE_PREFIXED = 9
_NATIVE_ENUM_SET = 10


def native_spec(col: ColumnMeta) -> tuple[int, int, int] | None:
    """``(kind, a, b)`` of a column the compiled writer writes itself (the same bytes as its
    Python writer, which it calls for any value it does not take the plain path for), or
    None for a column it leaves to the Python writer (TIME, BIT, JSON, odd metadata)."""
    code = col.type_code
    prefix = 1 if col.max_length < 256 else 2
    if code in INTEGER_LAYOUTS or code == MysqlType.INT24:
        size = 3 if code == MysqlType.INT24 else INTEGER_LAYOUTS[code][0]
        return (_NATIVE_INT, size, int(col.unsigned))
    simple: dict[int, int] = {
        MysqlType.YEAR: _NATIVE_YEAR,
        MysqlType.FLOAT: _NATIVE_FLOAT,
        MysqlType.DOUBLE: _NATIVE_DOUBLE,
        MysqlType.DATE: _NATIVE_DATE,
    }
    if code in simple:
        return (simple[code], 0, 0)
    if (
        code == MysqlType.NEWDECIMAL
        and 1 <= col.precision <= 65
        and 0 <= col.scale <= col.precision
    ):
        return (_NATIVE_DECIMAL, col.precision, col.scale)
    if code in (MysqlType.DATETIME2, MysqlType.TIMESTAMP2) and 0 <= col.fsp <= 6:
        kind = _NATIVE_DATETIME2 if code == MysqlType.DATETIME2 else _NATIVE_TIMESTAMP2
        return (kind, col.fsp, 0)
    if code == MysqlType.VARCHAR:
        return (_NATIVE_PREFIXED, prefix, 0)
    if code == MysqlType.STRING:
        return (_NATIVE_PREFIXED, prefix, int(col.charset is None))
    if (
        code in (MysqlType.BLOB, MysqlType.GEOMETRY, MysqlType.VECTOR)
        and 1 <= (col.max_length or 4) <= 4
    ):
        return (_NATIVE_PREFIXED, col.max_length or 4, 0)
    if code in (MysqlType.ENUM, MysqlType.SET) and 1 <= col.max_length <= 8:
        return (_NATIVE_ENUM_SET, col.max_length, 0)
    return None


def body_writer(columns: Sequence[ColumnMeta]) -> BodyWriter:
    """The writer of a table's INSERT bodies (``rows_body`` of its columns' writers): the
    compiled one where ``bridge.native`` loaded it, else the pure-Python twin. Both give the
    same bytes and raise the same errors (tests/unit/snapshot/test_body_writer.py)."""
    writers = tuple(make_writer(col) for col in columns)
    compiled = native.module
    if compiled is not None:
        return compiled.ImageWriter([native_spec(col) for col in columns], writers).body
    return functools.partial(_python_body, writers)


def _python_body(writers: Sequence[ValueWriter], rows: Sequence[Sequence[Any]]) -> bytes:
    count = len(writers)
    return rows_body(writers, [row[:count] for row in rows])
