"""Which tables a destination snapshots, in a stable order (docs/snapshots.md).

The destination's table filter (``filter.regex`` / ``filter.black_regex``: a snapshot row
must be one the stream would send too), narrowed by ``snapshot.tables``, over the base tables
of ``information_schema.TABLES`` (views have no binlog rows; system schemas are never
streamed). Sorted by schema and name, so a resumed plan matches the saved one.
"""

from __future__ import annotations

from typing import Any

from bridge.config import DestinationConfig
from bridge.position import SnapshotProgress, TableProgress
from bridge.sink.filters import TableFilter

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")

_BASE_TABLES = (
    "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
    "WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN (%s, %s, %s, %s)"
)


def selected_tables(config: DestinationConfig, names: list[tuple[str, str]]) -> list[str]:
    """``schema.table`` of each name the destination's filter and ``snapshot.tables`` keep,
    sorted."""
    stream = TableFilter(config.filter.regex, config.filter.black_regex)
    narrow = TableFilter(config.snapshot.tables)
    kept = {
        f"{schema}.{table}"
        for schema, table in names
        if stream.accepts(schema, table) and narrow.accepts(schema, table)
    }
    return sorted(kept)


def base_tables(conn: Any) -> list[tuple[str, str]]:
    """Every base table of the source outside the system schemas."""
    with conn.cursor() as cur:
        cur.execute(_BASE_TABLES, SYSTEM_SCHEMAS)
        return [(_text(schema), _text(table)) for schema, table in cur.fetchall()]


def fresh_plan(conn: Any, config: DestinationConfig) -> SnapshotProgress:
    """The progress of a snapshot not yet started: every selected table from its first row."""
    return SnapshotProgress(
        tuple(TableProgress(name) for name in selected_tables(config, base_tables(conn)))
    )


def _text(value: object) -> str:
    # A connection with binary results (bridge.snapshot.rows.prepare_connection) gives bytes.
    return value.decode() if isinstance(value, bytes) else str(value)
