"""The definitions a binlog reader decodes with, advanced by the DDL it reads.

The reader holds one ``SchemaHistory`` per dump: it starts from the definitions in force at
the dump's start position (``bridge.schema.recorder``) and applies each DDL statement as the
statement passes in the stream, so a rows event is always decoded with its table as it was
when the row was written.

A DDL the parser cannot read stops the reader when it touches a table the history holds:
decoding on could misname every later row of that table. On any other table it costs a log
line, and the tables it names are forgotten: a rows event of a table the history does not
hold is decoded only when the binlog carries its names (``build_table_meta`` refuses it
otherwise), so nothing is ever guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from bridge.schema.apply import Applied, apply_ddl
from bridge.schema.definitions import Schemas, TableDefinition
from bridge.schema.exceptions import UnreadableDdl

log = logging.getLogger(__name__)

Fetch = Callable[[str, str], TableDefinition | None]


class Selection(Protocol):
    """Which tables the destination selects (``bridge.sink.TableFilter``, which pickles to
    the binlog reader's process)."""

    def accepts(self, schema: str, table: str) -> bool: ...


class SchemaHistory:
    """``definition`` answers for a table as of the stream's current position; ``apply``
    moves that position past one DDL statement."""

    def __init__(
        self,
        schemas: Schemas,
        fetch: Fetch | None = None,
        overrides: Mapping[str, tuple[TableDefinition, ...]] | None = None,
        selected: Selection | None = None,
    ) -> None:
        """``schemas``: the definitions at the start position (owned from here on: applied
        to in place). ``fetch``: reads a table the history does not hold from the live
        source, once; only for tools that read a stretch of binlog without a stored history
        (``BinlogParser`` without definitions), where the live table is the best there is.
        ``overrides``: by ``file:offset``, the definitions ``canal-bridge schema reload``
        read for the DDL statement there, which then replace the statement's effect.
        ``selected``: the destination's tables (None: every table); a table it does not
        select never stops the reader, whose rows the sink drops anyway."""
        self._schemas = schemas
        self._fetch = fetch
        self._overrides = dict(overrides or {})
        self._selected = selected
        self._fetched: set[tuple[str, str]] = set()

    def selects(self, schema: str, table: str) -> bool:
        return self._selected is None or self._selected.accepts(schema, table)

    @property
    def schemas(self) -> Schemas:
        return self._schemas

    def definition(self, schema: str, table: str) -> TableDefinition | None:
        found = self._schemas.table(schema, table)
        if found is None and self._fetch is not None:
            key = self._schemas.key(schema, table)
            if key not in self._fetched:
                self._fetched.add(key)
                found = self._fetch(schema, table)
                if found is not None:
                    self._schemas.tables[key] = found
        return found

    def apply(self, sql: str, default_schema: str, position: str) -> Applied:
        """Apply one DDL statement read at ``position`` (``file:offset``, for messages).

        Raises ``UnreadableDdl`` (with the position and the fix) when the statement cannot
        be read and names a selected table the history holds, or no table it could find."""
        reloaded = self._overrides.get(position)
        if reloaded is not None:
            for table in reloaded:
                self._schemas.tables[self._schemas.key(table.schema, table.name)] = table
            log.info("applied the reloaded definitions of %s at %s", _names(reloaded), position)
            names = tuple((t.schema, t.name) for t in reloaded)
            return Applied(names, True, ())
        try:
            applied = apply_ddl(self._schemas, sql, default_schema)
        except UnreadableDdl as exc:
            held = [
                name
                for name in exc.tables
                if self._schemas.table(*name) is not None and self.selects(*name)
            ]
            if held or not exc.tables:
                named = ", ".join(f"{s}.{t}" for s, t in held) or "a table it does not name"
                raise UnreadableDdl(
                    exc.sql,
                    f"{exc.reason}; it touches {named} at {position}: decoding on could "
                    "misname that table's rows. Fix: run `canal-bridge schema reload "
                    f"--config F --destination D --table db.table --at {position}` for each "
                    "table it changed, then restart",
                    exc.tables,
                ) from exc
            log.info("passed a DDL on tables the history does not hold at %s: %s", position, exc)
            return Applied(exc.tables, False, exc.tables)
        if self._fetch is not None:
            # Tools' histories: a table changed by a statement is read live again if needed.
            self._fetched.difference_update(self._schemas.key(*name) for name in applied.unknown)
        return applied


def _names(tables: tuple[TableDefinition, ...]) -> str:
    return ", ".join(t.full_name for t in tables)
