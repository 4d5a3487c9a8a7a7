"""``canal-bridge schema show``: the definitions a destination decodes with, as of its acked
cursor or a given binlog position (docs/schema-history.md).

Read from the stored history only (no source is contacted): what a restart would use. One
block per table: its name, then a line per column (name, declared type, NOT NULL, key,
charset, generated, invisible). Exit 0; 1 when there is no history or it does not cover the
position; 2 for a bad command line or config.
"""

from __future__ import annotations

from typing import TextIO

from bridge.config import BridgeConfig
from bridge.exceptions import BridgeError
from bridge.position import EntryPosition
from bridge.schema.definitions import TableDefinition
from bridge.schema.recorder import HistoryNotCovering, SchemaRecorder
from bridge.schema.store import history_store
from bridge.status import stored_cursor

OK, FAILED, USAGE = 0, 1, 2


def show_schema(
    config: BridgeConfig,
    destination: str,
    *,
    table: str | None,
    at: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    if destination not in {d.name for d in config.destinations}:
        err.write(f"error: no destination {destination!r} in the configuration\n")
        return USAGE
    store = history_store(config, destination)
    if store is None:
        err.write(f"error: destination {destination} keeps its history in memory only\n")
        return FAILED
    try:
        position = _position(at) if at else _cursor(config, destination)
    except ValueError as exc:
        err.write(f"error: --at {exc}\n")
        return USAGE
    recorder = SchemaRecorder(store)
    try:
        history = recorder.stored()
        if history is None:
            err.write(f"error: destination {destination} has no schema history yet ({store})\n")
            return FAILED
        if position is None:  # no cursor: the history as it ends
            schemas = recorder.replay(history, len(history.records)).schemas
            where = "the end of the history"
        else:
            count = sum(1 for r in history.records if r.mark.sort_key() < position.sort_key())
            if position.sort_key() < history.mark.sort_key():
                raise HistoryNotCovering(position, history.mark)
            schemas = recorder.replay(history, count).schemas
            where = f"{position.journal_name}:{position.position}"
    except (BridgeError, HistoryNotCovering) as exc:
        err.write(f"error: {exc}\n")
        return FAILED
    out.write(
        f"# destination {destination}: {len(schemas.tables)} tables as of {where} "
        f"(history from {history.mark}, {len(history.records)} DDL records after it)\n"
    )
    wanted = table.lower() if table else None
    for definition in sorted(schemas.tables.values(), key=lambda t: t.full_name):
        if wanted is None or definition.full_name.lower() == wanted:
            out.write(describe_table(definition))
    return OK


def describe_table(table: TableDefinition) -> str:
    keys = {k.lower() for k in table.primary_key}
    lines = [f"{table.full_name}  (default charset {table.charset or '-'})"]
    for column in table.columns:
        flags = [
            "NOT NULL" if not column.nullable else "",
            "PRIMARY KEY" if column.name.lower() in keys else "",
            f"CHARSET {column.charset}" if column.charset else "",
            "GENERATED" if column.generated else "",
            "INVISIBLE" if column.invisible else "",
        ]
        lines.append(f"  {column.name}  {column.column_type}  {' '.join(f for f in flags if f)}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _position(text: str) -> EntryPosition:
    journal, _, offset = text.rpartition(":")
    if not journal or not offset.isdigit():
        raise ValueError(f"expects FILE:OFFSET (mysql-bin.000003:1234), got {text!r}")
    return EntryPosition(journal_name=journal, position=int(offset))


def _cursor(config: BridgeConfig, destination: str) -> EntryPosition | None:
    cursor = stored_cursor(config, destination)
    return cursor.position if cursor is not None else None
