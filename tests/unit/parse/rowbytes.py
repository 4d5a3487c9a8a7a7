"""Encoders of MySQL row-image values, written from MySQL's storage formats (not from the
decoder), so the tests check the decoder against an independent implementation."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.table_meta import ColumnMeta

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def packed_int(value: int) -> bytes:
    """MySQL's ``net_store_length``: a length-encoded ("packed") integer."""
    if value < 251:
        return bytes([value])
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + value.to_bytes(8, "little")


def col(type_code: int, mysql_type: str = "", **kwargs: object) -> ColumnMeta:
    index = kwargs.pop("index", 0)
    name = kwargs.pop("name", "c")
    return ColumnMeta(index, name, type_code, mysql_type or f"type{type_code}", **kwargs)  # type: ignore[arg-type]


def decimal_bytes(text: str, precision: int, scale: int) -> bytes:
    """MySQL decimal2bin."""
    value = Decimal(text)
    negative = value.is_signed()
    with localcontext() as context:
        context.prec = 100
        digits = f"{abs(value):.{scale}f}"
    whole, _, frac = digits.partition(".")
    intg = precision - scale
    whole = whole.rjust(intg, "0")[-intg:] if intg else ""
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(whole[:lead]).to_bytes(_DIG2BYTES[lead], "big")
    for i in range(lead, intg, 9):
        out += int(whole[i : i + 9]).to_bytes(4, "big")
    full = scale // 9 * 9
    for i in range(0, full, 9):
        out += int(frac[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac[full:]).to_bytes(_DIG2BYTES[scale % 9], "big")
    out[0] ^= 0x80
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


def _c_rem(a: int, b: int) -> int:
    return a % b if a >= 0 else -(-a % b)


def _c_div(a: int, b: int) -> int:
    return a // b if a >= 0 else -(-a // b)


def time2_bytes(  # noqa: PLR0917
    negative: bool, h: int, m: int, s: int, usec: int, fsp: int
) -> bytes:
    """MySQL my_time_packed_to_binary."""
    packed = (((h << 12) | (m << 6) | s) << 24) + usec
    if negative:
        packed = -packed
    if fsp == 0:
        return ((packed >> 24) + 0x800000).to_bytes(3, "big")
    if fsp <= 2:
        frac = _c_div(_c_rem(packed, 1 << 24), 10000)
        return ((packed >> 24) + 0x800000).to_bytes(3, "big") + bytes([frac & 0xFF])
    if fsp <= 4:
        frac = _c_div(_c_rem(packed, 1 << 24), 100)
        return ((packed >> 24) + 0x800000).to_bytes(3, "big") + (frac & 0xFFFF).to_bytes(2, "big")
    return (packed + 0x800000000000).to_bytes(6, "big")


def frac_bytes(usec: int, fsp: int) -> bytes:
    if fsp == 0:
        return b""
    if fsp <= 2:
        return (usec // 10000).to_bytes(1, "big")
    if fsp <= 4:
        return (usec // 100).to_bytes(2, "big")
    return usec.to_bytes(3, "big")


def datetime2_bytes(  # noqa: PLR0917
    y: int, mo: int, d: int, h: int, mi: int, s: int, usec: int, fsp: int
) -> bytes:
    intpart = ((y * 13 + mo) << 22) | (d << 17) | (h << 12) | (mi << 6) | s
    return (intpart + 0x8000000000).to_bytes(5, "big") + frac_bytes(usec, fsp)


def timestamp2_bytes(seconds: int, usec: int, fsp: int) -> bytes:
    return seconds.to_bytes(4, "big") + frac_bytes(usec, fsp)


def date_bytes(y: int, m: int, d: int) -> bytes:
    return ((y << 9) | (m << 5) | d).to_bytes(3, "little")


def lenenc(payload: bytes, prefix: int) -> bytes:
    return len(payload).to_bytes(prefix, "little") + payload


def bitmap(bits: list[bool]) -> bytes:
    value = sum(1 << i for i, bit in enumerate(bits) if bit)
    return value.to_bytes((len(bits) + 7) // 8, "little")


INT_FORMATS = {
    MysqlType.TINY: "<b",
    MysqlType.SHORT: "<h",
    MysqlType.LONG: "<i",
    MysqlType.LONGLONG: "<q",
}


def int_bytes(type_code: int, value: int) -> bytes:
    if type_code == MysqlType.INT24:
        return (value & 0xFFFFFF).to_bytes(3, "little")
    fmt = INT_FORMATS[type_code]
    size = struct.calcsize(fmt)
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


# --- MySQL binary JSON (json_binary.cc) ----------------------------------------------------


@dataclass(frozen=True)
class Opaque:
    """A JSON value MySQL stores opaquely: a field type and its raw bytes."""

    field_type: int
    raw: bytes


def jsonb(value: Any, large: bool = False) -> bytes:
    """A binary JSON document (type byte + value); containers small, or large when asked."""
    kind, data = json_value(value, large)
    return bytes([kind]) + data


def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def json_key_order(name: str) -> tuple[int, bytes]:
    """Json_key_comparator: an object's keys sorted by length, then bytes."""
    return len(name.encode()), name.encode()


def json_value(value: Any, large: bool) -> tuple[int, bytes]:
    """A value's type byte and data; its containers small, or large when asked."""
    if value is None or isinstance(value, bool):
        return 4, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, int):
        if -(1 << 15) <= value < 1 << 15:
            return 5, struct.pack("<h", value)
        if -(1 << 31) <= value < 1 << 31:
            return 7, struct.pack("<i", value)
        if value >= 1 << 63:
            return 10, struct.pack("<Q", value)
        return 9, struct.pack("<q", value)
    if isinstance(value, float):
        return 11, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return 12, _varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return 15, bytes([value.field_type]) + _varlen(len(value.raw)) + value.raw
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: json_key_order(kv[0]))
        return int(large), _container(items, large)
    return 2 + int(large), _container([(None, v) for v in value], large)


def _container(items: list[tuple[str | None, Any]], large: bool) -> bytes:
    """An object (keys given; Json_key_comparator order: length, then bytes) or an array."""
    size, unsigned = (4, "<I") if large else (2, "<H")
    inline = (4, 5, 6, 7, 8) if large else (4, 5, 6)
    is_object = bool(items) and items[0][0] is not None
    count = len(items)
    header = 2 * size + (count * (size + 2) if is_object else 0) + count * (1 + size)
    keys = [k.encode() for k, _ in items if k is not None]
    entries, tail = bytearray(), bytearray()
    for raw in keys:
        entries += struct.pack(unsigned, header + len(tail)) + struct.pack("<H", len(raw))
        tail += raw
    for _, item in items:
        kind, data = json_value(item, large)
        if kind in inline:
            entries += bytes([kind]) + data.ljust(size, b"\0")
        else:
            entries += bytes([kind]) + struct.pack(unsigned, header + len(tail))
            tail += data
    return struct.pack(unsigned, count) + struct.pack(unsigned, header + len(tail)) + entries + tail
