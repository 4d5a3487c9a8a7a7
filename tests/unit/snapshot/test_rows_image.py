"""Each row-image writer round-trips through the stream's decoder, over many values.

Property style with a seeded generator: a value is written by ``bridge.snapshot.image`` and
decoded by ``bridge.parse.binlog.values``; the text must be the value's own spelling (MySQL's text,
which the snapshot read), and where ``tests/unit/parse/rowbytes.py`` has an independent encoder
of the same storage format the bytes must be its bytes.
"""

from __future__ import annotations

import json
import math
import random
import struct
from datetime import UTC, datetime
from typing import Any

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.javafmt import double_to_string, float_to_string
from bridge.parse.binlog.rows import RowDecoder
from bridge.parse.binlog.table_meta import TableMeta
from bridge.parse.binlog.values import DecodeOptions, decode_value
from bridge.snapshot.image import insert_body, make_writer
from bridge.snapshot.jsonb import binary_json
from tests.unit.parse.rowbytes import (
    col,
    date_bytes,
    datetime2_bytes,
    decimal_bytes,
    int_bytes,
    jsonb,
    time2_bytes,
    timestamp2_bytes,
)
from tests.unit.parse.test_json_diff import render

ROUNDS = 400
UTC_OPTIONS = DecodeOptions(time_zone=UTC)


def _round_trip(column: Any, value: Any, options: DecodeOptions = UTC_OPTIONS) -> str:
    data = make_writer(column)(value)
    text, _, end = decode_value(data, 0, column, options)
    assert end == len(data), "the decoder reads exactly the written bytes"
    return text


@pytest.fixture
def rng() -> random.Random:
    return random.Random(18)


INTEGERS = [(T.TINY, 8), (T.SHORT, 16), (T.INT24, 24), (T.LONG, 32), (T.LONGLONG, 64)]


@pytest.mark.parametrize(("code", "bits"), INTEGERS)
@pytest.mark.parametrize("unsigned", [False, True])
def test_integers(rng: random.Random, code: int, bits: int, unsigned: bool) -> None:
    low, high = (0, (1 << bits) - 1) if unsigned else (-(1 << bits - 1), (1 << bits - 1) - 1)
    column = col(code, unsigned=unsigned)
    for value in [low, high, 0, 1, *(rng.randint(low, high) for _ in range(ROUNDS))]:
        assert _round_trip(column, value) == str(value)
        assert make_writer(column)(value) == int_bytes(code, value)
    for outside in (low - 1, high + 1):
        with pytest.raises(ValueError, match="does not fit column"):
            make_writer(column)(outside)


def test_float_every_float32_comes_back(rng: random.Random) -> None:
    """FLOAT arrives as the double of its float32 (``CAST(c AS DOUBLE)``)."""
    column = col(T.FLOAT)
    for _ in range(ROUNDS * 5):
        raw = rng.getrandbits(32).to_bytes(4, "little")
        (value,) = struct.unpack("<f", raw)
        if not math.isfinite(value):
            continue
        assert make_writer(column)(value) == raw
        assert _round_trip(column, value) == float_to_string(value)


def test_double(rng: random.Random) -> None:
    column = col(T.DOUBLE)
    for _ in range(ROUNDS * 5):
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if not math.isfinite(value):
            continue
        assert _round_trip(column, value) == double_to_string(value)


def _decimal_text(rng: random.Random, precision: int, scale: int) -> str:
    whole = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, precision - scale)))
    fraction = "".join(rng.choice("0123456789") for _ in range(scale))
    text = (whole.lstrip("0") or "0") + (f".{fraction}" if scale else "")
    return ("-" + text) if rng.random() < 0.5 and text.strip("0.") else text


def test_decimal(rng: random.Random) -> None:
    for _ in range(ROUNDS):
        precision = rng.randint(1, 65)
        scale = rng.randint(0, min(precision, 30))
        column = col(T.NEWDECIMAL, precision=precision, scale=scale)
        text = _decimal_text(rng, precision, scale)
        assert make_writer(column)(text.encode()) == decimal_bytes(text, precision, scale)
        assert _round_trip(column, text.encode()) == text
    with pytest.raises(ValueError, match="does not fit"):
        make_writer(col(T.NEWDECIMAL, precision=4, scale=2))(b"123.45")


@pytest.mark.parametrize("bits", [1, 7, 8, 9, 17, 33, 64])
def test_bit(rng: random.Random, bits: int) -> None:
    column = col(T.BIT, bits=bits)
    size = (bits + 7) // 8
    for _ in range(ROUNDS // 4):
        value = rng.getrandbits(bits)
        text = _round_trip(column, value.to_bytes(size, "big"))
        # canal reads BIT(1) as a signed byte; its values are 0 and 1 only
        assert text == str(value)


def test_year() -> None:
    column = col(T.YEAR)
    assert _round_trip(column, 0) == "0000"
    for year in range(1901, 2156):
        assert _round_trip(column, year) == str(year)


def test_enum_and_set_by_index_and_bitmask(rng: random.Random) -> None:
    labels = tuple(f"l{i}" for i in range(300))
    enum = col(T.ENUM, enum_values=labels, max_length=2)
    for index in [0, 1, 300, *(rng.randint(0, 300) for _ in range(ROUNDS))]:
        assert _round_trip(enum, index) == ("", *labels)[index]
        assert _round_trip(enum, index, DecodeOptions(value_mode="canal")) == str(index)
    members = tuple(f"m{i}" for i in range(64))
    bits = col(T.SET, set_values=members, max_length=8)
    for _ in range(ROUNDS):
        mask = rng.getrandbits(64)
        expected = ",".join(m for i, m in enumerate(members) if mask >> i & 1)
        assert _round_trip(bits, mask) == expected


def _random_date(rng: random.Random) -> tuple[int, int, int]:
    return rng.randint(0, 9999), rng.randint(0, 12), rng.randint(0, 31)


def test_date(rng: random.Random) -> None:
    column = col(T.DATE)
    for y, m, d in [(0, 0, 0), (2020, 0, 0), *(_random_date(rng) for _ in range(ROUNDS))]:
        text = f"{y:04d}-{m:02d}-{d:02d}"
        assert make_writer(column)(text.encode()) == date_bytes(y, m, d)
        expected = "0000-00-00" if (y, m, d) == (0, 0, 0) else text
        assert _round_trip(column, text.encode()) == expected


@pytest.mark.parametrize("fsp", range(7))
def test_datetime2(rng: random.Random, fsp: int) -> None:
    column = col(T.DATETIME2, fsp=fsp)
    for _ in range(ROUNDS // 4):
        y, mo, d = _random_date(rng)
        h, mi, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
        micros = rng.randint(0, 999999) // 10 ** (6 - fsp) * 10 ** (6 - fsp)
        text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        if fsp:
            text += "." + f"{micros:06d}"[:fsp]
        written = make_writer(column)(text.encode())
        assert written == datetime2_bytes(y, mo, d, h, mi, s, micros, fsp)
        assert _round_trip(column, text.encode()) == text


@pytest.mark.parametrize("fsp", range(7))
def test_time2_negative_and_fractions(rng: random.Random, fsp: int) -> None:
    column = col(T.TIME2, fsp=fsp)
    cases = [(True, 0, 0, 0, 500000), (True, 838, 59, 59, 0), (False, 0, 0, 0, 0)]
    cases += [
        (
            rng.random() < 0.5,
            rng.randint(0, 838),
            rng.randint(0, 59),
            rng.randint(0, 59),
            rng.randint(0, 999999),
        )
        for _ in range(ROUNDS // 4)
    ]
    for negative, h, m, s, any_micros in cases:
        micros = any_micros // 10 ** (6 - fsp) * 10 ** (6 - fsp)
        text = f"{h:02d}:{m:02d}:{s:02d}" + ("." + f"{micros:06d}"[:fsp] if fsp else "")
        if negative and (h, m, s, micros) != (0, 0, 0, 0):
            text = "-" + text
        written = make_writer(column)(text.encode())
        assert written == time2_bytes(text.startswith("-"), h, m, s, micros, fsp)
        assert _round_trip(column, text.encode()) == text


@pytest.mark.parametrize("fsp", range(7))
def test_timestamp2_from_unix_timestamp(rng: random.Random, fsp: int) -> None:
    column = col(T.TIMESTAMP2, fsp=fsp)
    for _ in range(ROUNDS // 4):
        seconds = rng.randint(1, (1 << 31) - 1)
        micros = rng.randint(0, 999999) // 10 ** (6 - fsp) * 10 ** (6 - fsp)
        epoch = str(seconds) + ("." + f"{micros:06d}"[:fsp] if fsp else "")
        assert make_writer(column)(epoch) == timestamp2_bytes(seconds, micros, fsp)
        moment = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")
        assert _round_trip(column, epoch) == moment + epoch[len(str(seconds)) :]
    assert _round_trip(column, 0).startswith("0000-00-00 00:00:00")


@pytest.mark.parametrize("max_length", [10, 255, 256, 1200])
def test_varchar_length_prefix(rng: random.Random, max_length: int) -> None:
    column = col(T.VARCHAR, charset="utf8mb4", max_length=max_length)
    for _ in range(ROUNDS // 8):
        text = "".join(chr(rng.choice([65, 0xE9, 0x4E2D, 0x1F600])) for _ in range(max_length // 4))
        written = make_writer(column)(text.encode())
        assert written[: 1 if max_length < 256 else 2] == len(text.encode()).to_bytes(
            1 if max_length < 256 else 2, "little"
        )
        assert _round_trip(column, text.encode()) == text


def test_binary_char_drops_its_zero_padding_and_text_char_keeps_its_bytes() -> None:
    binary = col(T.STRING, max_length=4)
    assert make_writer(binary)(b"a\x00b\x00") == b"\x03a\x00b"
    assert _round_trip(binary, b"\x00\x00\x00\x00") == ""
    text = col(T.STRING, charset="latin1", max_length=10)
    assert _round_trip(text, "café".encode("cp1252")) == "café"
    with pytest.raises(ValueError, match="prepare_connection"):
        make_writer(text)("café")


@pytest.mark.parametrize("prefix", [1, 2, 3, 4])
def test_blob_prefix_sizes(rng: random.Random, prefix: int) -> None:
    column = col(T.BLOB, max_length=prefix)
    size = min((1 << 8 * prefix) - 1, 70000)
    raw = rng.randbytes(size)
    written = make_writer(column)(raw)
    assert written[:prefix] == size.to_bytes(prefix, "little")
    assert _round_trip(column, raw, DecodeOptions(binary_encoding="latin1")) == raw.decode(
        "latin-1"
    )
    if prefix == 1:
        with pytest.raises(ValueError, match="length prefix"):
            make_writer(column)(b"x" * 256)


def test_vector_and_geometry_carry_their_bytes() -> None:
    vector = col(T.VECTOR, max_length=4)
    assert _round_trip(vector, struct.pack("<3f", 1.5, -2, 3.25)) == (
        "[1.50000e+00,-2.00000e+00,3.25000e+00]"
    )
    geometry = col(T.GEOMETRY, max_length=4)
    point = b"\xe6\x10\x00\x00\x01\x01\x00\x00\x00" + struct.pack("<dd", 1, 2)
    assert _round_trip(geometry, point, DecodeOptions(binary_encoding="base64")) == (
        "5hAAAAEBAAAAAAAAAAAA8D8AAAAAAAAAQA=="
    )


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([rng.randint(-(1 << 63), (1 << 63) - 1), rng.randint(-40000, 40000)])
    if kind == 2:
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        return value if math.isfinite(value) else 0.5
    if kind in (3, 4):
        return _random_text(rng)
    if kind == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_random_text(rng): _random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def _random_text(rng: random.Random) -> str:
    characters = [0, 9, 34, 92, 65, 0xE9, 0x4E2D, 0x1F600]
    return "".join(chr(rng.choice(characters)) for _ in range(rng.randrange(6)))


def test_json_text_renders_as_the_binary_document(rng: random.Random) -> None:
    """The server's text parsed back renders exactly as the binary document it printed (here
    written by the tests' own small-format encoder)."""
    for _ in range(ROUNDS):
        document = _random_json(rng)
        text = json.dumps(document, ensure_ascii=rng.random() < 0.5)
        assert render(binary_json(text)) == render(jsonb(document))


def test_json_numbers_past_int64() -> None:
    assert render(binary_json("[18446744073709551615, 18446744073709551616, 1e20, 3.0]")) == (
        "[18446744073709551615, 1.8446744073709552E19, 1.0E20, 3.0]"
    )
    assert render(binary_json('{"b": 1, "aa": 2, "a": 3}')) == '{"a": 3, "b": 1, "aa": 2}'
    big = binary_json(json.dumps({"x": "y" * 70000, "k": list(range(10))}))
    assert big[0] == 1  # a large object
    assert render(big) == '{"k": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "x": "' + "y" * 70000 + '"}'


def test_a_row_image_with_nulls_decodes_as_the_stream_would() -> None:
    """Eleven columns (two-byte bitmaps), NULLs among them, through the stream's RowDecoder."""
    columns = (
        *(col(T.LONG, index=i, name=f"c{i}", is_key=i == 0) for i in range(10)),
        col(T.VARCHAR, index=10, name="s", charset="utf8mb4", max_length=40),
    )
    table = TableMeta("db", "t", columns)
    values = [1, None, 3, None, None, 6, 7, 8, 9, None, "ü".encode()]
    writers = [make_writer(c) for c in columns]
    (row,) = RowDecoder(table, options=UTC_OPTIONS).decode("insert", insert_body(writers, values))
    assert row.before == ()
    assert [(c.name, c.is_null, c.value, c.updated, c.is_key) for c in row.after] == [
        (
            c.name,
            v is None,
            "" if v is None else (str(v) if c.index < 10 else "ü"),
            True,
            c.index == 0,
        )
        for c, v in zip(columns, values, strict=True)
    ]
