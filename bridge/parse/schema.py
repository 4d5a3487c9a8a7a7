"""The live table definitions of the source, cached until a DDL touches the table."""

from __future__ import annotations

from typing import Any

import pymysql

LiveColumns = tuple[tuple[str, str, bool], ...]


class LiveSchema:
    """(name, declared type, is primary key) per column, read from ``information_schema``.

    Only a hint for declared type texts and for binlogs without column names: the TABLE_MAP
    decides what a row event contains.
    """

    def __init__(self, connection: pymysql.connections.Connection[Any]) -> None:
        self._connection = connection
        self._cache: dict[tuple[str, str], LiveColumns | None] = {}

    def columns(self, schema: str, table: str) -> LiveColumns | None:
        key = (schema.lower(), table.lower())
        if key not in self._cache:
            self._cache[key] = self._fetch(schema, table)
        return self._cache[key]

    def forget(self, schema: str, table: str = "") -> None:
        """Drop cached definitions after a DDL on ``schema.table`` (or the whole schema)."""
        schema_key = schema.lower()
        for key in [k for k in self._cache if k[0] == schema_key]:
            if not table or key[1] == table.lower():
                del self._cache[key]

    def _fetch(self, schema: str, table: str) -> LiveColumns | None:
        with self._connection.cursor() as cur:
            cur.execute(
                "SELECT COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                (schema, table),
            )
            rows = cur.fetchall()
        if not rows:
            return None
        return tuple((str(name), str(ctype), key == "PRI") for name, ctype, key in rows)
