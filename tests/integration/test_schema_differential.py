"""The schema history against the real servers: random DDL sequences, compared after each step.

Seeded random ALTER/RENAME/CREATE LIKE statements run on scratch tables; after every statement
the server accepted, ``apply_ddl``'s definitions must equal what ``read_definitions`` reads
from information_schema (which also tests capture: it is the oracle's reader). A statement the
server refuses is skipped (the binlog would not carry it). A failure prints the seed and the
whole sequence so far, to replay it.
"""

from __future__ import annotations

import random
from typing import Any

import pymysql
import pytest

from bridge.schema.apply import apply_ddl
from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.definitions import Schemas, TableDefinition

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

STATEMENTS_PER_SEED = 100
SEEDS = (11, 22, 33)
TYPES = (
    "int", "int unsigned", "bigint", "tinyint(1)", "smallint(3) unsigned zerofill",
    "mediumint", "decimal(8,2)", "decimal", "float", "double", "float(7,3)", "bit(3)", "date",
    "datetime(3)", "timestamp NULL", "time", "year", "char(5)", "varchar(20)",
    "varchar(40) CHARACTER SET latin1", "text", "tinytext", "mediumtext CHARACTER SET utf8mb4",
    "text(300)", "blob", "varbinary(10)", "binary(4)", "enum('a','b')", "enum('a','b','c')",
    "set('x','y')", "json", "varchar(10) COLLATE utf8mb4_bin", "char(3) CHARACTER SET binary",
    "varchar(12) CHARACTER SET utf8mb3", "longtext CHARACTER SET latin1", "serial",
    "bool", "double precision", "nchar(4)", "long varchar",
)  # fmt: skip
KEY_TYPES = ("int", "bigint unsigned", "char(8)", "varchar(16)", "smallint")
# Not ucs2/utf16/utf32: information_schema shows their ENUM/SET labels garbled ('?' on MariaDB,
# '' on MySQL), while the history keeps the labels as written.
CHARSETS = ("latin1", "utf8mb4", "utf8mb3", "latin2", "ascii")


class Generator:
    """Random statements that fit the tables as they are now (read from the server)."""

    def __init__(self, seed: int, schema: str) -> None:
        self.rng = random.Random(seed)
        self.schema = schema
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def statement(self, tables: dict[tuple[str, str], TableDefinition]) -> str:
        rng = self.rng
        mine = sorted((d for d in tables.values()), key=lambda d: d.name)
        if len(mine) < 2 or rng.random() < 0.04:
            name = self.fresh("t")
            key = rng.choice(KEY_TYPES)
            return (
                f"CREATE TABLE {name} (id {key} NOT NULL, a {rng.choice(TYPES)}, PRIMARY KEY (id))"
            )
        table = rng.choice(mine)
        t = f"`{table.name}`"
        columns = [c.name for c in table.columns]
        column = rng.choice(columns)
        kind = rng.choice(
            ["add", "add", "add", "drop", "modify", "modify", "change", "rename_column",
             "primary", "rename_table", "convert", "default_charset", "enum", "like_swap",
             "multi", "invisible"]
        )  # fmt: skip
        where = rng.choice(["", " FIRST", f" AFTER `{column}`"])
        if kind == "add":
            return f"ALTER TABLE {t} ADD COLUMN {self.fresh('c')} {rng.choice(TYPES)}{where}"
        if kind == "drop" and len(columns) > 1:
            return f"ALTER TABLE {t} DROP COLUMN `{column}`"
        if kind == "modify":
            null = rng.choice(["", " NOT NULL", " NULL"])
            return f"ALTER TABLE {t} MODIFY `{column}` {rng.choice(TYPES)}{null}{where}"
        if kind == "change":
            return f"ALTER TABLE {t} CHANGE `{column}` {self.fresh('r')} {rng.choice(TYPES)}{where}"
        if kind == "rename_column":
            return f"ALTER TABLE {t} RENAME COLUMN `{column}` TO {self.fresh('n')}"
        if kind == "primary":
            keyed = rng.sample(columns, k=min(len(columns), rng.choice([1, 2])))
            drop = "DROP PRIMARY KEY, " if table.primary_key else ""
            parts = ", ".join(f"`{c}`" for c in keyed)
            return f"ALTER TABLE {t} {drop}ADD PRIMARY KEY ({parts})"
        if kind == "rename_table":
            if rng.random() < 0.5:
                return f"RENAME TABLE {t} TO {self.fresh('t')}"
            return f"ALTER TABLE {t} RENAME TO {self.fresh('t')}"
        if kind == "convert":
            return f"ALTER TABLE {t} CONVERT TO CHARACTER SET {rng.choice(CHARSETS)}"
        if kind == "default_charset":
            return (
                f"ALTER TABLE {t} DEFAULT CHARSET={rng.choice(CHARSETS)}, "
                f"ADD {self.fresh('c')} varchar(5)"
            )
        if kind == "enum":
            labels = ",".join(f"'{x}'" for x in rng.sample("abcdefg", k=rng.randint(1, 4)))
            return f"ALTER TABLE {t} MODIFY `{column}` {rng.choice(['enum', 'set'])}({labels})"
        if kind == "like_swap":
            ghost = self.fresh("_gho")
            return f"CREATE TABLE {ghost} LIKE {t}"
        if kind == "invisible":
            return f"ALTER TABLE {t} ADD COLUMN {self.fresh('h')} int INVISIBLE{where}"
        if kind == "multi":
            other = self.fresh("c")
            return (
                f"ALTER TABLE {t} ADD COLUMN {other} {rng.choice(TYPES)} FIRST, "
                f"MODIFY `{column}` {rng.choice(TYPES)} AFTER {other}, ENGINE=InnoDB"
            )
        return f"ALTER TABLE {t} ADD COLUMN {self.fresh('c')} int"

    def swap(self, tables: dict[tuple[str, str], TableDefinition]) -> str | None:
        """gh-ost's cut-over when a ghost table exists: the ghost takes the original's name."""
        ghosts = [d.name for d in tables.values() if d.name.startswith("_gho")]
        originals = [d.name for d in tables.values() if not d.name.startswith("_")]
        if not ghosts or not originals:
            return None
        ghost, original = self.rng.choice(ghosts), self.rng.choice(originals)
        return f"RENAME TABLE `{original}` TO `_{original}_del`, `{ghost}` TO `{original}`"


def run(conn: pymysql.connections.Connection[Any], schema: str, seed: int) -> int:
    dialect = read_dialect(conn)
    history = read_definitions(conn, dialect, schemas=[schema])
    generator = Generator(seed, schema)
    done: list[str] = []
    applied = 0
    with conn.cursor() as cur:
        cur.execute(f"USE `{schema}`")
        for _ in range(STATEMENTS_PER_SEED):
            server = read_definitions(conn, dialect, schemas=[schema])
            sql = generator.swap(server.tables) if generator.rng.random() < 0.05 else None
            sql = sql or generator.statement(server.tables)
            try:
                cur.execute(sql)
            except pymysql.MySQLError:
                continue  # refused: not in the binlog
            done.append(sql)
            applied += 1
            try:
                apply_ddl(history, sql, schema)
            except Exception as exc:
                pytest.fail(f"{_replay_message(seed, done)}\n{exc!r}")
            expected = read_definitions(conn, dialect, schemas=[schema])
            assert _tables(history) == _tables(expected), (
                f"{_replay_message(seed, done)}\n{_differences(history, expected)}"
            )
    return applied


def _tables(schemas: Schemas) -> dict[tuple[str, str], TableDefinition]:
    return dict(schemas.tables)


def _differences(history: Schemas, expected: Schemas) -> str:
    """What differs, table by table and column by column (history first, then server)."""
    lines = []
    for key in sorted(set(history.tables) | set(expected.tables)):
        mine, theirs = history.tables.get(key), expected.tables.get(key)
        if mine == theirs:
            continue
        if mine is None or theirs is None:
            lines.append(f"{key[1]}: history {mine is not None}, server {theirs is not None}")
            continue
        if (mine.primary_key, mine.charset) != (theirs.primary_key, theirs.charset):
            ours, server = (mine.primary_key, mine.charset), (theirs.primary_key, theirs.charset)
            lines.append(f"{key[1]}: key and charset {ours} != {server}")
        for left, right in zip(mine.columns, theirs.columns, strict=False):
            if left != right:
                lines.append(f"{key[1]}: {left}\n   server: {right}")
        if len(mine.columns) != len(theirs.columns):
            lines.append(f"{key[1]}: {len(mine.columns)} columns != {len(theirs.columns)}")
    return "\n".join(lines)


def _replay_message(seed: int, done: list[str]) -> str:
    lines = "\n".join(f"  {i + 1}. {sql}" for i, sql in enumerate(done))
    return f"seed {seed}: the history is wrong after statement {len(done)}:\n{lines}"


@pytest.mark.parametrize("seed", SEEDS)
def test_random_ddl_matches_information_schema(
    admin_connection: pymysql.connections.Connection,  # type: ignore[type-arg]
    scratch_schema: str,
    seed: int,
) -> None:
    applied = run(admin_connection, scratch_schema, seed)
    assert applied >= STATEMENTS_PER_SEED // 2  # most statements fit: the test really ran
