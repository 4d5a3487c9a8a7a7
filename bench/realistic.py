"""Random rows of the shapes the type tests cover, for the realistic variant of workload (a).

Workload (a) writes short ASCII notes, small decimals and one JSON document shape, which is
kind to every decoder; real tables carry strings of any length and script, wide decimals,
microsecond times, NULLs, binary data and enums. Rows come from a seeded ``random.Random``,
so the same scale loads the same bytes on every run and on both servers.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from pymysql.converters import escape_string

SEED = 20261129
TABLE = (
    "CREATE TABLE {schema}.{table} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, qty INT, "
    "note VARCHAR(200), title VARCHAR(200), price DECIMAL(20,6), at DATETIME(6), doc JSON, "
    "payload BLOB, state ENUM('new','paid','shipped','returned','cancelled')) "
    "CHARACTER SET utf8mb4"
)
STATES = ("new", "paid", "shipped", "returned", "cancelled")

# Latin with the characters SQL and JSON escape, then the basic CJK block and emoji (4-byte
# UTF-8, the ones utf8mb3 cannot hold).
LATIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_'\"\\/éüßøçñ"
CJK = (0x4E00, 0x9FFF)
EMOJI = (0x1F300, 0x1FAFF)


def _from_range(rng: random.Random, span: tuple[int, int], length: int) -> str:
    return "".join(chr(rng.randint(*span)) for _ in range(length))


def _latin(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(LATIN, k=length))


def _cjk(rng: random.Random, length: int) -> str:
    return _from_range(rng, CJK, length)


def _emoji(rng: random.Random, length: int) -> str:
    return _from_range(rng, EMOJI, length)


def _mixed(rng: random.Random, length: int) -> str:
    pieces = [rng.choice(SCRIPTS)(rng, 1 + length // 4) for _ in range(4)]
    return "".join(pieces)[:length]


SCRIPTS: tuple[Callable[[random.Random, int], str], ...] = (_latin, _cjk, _emoji)


def text(rng: random.Random, longest: int = 200) -> str:
    """A string of 0..``longest`` characters in one script, or in several."""
    length = rng.randint(0, longest)
    return rng.choice((*SCRIPTS, _mixed))(rng, length)


def _quoted(value: str) -> str:
    return "'" + escape_string(value) + "'"


def _decimal(rng: random.Random) -> str:
    """A DECIMAL(20,6) literal: up to 14 integer digits, either sign."""
    whole = rng.randint(0, 10 ** rng.randint(0, 14) - 1)
    sign = "-" if rng.random() < 0.2 else ""
    return f"{sign}{whole}.{rng.randint(0, 999_999):06d}"


def _datetime(rng: random.Random) -> str:
    return (
        f"'{rng.randint(1970, 2037)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f".{rng.randint(0, 999_999):06d}'"
    )


def _document(rng: random.Random) -> str:
    """A JSON column value: NULL half of the time, else a small nested document."""
    if rng.random() < 0.5:
        return "NULL"
    doc = {
        "sku": text(rng, 24),
        "n": rng.randint(-(2**40), 2**40),
        "ratio": round(rng.uniform(-1e6, 1e6), 4),
        "tags": [text(rng, 12) for _ in range(rng.randint(0, 4))],
        "ok": rng.random() < 0.5,
        "extra": None if rng.random() < 0.5 else {"note": text(rng, 40)},
    }
    return _quoted(json.dumps(doc, ensure_ascii=False))


def _blob(rng: random.Random) -> str:
    size = rng.choice((0, rng.randint(1, 64), rng.randint(64, 1024)))
    return f"X'{rng.randbytes(size).hex()}'"


def row_values(rng: random.Random, key: int) -> str:
    """One row of the realistic table (explicit id ``key``), as SQL."""
    return (
        f"({key},{rng.randint(-(2**31), 2**31 - 1)},{_quoted(text(rng))},{_quoted(text(rng))},"
        f"{_decimal(rng)},{_datetime(rng)},{_document(rng)},{_blob(rng)},"
        f"'{rng.choice(STATES)}')"
    )


def update_set(rng: random.Random) -> str:
    """The SET list of one update: new random values for the columns (a)'s updates change,
    and for the JSON document and the enum."""
    return (
        f"qty={rng.randint(-(2**31), 2**31 - 1)}, note={_quoted(text(rng))}, "
        f"price={_decimal(rng)}, doc={_document(rng)}, state='{rng.choice(STATES)}'"
    )
