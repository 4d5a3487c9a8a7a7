"""Table definitions read from a server's information_schema: the history's starting point.

The history captures the definitions at a known binlog position and applies every DDL after
it (``bridge.schema.apply``). Reading them costs one query per information_schema table for
all the tables wanted, never one per table: 10,000 tables load in seconds.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition

if TYPE_CHECKING:  # pymysql's Connection is generic to the type checker only
    import pymysql

    Connection = pymysql.connections.Connection[Any]
Name = tuple[str, str]

# MySQL dropped integer display widths from COLUMN_TYPE in 8.0.19.
_WIDTHLESS_SINCE = (8, 0, 19)
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def read_dialect(conn: Connection) -> Dialect:
    """How the server behind ``conn`` spells and resolves what a DDL leaves implicit."""
    rows = _rows(conn, "SELECT @@version, @@character_set_server, @@lower_case_table_names")
    version, charset, lower_case = rows[0]
    mariadb = "mariadb" in str(version).lower()
    match = _VERSION.match(str(version))
    number = tuple(int(n) for n in match.groups()) if match else (0, 0, 0)
    return Dialect(
        display_widths=mariadb or number < _WIDTHLESS_SINCE,
        mariadb=mariadb,
        server_charset=_charset(str(charset)),
        lower_case_table_names=int(lower_case),
    )


def read_definitions(
    conn: Connection,
    dialect: Dialect,
    tables: Iterable[Name] | None = None,
    schemas: Iterable[str] | None = None,
) -> Schemas:
    """The databases' default charsets and the definitions of the base tables wanted:
    ``tables`` (schema, table) pairs and every table of ``schemas``; every table of every
    non-system database when both are None."""
    wanted_tables = sorted(set(tables or ()))
    wanted_schemas = sorted(set(schemas or ()))
    everything = tables is None and schemas is None
    where, params = _where(wanted_tables, wanted_schemas, everything)
    result = Schemas(dialect)
    schema_where, schema_params = _schema_where(wanted_tables, wanted_schemas, everything)
    for name, charset in _rows(
        conn,
        "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA"
        f" WHERE {schema_where}",
        schema_params,
    ):
        result.databases[result.database_key(name)] = _charset(charset)
    if not everything and not wanted_tables and not wanted_schemas:
        return result
    table_charsets = {
        (schema, table): _charset(collation.split("_", 1)[0]) if collation else None
        for schema, table, collation in _rows(
            conn,
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES"
            f" WHERE TABLE_TYPE = 'BASE TABLE' AND {where}",
            params,
        )
    }
    columns: dict[Name, list[ColumnDefinition]] = defaultdict(list)
    for schema, table, name, column_type, nullable, charset, extra in _rows(
        conn,
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE,"
        " CHARACTER_SET_NAME, EXTRA FROM information_schema.COLUMNS"
        f" WHERE {where} ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
        params,
    ):
        flags = (extra or "").upper()
        generated = any(word in flags for word in ("VIRTUAL", "STORED", "PERSISTENT"))
        columns[(schema, table)].append(
            ColumnDefinition(
                name,
                column_type,
                nullable == "YES",
                _charset(charset) if charset else None,
                generated,
                "INVISIBLE" in flags,
            )
        )
    primary: dict[Name, list[str]] = defaultdict(list)
    for schema, table, name in _rows(
        conn,
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS"
        f" WHERE INDEX_NAME = 'PRIMARY' AND {where}"
        " ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX",
        params,
    ):
        primary[(schema, table)].append(name)
    for (schema, table), charset in table_charsets.items():
        result.tables[result.key(schema, table)] = TableDefinition(
            schema,
            table,
            tuple(columns.get((schema, table), ())),
            tuple(primary.get((schema, table), ())),
            charset,
        )
    return result


_SYSTEM = ("mysql", "information_schema", "performance_schema", "sys")


def _where(tables: list[Name], schemas: list[str], everything: bool) -> tuple[str, list[str]]:
    """A condition on TABLE_SCHEMA/TABLE_NAME selecting the wanted tables."""
    if everything:
        return f"TABLE_SCHEMA NOT IN ({', '.join(['%s'] * len(_SYSTEM))})", list(_SYSTEM)
    parts: list[str] = []
    params: list[str] = []
    if schemas:
        parts.append(f"TABLE_SCHEMA IN ({', '.join(['%s'] * len(schemas))})")
        params += schemas
    if tables:
        # One IN over the schemas, one over "schema.table" keys: a row-constructor IN list of
        # 10,000 pairs is slow on both servers' information_schema.
        table_schemas = sorted({schema for schema, _ in tables})
        parts.append(
            f"(TABLE_SCHEMA IN ({', '.join(['%s'] * len(table_schemas))})"
            f" AND CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) IN ({', '.join(['%s'] * len(tables))}))"
        )
        params += table_schemas
        params += [f"{schema}.{table}" for schema, table in tables]
    return "(" + " OR ".join(parts or ["FALSE"]) + ")", params


def _schema_where(
    tables: list[Name], schemas: list[str], everything: bool
) -> tuple[str, list[str]]:
    if everything:
        return f"SCHEMA_NAME NOT IN ({', '.join(['%s'] * len(_SYSTEM))})", list(_SYSTEM)
    names = sorted({*schemas, *(schema for schema, _ in tables)})
    if not names:
        return "FALSE", []
    return f"SCHEMA_NAME IN ({', '.join(['%s'] * len(names))})", names


def _charset(name: str) -> str:
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def _rows(conn: Connection, sql: str, params: list[str] | None = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, params or None)
        return list(cur.fetchall())
