"""Throughput of the schema history's DDL application: statements per second.

    python bench/ddl_apply.py [tables] [statements]

A history of 10,000 tables (20 columns each, default) takes 5,000 statements: ALTERs of held
tables (ADD/MODIFY/CHANGE/DROP with FIRST/AFTER), renames, CREATE/DROP pairs, and a share of
statements on tables the history does not hold (which must cost next to nothing).
"""

from __future__ import annotations

import random
import sys
import time

from bridge.schema.apply import apply_ddl
from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition


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


if __name__ == "__main__":
    main()
