"""The chunk query: keyset pagination on a table's key (docs/snapshots.md, "Shapes").

``SELECT <columns> FROM `db`.`t` WHERE <after the last key> ORDER BY <key> LIMIT n``. The
"after" condition is written out column by column::

    k1 > %s OR (k1 = %s AND k2 > %s) OR (k1 = %s AND k2 = %s AND k3 > %s)

rather than as a row-value comparison ``(k1, k2) > (%s, %s)``: neither MariaDB 11 nor MySQL 9
uses the index's range for a row-value comparison (EXPLAIN says ``index``: a scan from the
start of the key on every chunk, quadratic over a table), while both read the expanded form
as a range (tests/integration/test_snapshot_chunks.py checks EXPLAIN on both servers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def quote_name(name: str) -> str:
    """An identifier in backquotes, a backquote inside doubled (MySQL's rule)."""
    return "`" + name.replace("`", "``") + "`"


def after_key_condition(key_columns: Sequence[str]) -> str:
    """``k1 > %s OR (k1 = %s AND k2 > %s) ...``: rows after a key, in key order."""
    quoted = [quote_name(name) for name in key_columns]
    terms = []
    for i, column in enumerate(quoted):
        equal = [f"{prefix} = %s" for prefix in quoted[:i]]
        term = " AND ".join([*equal, f"{column} > %s"])
        terms.append(f"({term})" if equal else term)
    return " OR ".join(terms)


def after_key_params(last_key: Sequence[Any]) -> tuple[Any, ...]:
    """The parameters of ``after_key_condition`` for the key ``last_key``."""
    params: list[Any] = []
    for i in range(len(last_key)):
        params.extend(last_key[: i + 1])
    return tuple(params)


@dataclass(frozen=True, slots=True)
class ChunkQuery:
    """The two statements reading a table in key order: the first chunk, and the chunk after
    a key (each one statement, so one consistent read view, and no transaction held open)."""

    first: str
    after: str

    def statement(self, last_key: Sequence[Any] | None) -> tuple[str, tuple[Any, ...]]:
        if last_key is None:
            return self.first, ()
        return self.after, after_key_params(last_key)


def chunk_query(
    schema: str, table: str, select_list: str, key_columns: Sequence[str], chunk_size: int
) -> ChunkQuery:
    if not key_columns:
        raise ValueError(f"{schema}.{table}: a chunk query needs key columns")
    source = f"{quote_name(schema)}.{quote_name(table)}"
    order = ", ".join(quote_name(name) for name in key_columns)
    head = f"SELECT {select_list} FROM {source}"
    tail = f"ORDER BY {order} LIMIT {int(chunk_size)}"
    return ChunkQuery(
        first=f"{head} {tail}",
        after=f"{head} WHERE {after_key_condition(key_columns)} {tail}",
    )
