"""Errors of the schema history: each says which table and position, and the fix."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class SchemaError(BridgeError):
    """Base of the schema history's errors."""


class UnreadableDdl(SchemaError):
    """A DDL statement the parser cannot apply. ``tables``: the (schema, table) names it could
    still find in the statement (empty when none), so the history can tell whether a selected
    table is touched (then the destination stops) or not (then the statement costs nothing)."""

    def __init__(self, sql: str, reason: str, tables: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(f"cannot read DDL ({reason}): {_shortened(sql)}")
        self.sql = sql
        self.reason = reason
        self.tables = tables


def _shortened(sql: str, limit: int = 300) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SchemaHistoryDamaged(SchemaError):
    """A stored history that cannot be read: refused, never replaced by a guess."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(
            f"the schema history at {where} is damaged ({detail}); see docs/schema-history.md "
            "'Recovery': with binlog_row_metadata=FULL move it aside and restart (it is rebuilt "
            "from the binlog's names), otherwise set schema.recover: live to take today's "
            "definitions"
        )
        self.where = where
        self.detail = detail


class SchemaHistoryGap(SchemaError):
    """The history does not cover the start position, and the binlog carries no names."""

    def __init__(self, destination: str, detail: str, tables: tuple[str, ...]) -> None:
        listed = ", ".join(tables[:10]) + (
            f" and {len(tables) - 10} more" if len(tables) > 10 else ""
        )
        super().__init__(
            f"destination {destination}: no table definitions for the rows to read ({detail}) "
            f"for {listed}; binlog_row_metadata is not FULL, so their column names cannot be "
            "read from the binlog. Choose: set binlog_row_metadata=FULL on the source before "
            "those rows were written, or set schema.recover: live in this destination to take "
            "today's definitions (rows written before a DDL on these tables may be misnamed; "
            "the range is logged), or start after the last DDL on them"
        )
        self.destination = destination
        self.tables = tables
