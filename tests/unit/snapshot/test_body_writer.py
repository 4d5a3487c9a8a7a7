"""The compiled INSERT body writer against the Python one (``bridge.snapshot.image``), on
random rows of every column type a snapshot writes: the same bytes, or the same error. The
values are mostly what a snapshot's SELECT gives (which the compiled writer must take itself,
none handed to Python), plus values it must leave to the Python writer: out of range, of
another type, text of another form."""

from __future__ import annotations

import functools
import random
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.snapshot.image import make_writer, native_spec, rows_body
from tests.native_paths import compiled_module
from tests.unit.parse.rowbytes import col

Value = Callable[[random.Random], Any]


def _int(bits: int, unsigned: bool) -> Value:
    low, high = (0, 1 << bits) if unsigned else (-(1 << bits - 1), 1 << bits - 1)
    return lambda rng: rng.choice([low, high - 1, 0, rng.randrange(low, high)])


def _text(chars: str, most: int) -> Value:
    return lambda rng: "".join(rng.choice(chars) for _ in range(rng.randrange(most))).encode()


def _decimal(precision: int, scale: int) -> Value:
    def value(rng: random.Random) -> bytes:
        whole = "".join(
            rng.choice("0123456789") for _ in range(rng.randrange(precision - scale + 1))
        )
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randrange(scale + 1)))
        text = rng.choice(["", "-", "+"]) + (whole or "0") + (f".{fraction}" if scale else "")
        return text.encode()

    return value


def _datetime(rng: random.Random) -> bytes:
    when = f"{rng.randrange(10000):04}-{rng.randrange(13):02}-{rng.randrange(32):02}"
    clock = f"{rng.randrange(24):02}:{rng.randrange(60):02}:{rng.randrange(60):02}"
    digits = rng.randrange(7)
    return (
        f"{when} {clock}" + (f".{rng.randrange(10**digits):0{digits}}" if digits else "")
    ).encode()


def _timestamp(rng: random.Random) -> bytes:
    digits = rng.randrange(7)
    fraction = f".{rng.randrange(10**digits):0{digits}}" if digits else ""
    return f"{rng.randrange(1 << 32)}{fraction}".encode()


def _time(rng: random.Random) -> bytes:
    sign = rng.choice(["", "-"])
    return f"{sign}{rng.randrange(839)}:{rng.randrange(60):02}:{rng.randrange(60):02}".encode()


# (column, the values a SELECT gives for it)
COLUMNS: list[tuple[ColumnMeta, Value]] = [
    (col(T.TINY, unsigned=False), _int(8, False)),
    (col(T.TINY, unsigned=True), _int(8, True)),
    (col(T.SHORT), _int(16, False)),
    (col(T.INT24, unsigned=True), _int(24, True)),
    (col(T.LONG), _int(32, False)),
    (col(T.LONGLONG), _int(64, False)),
    (col(T.YEAR), lambda rng: rng.choice([0, 1901, 2155, rng.randrange(1901, 2156)])),
    (col(T.FLOAT), lambda rng: float(struct_float(rng))),
    (col(T.DOUBLE), lambda rng: rng.choice([0.0, -1.5e300, rng.uniform(-1e9, 1e9)])),
    (col(T.NEWDECIMAL, precision=12, scale=2), _decimal(12, 2)),
    (col(T.NEWDECIMAL, precision=65, scale=30), _decimal(65, 30)),
    (col(T.NEWDECIMAL, precision=9, scale=0), _decimal(9, 0)),
    (col(T.DATE), lambda rng: _datetime(rng)[:10]),
    (col(T.DATETIME2, fsp=0), lambda rng: _datetime(rng)[:19]),
    (col(T.DATETIME2, fsp=3), _datetime),
    (col(T.DATETIME2, fsp=6), _datetime),
    (col(T.TIMESTAMP2, fsp=0), lambda rng: _timestamp(rng).split(b".")[0]),
    (col(T.TIMESTAMP2, fsp=2), _timestamp),
    (col(T.TIME2, fsp=0), _time),
    (col(T.VARCHAR, charset="utf8mb4", max_length=40), _text("aé😀 \x00", 10)),
    (col(T.VARCHAR, max_length=1000), _text("ab\x00", 300)),
    (col(T.STRING, charset="utf8mb4", max_length=32), _text("ab ", 8)),
    (col(T.STRING, max_length=8), _text("a\x00", 8)),  # BINARY(8): trailing 0x00 dropped
    (col(T.BLOB, max_length=2), _text("xyz", 50)),
    (col(T.BLOB, max_length=4), _text("xyz\x00", 50)),
    (col(T.ENUM, max_length=1), lambda rng: rng.randrange(1, 256)),
    (col(T.SET, max_length=8), lambda rng: rng.randrange(1 << 63)),
    (col(T.BIT, bits=12), lambda rng: rng.randrange(1 << 12).to_bytes(2, "big")),
]

# Values the compiled writer must hand to the Python writer (which writes them or raises).
ODD: list[tuple[ColumnMeta, Any]] = [
    (col(T.TINY), 128),
    (col(T.TINY), "7"),
    (col(T.LONGLONG, unsigned=True), (1 << 64) - 1),
    (col(T.LONGLONG, unsigned=True), 1 << 64),
    (col(T.YEAR), 2156),
    (col(T.FLOAT), 1e300),
    (col(T.FLOAT), 3),
    (col(T.DOUBLE), Decimal("1.5")),
    (col(T.NEWDECIMAL, precision=5, scale=2), b"1000.5"),
    (col(T.NEWDECIMAL, precision=5, scale=2), b"1.005"),
    (col(T.NEWDECIMAL, precision=5, scale=2), b"1e3"),
    (col(T.NEWDECIMAL, precision=5, scale=2), Decimal("-12.5")),
    (col(T.DATE), b"2024-1-02"),
    (col(T.DATETIME2, fsp=6), b"2024-01-02T03:04:05"),
    (col(T.DATETIME2, fsp=6), b"2024-01-02 03:04:05.1234567"),
    (col(T.TIMESTAMP2), b"4294967296"),
    (col(T.VARCHAR, max_length=10), "text, not bytes"),
    (col(T.VARCHAR, max_length=10), bytearray(b"ab")),
    (col(T.BLOB, max_length=1), b"x" * 256),
    (col(T.ENUM, max_length=1), 256),
    (col(T.ENUM, max_length=1), -1),
]


def struct_float(rng: random.Random) -> float:
    """A float32's value (what CAST(f AS DOUBLE) gives), NaN and infinities included."""
    return float(struct.unpack("<f", rng.randbytes(4))[0]) if rng.random() < 0.5 else 0.25


def _both(columns: list[ColumnMeta], rows: list[tuple[Any, ...]]) -> tuple[Any, Any, int]:
    """(Python's body or error, the compiled body or error, values the compiled one declined)."""
    writers = [make_writer(c) for c in columns]
    compiled = compiled_module().ImageWriter([native_spec(c) for c in columns], writers)
    outcomes = []
    for write in (functools.partial(rows_body, writers), compiled.body):
        try:
            outcomes.append(write(rows))
        except Exception as exc:  # the same error both ways, whatever it is
            outcomes.append((type(exc), str(exc)))
    return outcomes[0], outcomes[1], compiled.declined


@pytest.mark.parametrize("seed", range(20))
def test_random_rows_of_every_type_give_pythons_bytes(seed: int) -> None:
    rng = random.Random(seed)
    chosen = rng.sample(COLUMNS, rng.randrange(1, len(COLUMNS) + 1))
    columns = [c for c, _ in chosen]
    rows = [
        tuple(None if rng.random() < 0.1 else value(rng) for _, value in chosen)
        for _ in range(rng.randrange(1, 40))
    ]
    python, compiled, declined = _both(columns, rows)
    assert isinstance(python, bytes), python  # the values a SELECT gives are all written
    assert compiled == python
    assert declined == 0  # ... and by the compiled writer itself


@pytest.mark.parametrize(("column", "value"), ODD, ids=[f"{c.type_code}-{v!r:.20}" for c, v in ODD])
def test_values_off_the_plain_path_are_pythons_to_write_or_refuse(
    column: ColumnMeta, value: Any
) -> None:
    python, compiled, declined = _both([column], [(value,)])
    assert compiled == python
    assert declined == 1


def test_short_rows_are_refused_and_extra_values_ignored() -> None:
    columns = [col(T.LONG), col(T.VARCHAR, max_length=10)]
    writers = [make_writer(c) for c in columns]
    compiled = compiled_module().ImageWriter([native_spec(c) for c in columns], writers)
    assert compiled.body([(1, b"a", "extra")]) == rows_body(writers, [(1, b"a")])
    with pytest.raises(ValueError, match="a row of 1 values for 2 columns"):
        compiled.body([(1,)])
