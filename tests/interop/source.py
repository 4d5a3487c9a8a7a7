"""The mixed workload the interop tests stream, with every row change it makes as the source
itself shows it: each step reads the rows it touches before and after (in its own transaction),
so the expected changes are the source's rows, not numbers written into the test.

Steps: single and multi-row INSERTs, a transaction mixing INSERT and UPDATE, NULLs set and
cleared, a DELETE, an ``ALTER TABLE ... ADD COLUMN`` (DDL) and changes after it.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tests.conftest import MysqlEndpoint, connect_admin

TABLE = "items"
CREATE = (
    f"CREATE TABLE {{schema}}.{TABLE} (id INT PRIMARY KEY, note VARCHAR(40), amount DECIMAL(10,2), "
    "qty BIGINT, ratio DOUBLE, level TINYINT, born DATE, seen DATETIME(3), payload VARBINARY(16))"
)
# The same table in Flink's SQL types (the ``extra`` column added later is not declared:
# Flink's JSON format ignores fields its schema does not name).
FLINK_FIELDS = {
    "id": "INT",
    "note": "STRING",
    "amount": "DECIMAL(10, 2)",
    "qty": "BIGINT",
    "ratio": "DOUBLE",
    "level": "TINYINT",
    "born": "DATE",
    "seen": "TIMESTAMP(3)",
    "payload": "BYTES",
}
FLINK_ROW = "ROW<" + ", ".join(f"{name} {kind}" for name, kind in FLINK_FIELDS.items()) + ">"
ADDED_COLUMN = "extra"
DDL = f"ALTER TABLE {{schema}}.{TABLE} ADD COLUMN {ADDED_COLUMN} INT NULL"

# The java.sql.Types code canal gives each column (INTEGER, VARCHAR, DECIMAL, BIGINT, DOUBLE,
# TINYINT, DATE, TIMESTAMP; binary types report BLOB, as canal does).
CANAL_SQL_TYPES = {
    "id": 4,
    "note": 12,
    "amount": 3,
    "qty": -5,
    "ratio": 8,
    "level": -6,
    "born": 91,
    "seen": 93,
    "payload": 2004,
    ADDED_COLUMN: 4,
}

Row = dict[str, Any]
ROW_VALUES = "(%s, %s, %s, %s, %s, %s, %s, %s, %s)"


def _row(key: int, note: str | None, *, nulls: bool = False) -> tuple[Any, ...]:
    if nulls:
        return (key, note, None, None, None, None, None, None, None)
    return (
        key,
        note,
        Decimal(f"{key}.50"),
        2**40 + key,
        key + 0.25,
        -key,
        datetime.date(2020, 1, key),
        datetime.datetime(2024, 2, 29, 23, 59, 58, 123000 * key % 1000000),
        bytes([0, 255, key, 0x80]),
    )


# (statements of one transaction, the ids they touch)
STEPS: list[tuple[list[tuple[str, tuple[Any, ...]]], list[int]]] = [
    ([(f"INSERT INTO {{schema}}.{TABLE} VALUES {ROW_VALUES}", _row(1, "first ünïcode 😀"))], [1]),
    (
        [
            (f"INSERT INTO {{schema}}.{TABLE} VALUES {ROW_VALUES}", _row(2, None, nulls=True)),
            (f"INSERT INTO {{schema}}.{TABLE} VALUES {ROW_VALUES}", _row(3, 'say "hi"\\')),
            (
                f"UPDATE {{schema}}.{TABLE} SET note = %s, amount = amount + 1 WHERE id = 1",
                ("one",),
            ),
        ],
        [2, 3, 1],
    ),
    (
        [
            (
                f"INSERT INTO {{schema}}.{TABLE} VALUES {ROW_VALUES}, {ROW_VALUES}",
                _row(4, "four") + _row(5, "five"),
            )
        ],
        [4, 5],
    ),
    ([(f"UPDATE {{schema}}.{TABLE} SET note = 'was null', qty = 7 WHERE id = 2", ())], [2]),
    ([(f"UPDATE {{schema}}.{TABLE} SET note = NULL, ratio = NULL WHERE id = 3", ())], [3]),
    ([(f"DELETE FROM {{schema}}.{TABLE} WHERE id = 4", ())], [4]),
    ([(DDL, ())], []),
    (
        [
            (f"INSERT INTO {{schema}}.{TABLE} (id, note, extra) VALUES (6, 'six', 7)", ()),
            (f"UPDATE {{schema}}.{TABLE} SET extra = 1 WHERE id = 5", ()),
        ],
        [6, 5],
    ),
    ([(f"DELETE FROM {{schema}}.{TABLE} WHERE id = 1", ())], [1]),
]


@dataclass(frozen=True)
class Change:
    """One row change as the source showed it: the row before and after (None when absent)."""

    type: str  # INSERT | UPDATE | DELETE
    before: Row | None
    after: Row | None

    def changed(self) -> set[str]:
        assert self.before is not None and self.after is not None
        return {c for c in self.after if self.before.get(c) != self.after[c]}


def create_table(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(CREATE.format(schema=f"`{schema}`"))
    conn.close()


def run_workload(mysql: MysqlEndpoint, schema: str) -> list[Change]:
    """Apply ``STEPS`` (one transaction each) and return the row changes in commit order."""
    conn = connect_admin(mysql)
    changes: list[Change] = []
    with conn.cursor() as cur:
        for statements, ids in STEPS:
            cur.execute("BEGIN")
            for sql, params in statements:
                before = {key: _read(cur, schema, key) for key in ids}
                cur.execute(sql.format(schema=f"`{schema}`"), params)
                after = {key: _read(cur, schema, key) for key in ids}
                for key in ids:
                    if before[key] != after[key]:
                        changes.append(_change(before[key], after[key]))
            cur.execute("COMMIT")
    conn.close()
    return changes


def final_rows(mysql: MysqlEndpoint, schema: str) -> dict[int, Row]:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{schema}`.{TABLE}")
        names = [d[0] for d in cur.description]
        rows = {int(r[0]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    conn.close()
    return rows


def column_types(mysql: MysqlEndpoint, schema: str) -> dict[str, str]:
    """Each column's declared type as the server prints it (canal's ``mysqlType``)."""
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (schema, TABLE),
        )
        types = {str(name): str(kind) for name, kind in cur.fetchall()}
    conn.close()
    return types


def _read(cur: Any, schema: str, key: int) -> Row | None:
    cur.execute(f"SELECT * FROM `{schema}`.{TABLE} WHERE id = %s", (key,))
    found = cur.fetchone()
    return None if found is None else dict(zip([d[0] for d in cur.description], found, strict=True))


def _change(before: Row | None, after: Row | None) -> Change:
    kind = "INSERT" if before is None else "DELETE" if after is None else "UPDATE"
    return Change(kind, before, after)


# ------------------------------------------------------------------ how each consumer spells values


def canal_text(value: Any) -> str | None:
    """A source value as canal's FlatMessage (and its protobuf Column.value) spells it:
    DATETIME(3) to the millisecond, binary one char per byte (latin1, canal's default)."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def flink_text(value: Any) -> str | None:
    """A source value as tests/interop/java prints the Flink field it became: timestamps to the
    microsecond, BYTES base64 (the JSON format decodes base64 strings into BYTES)."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def spelled(row: Row | None, text: Callable[[Any], str | None], columns: Any = None) -> Row | None:
    if row is None:
        return None
    return {c: text(v) for c, v in row.items() if columns is None or c in columns}
