"""Errors of the snapshot reader. Each message says what is wrong and how to fix it."""

from __future__ import annotations

from collections.abc import Sequence

from bridge.exceptions import BridgeError


class SnapshotError(BridgeError):
    """Base of the snapshot reader's errors."""


class TableWithoutKey(SnapshotError):
    """A table with neither a primary key nor a unique index over NOT NULL columns: it cannot
    be read in key chunks (docs/snapshots.md, "Shapes")."""

    def __init__(self, schema: str, table: str) -> None:
        self.schema = schema
        self.table = table
        super().__init__(
            f"table {schema}.{table} has no primary key (nor a unique index on NOT NULL "
            "columns): add one, or narrow snapshot.tables"
        )


class UnsupportedSnapshotColumn(SnapshotError):
    """A column type the snapshot cannot read exactly as the binlog reader renders it."""

    def __init__(self, schema: str, table: str, column: str, column_type: str) -> None:
        self.schema = schema
        self.table = table
        self.column = column
        super().__init__(
            f"table {schema}.{table}: column `{column}` of type {column_type} cannot be "
            "snapshotted; leave the table out of snapshot.tables"
        )


class SnapshotRequestRefused(SnapshotError):
    """An on-demand snapshot request naming tables the destination cannot snapshot: tables the
    source does not have, or ones the destination's filter leaves out (a snapshot row must be
    one the stream would send too). Nothing of the request is done."""

    def __init__(
        self, destination: str, unknown: Sequence[str] = (), filtered: Sequence[str] = ()
    ) -> None:
        self.destination = destination
        self.unknown = tuple(unknown)
        self.filtered = tuple(filtered)
        problems = []
        if self.unknown:
            problems.append(f"no such base table on the source: {', '.join(self.unknown)}")
        if self.filtered:
            problems.append(
                f"left out by filter.regex / filter.black_regex: {', '.join(self.filtered)}"
            )
        super().__init__(
            f"destination {destination}: snapshot refused ({'; '.join(problems)}): name "
            "existing tables as schema.table, or widen the destination's filter first"
        )
