"""apply_ddl against what MariaDB and MySQL made of the DDL corpus, without any server.

The corpus (ddl_corpus.py) holds the statements; ddl_corpus_expected.json what each server's
information_schema showed after each of them, and the statements its binlog carried for it
(make_corpus.py records both). Each case is replayed per server: the binlog's statements are
applied (that is what the history reads: the server rewrites a few, e.g. CREATE TABLE ...
SELECT becomes a CREATE TABLE with the columns spelled out) after the statement as written
has been parsed too, and the definitions are compared after every step.

Coverage (recorded on MariaDB 10.11.19 and MySQL 9.7.4): 580 statements in 181 cases. MariaDB
ran 571 of them, MySQL 569 (a case stops at the first statement its server refuses: MariaDB
refuses inline CONSTRAINT ... CHECK on a column, NOT NULL on a generated column, VISIBLE,
DROP CHECK, VECTOR, GEOMCOLLECTION, and dropping a column of a multi-column primary key; MySQL
refuses PERSISTENT, CREATE OR REPLACE, UUID/INET types, ALTER ONLINE and the IF [NOT] EXISTS
clauses). apply_ddl gives the recorded definitions after every one of the 1,140 statements
run, as logged and as written, except the two CREATE TABLE ... SELECT as written: they raise
UnreadableDdl by design (the binlog carries them rewritten, and those forms apply correctly).
Not covered by the corpus: ENUM/SET labels of ucs2/utf16/utf32 columns (information_schema
shows them garbled, so they cannot be recorded), MariaDB's CONVERT PARTITION/TABLE, sequences
and system-versioned tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridge.schema.apply import apply_ddl
from bridge.schema.definitions import Dialect, Schemas
from bridge.schema.exceptions import UnreadableDdl
from tests.unit.schema.ddl_corpus import CASES

EXPECTED = json.loads(Path(__file__).with_name("ddl_corpus_expected.json").read_text())
NAMES = {"{db}": "db1", "{db2}": "db2"}


def real(text: str) -> str:
    for placeholder, name in NAMES.items():
        text = text.replace(placeholder, name)
    return text


def dialect_of(server: str) -> Dialect:
    recorded = EXPECTED["dialects"][server]
    return Dialect(
        recorded["display_widths"],
        recorded["mariadb"],
        recorded["server_charset"],
        recorded["lower_case_table_names"],
    )


def snapshot(schemas: Schemas) -> dict[str, Any]:
    return {
        f"{d.schema}.{d.name}": {
            "columns": [
                [c.name, c.column_type, c.nullable, c.charset, c.generated, c.invisible]
                for c in d.columns
            ],
            "primary_key": list(d.primary_key),
            "charset": d.charset,
        }
        for d in sorted(schemas.tables.values(), key=lambda d: (d.schema, d.name))
    }


def expected_tables(tables: dict[str, Any]) -> dict[str, Any]:
    return {real(name): definition for name, definition in tables.items()}


def replay(server: str, statements: tuple[str, ...], steps: list[Any]) -> None:
    schemas = Schemas(dialect_of(server), {"db1": "latin1", "db2": "utf8mb4"})
    for index, (sql, step) in enumerate(zip(statements, steps, strict=False)):
        expected = expected_tables(step["tables"])
        where = f"{server}, statement {index + 1}: {sql}"
        # The statement as written must give the same definitions, except CREATE TABLE ...
        # SELECT, which the binlog carries rewritten with its columns spelled out.
        written = schemas.copy()
        try:
            apply_ddl(written, real(sql), "db1")
        except UnreadableDdl:
            assert " SELECT " in sql.upper(), where
        else:
            assert snapshot(written) == expected, f"{where} (as written)"
        for text in step["binlog"] or [sql]:
            apply_ddl(schemas, real(text), "db1")
        assert snapshot(schemas) == expected, f"{where} (as logged: {step['binlog']})"


def _params() -> list[Any]:
    params = []
    for case in CASES:
        for server in ("mariadb", "mysql"):
            recorded = EXPECTED["cases"].get(case.name, {}).get(server)
            if recorded is None:
                continue
            params.append(pytest.param(case, server, recorded, id=f"{case.name}-{server}"))
    return params


@pytest.mark.parametrize(("case", "server", "recorded"), _params())
def test_corpus(case: Any, server: str, recorded: dict[str, Any]) -> None:
    replay(server, case.statements, recorded["steps"])


def test_the_corpus_is_recorded_and_large() -> None:
    recorded = EXPECTED["cases"]
    assert {c.name for c in CASES} <= set(recorded), "run make_corpus.py"
    for server in ("mariadb", "mysql"):
        steps = sum(len(recorded[c.name][server]["steps"]) for c in CASES)
        assert steps >= 300, (server, steps)
