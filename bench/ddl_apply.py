"""Throughput of the schema history's DDL application, and a destination's start with a big
history.

    python bench/ddl_apply.py [tables] [statements]

A history of 10,000 tables (20 columns each, default) takes 5,000 statements: ALTERs of held
tables (ADD/MODIFY/CHANGE/DROP with FIRST/AFTER), renames, CREATE/DROP pairs, and a share of
statements on tables the history does not hold (which must cost next to nothing). Then the
same base and statements are stored as a destination's files (``FileHistoryStore``, records
not yet folded) and timed as a start reads them: load, and replay up to the cursor.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time

from bridge.position import EntryPosition
from bridge.schema.apply import apply_ddl
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition
from bridge.schema.recorder import SchemaRecorder
from bridge.schema.store import FileHistoryStore, StoredHistory


def history(tables: int) -> Schemas:
    schemas = Schemas(Dialect(display_widths=True, mariadb=True), {"app": "utf8mb4"})
    for index in range(tables):
        columns = (
            ColumnDefinition("id", "bigint(20)", False),
            *(ColumnDefinition(f"c{i}", "varchar(64)", True, "utf8mb4") for i in range(19)),
        )
        schemas.tables[("app", f"t{index}")] = TableDefinition(
            "app", f"t{index}", columns, ("id",), "utf8mb4"
        )
    return schemas


def statements(tables: int, count: int) -> list[str]:
    rng = random.Random(7)
    made = []
    for n in range(count):
        table = f"t{rng.randrange(tables)}"
        kind = n % 10
        if kind < 3:
            made.append(f"ALTER TABLE `{table}` ADD COLUMN x{n} int unsigned NOT NULL AFTER c3")
        elif kind < 5:
            made.append(f"ALTER TABLE {table} MODIFY c{rng.randrange(1, 19)} varchar(128) FIRST")
        elif kind == 5:
            made.append(
                f"ALTER TABLE {table} CHANGE c1 c1 text CHARACTER SET latin1, ENGINE=InnoDB"
            )
        elif kind == 6:
            made.append(f"CREATE TABLE IF NOT EXISTS n{n} (id int PRIMARY KEY, v varchar(10))")
        elif kind == 7:
            made.append(f"DROP TABLE IF EXISTS n{n - 1}")
        else:
            made.append(f"ALTER TABLE other.unknown{n} ADD COLUMN z int, DROP COLUMN y")
    return made


def main() -> None:
    tables = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000
    schemas = history(tables)
    made = statements(tables, count)
    started = time.perf_counter()
    for sql in made:
        apply_ddl(schemas, sql, "app")
    elapsed = time.perf_counter() - started
    rate = count / elapsed
    print(f"{count} statements over {tables} tables: {elapsed:.2f} s, {rate:,.0f} statements/s")
    print(f"a start with that history: {start_seconds(tables, made):.2f} s")


def start_seconds(tables: int, made: list[str]) -> float:
    """Seconds a destination's start takes to read a stored history of ``tables`` tables with
    the ``made`` statements recorded after its base, and replay them up to its cursor."""
    records = tuple(
        DdlRecord(Mark("binlog.000001", 1000 + n * 100), "app", sql) for n, sql in enumerate(made)
    )
    with tempfile.TemporaryDirectory() as folder:
        store = FileHistoryStore(folder)
        store.replace(StoredHistory(Mark("binlog.000001", 4), history(tables), ()))
        for record in records:
            store.append(record)
        cursor = EntryPosition(journal_name="binlog.000002", position=4)
        started = time.perf_counter()
        schemas = SchemaRecorder(FileHistoryStore(folder)).schemas_at(cursor)
        elapsed = time.perf_counter() - started
    assert schemas is not None and len(schemas.tables) >= tables
    return elapsed


if __name__ == "__main__":
    main()
