"""Record what MariaDB and MySQL make of the DDL corpus (tests/unit/schema/ddl_corpus.py).

Run by hand, with the local services up, after changing the corpus:

    eval "$(deploy/local/services.sh env)"
    var/venv/bin/python -m tests.unit.schema.make_corpus

Each case runs on each server in fresh scratch databases (``{db}``: the current database,
created with CHARACTER SET latin1 so that the database default shows; ``{db2}``: a second one,
utf8mb4); after every statement the definitions information_schema shows are recorded
(``bridge.schema.capture.read_definitions``) in ddl_corpus_expected.json. A statement a server
refuses ends the case on that server: the case is recorded for the other server only. The
unit test (test_ddl_corpus.py) then replays the statements through ``apply_ddl`` for each
server's dialect and compares, without any server.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import pymysql

from bridge.parse.source import server_version, status_statements
from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.definitions import Schemas
from tests.unit.schema.ddl_corpus import CASES

EXPECTED = Path(__file__).with_name("ddl_corpus_expected.json")
SERVERS = {"mariadb": "CANAL_BRIDGE_MYSQL", "mysql": "CANAL_BRIDGE_ORACLE_MYSQL"}


def connect(prefix: str) -> pymysql.connections.Connection[Any]:
    def setting(name: str) -> str:
        value = os.environ.get(f"{prefix}_{name}") or os.environ.get(f"CANAL_BRIDGE_MYSQL_{name}")
        if not value:
            sys.exit(f'{prefix}_{name} is not set: eval "$(deploy/local/services.sh env)"')
        return value

    return pymysql.connect(
        host=setting("HOST"),
        port=int(setting("PORT")),
        user=setting("ADMIN_USER"),
        password=setting("ADMIN_PASSWORD"),
        autocommit=True,
        charset="utf8mb4",
    )


def snapshot(schemas: Schemas, names: dict[str, str]) -> dict[str, Any]:
    """The definitions with the scratch databases' names replaced by their placeholders."""
    tables = {}
    for definition in sorted(schemas.tables.values(), key=lambda d: (d.schema, d.name)):
        tables[f"{names[definition.schema]}.{definition.name}"] = {
            "columns": [
                [c.name, c.column_type, c.nullable, c.charset, c.generated, c.invisible]
                for c in definition.columns
            ],
            "primary_key": list(definition.primary_key),
            "charset": definition.charset,
        }
    return tables


def binlog_position(conn: pymysql.connections.Connection[Any]) -> tuple[str, int]:
    with conn.cursor() as cur:
        cur.execute(status_statements(server_version(conn)).binlog_status)
        row = cur.fetchone()
        assert row is not None, "binary logging is off"
        return str(row[0]), int(row[1])


def binlog_statements(
    conn: pymysql.connections.Connection[Any], since: tuple[str, int], token: str
) -> list[str]:
    """The statements the binlog carries since ``since`` for this case's databases (other
    sessions may write meanwhile: their statements do not name them), ``use `db`; `` cut."""
    found = []
    with conn.cursor() as cur:
        cur.execute(f"SHOW BINLOG EVENTS IN '{since[0]}' FROM {since[1]}")
        for row in cur.fetchall():
            event_type, info = str(row[2]), str(row[5])
            if event_type != "Query" or token not in info or info in ("BEGIN", "COMMIT"):
                continue
            if info.startswith("use `"):
                info = info.split("; ", 1)[1]
            found.append(info)
    return found


def placeholders(text: str, names: dict[str, str]) -> str:
    for name, placeholder in names.items():
        text = text.replace(name, placeholder)
    return text


def run_case(conn: pymysql.connections.Connection[Any], statements: tuple[str, ...]) -> Any:
    token = secrets.token_hex(3)
    names = {f"corpus_{token}_1": "{db}", f"corpus_{token}_2": "{db2}"}
    db, db2 = names
    dialect = read_dialect(conn)
    steps: list[Any] = []
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}` CHARACTER SET latin1")
        cur.execute(f"CREATE DATABASE `{db2}` CHARACTER SET utf8mb4")
        cur.execute(f"USE `{db}`")
        try:
            for sql in statements:
                since = binlog_position(conn)
                try:
                    cur.execute(sql.replace("{db}", db).replace("{db2}", db2))
                except pymysql.MySQLError as exc:
                    return {"refused": f"{sql}: {exc.args}", "steps": steps}
                schemas = read_definitions(conn, dialect, schemas=[db, db2])
                logged = [
                    placeholders(text, names) for text in binlog_statements(conn, since, token)
                ]
                steps.append({"tables": snapshot(schemas, names), "binlog": logged})
        finally:
            cur.execute(f"DROP DATABASE `{db}`")
            cur.execute(f"DROP DATABASE `{db2}`")
    return {"steps": steps}


def main() -> None:
    recorded: dict[str, Any] = {"dialects": {}, "cases": {}}
    for server, prefix in SERVERS.items():
        conn = connect(prefix)
        dialect = read_dialect(conn)
        recorded["dialects"][server] = {
            "display_widths": dialect.display_widths,
            "mariadb": dialect.mariadb,
            "server_charset": dialect.server_charset,
            "lower_case_table_names": dialect.lower_case_table_names,
        }
        with conn.cursor() as cur:
            cur.execute("SELECT @@version")
            recorded["dialects"][server]["version"] = cur.fetchone()[0]  # type: ignore[index]
        for case in CASES:
            result = run_case(conn, case.statements)
            recorded["cases"].setdefault(case.name, {})[server] = result
            if "refused" in result:
                print(f"{server}: {case.name} refused: {result['refused']}")
        conn.close()
    # One line per case and server: small, and a change of the corpus diffs by case.
    lines = [f'{{"dialects": {json.dumps(recorded["dialects"], sort_keys=True)},', '"cases": {']
    cases = sorted(recorded["cases"].items())
    for number, (name, results) in enumerate(cases):
        comma = "," if number < len(cases) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(results, sort_keys=True)}{comma}")
    EXPECTED.write_text("\n".join(lines) + "\n}}\n")
    print(f"recorded {len(CASES)} cases in {EXPECTED}")


if __name__ == "__main__":
    main()
