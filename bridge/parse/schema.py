"""A schema history for tools that read a stretch of binlog without a stored one.

``BinlogParser`` without definitions (tests, benchmarks, one-off reads) decodes with the live
tables, read once per table at first use and then advanced by the DDL it reads: right when no
DDL ran on a table between the read's start and now. An instance never uses this: it starts
from its stored history (``bridge.schema.recorder``).
"""

from __future__ import annotations

from typing import Any

import pymysql

from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.definitions import Schemas, TableDefinition
from bridge.schema.history import SchemaHistory


def live_history(connection: pymysql.connections.Connection[Any]) -> SchemaHistory:
    dialect = read_dialect(connection)

    def fetch(schema: str, table: str) -> TableDefinition | None:
        return read_definitions(connection, dialect, [(schema, table)]).table(schema, table)

    return SchemaHistory(Schemas(dialect), fetch)
