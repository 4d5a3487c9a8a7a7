"""``canal-bridge schema show`` and ``schema reload``: a destination's schema history, read
and repaired from the command line (docs/schema-history.md).

``show`` prints the definitions a destination decodes with, as of its acked cursor or a given
binlog position, from its stored history only: what a restart would use. One block per
table: its name, then a line per column (name, declared type, NOT NULL, key, charset,
generated, invisible).

``reload`` is the way out of a stop on a DDL the parser could not read (or a table the history
does not describe, after a DDL run with ``sql_log_bin=0``): it reads the table's definition
from the source now and keeps it in the history at the position given (the statement's, as
the stop said; default: the acked cursor), where it replaces what that statement did. It is
refused when a later DDL in the binlog changed the table too: the definition read now would
not be the one after that position.

Exit 0; 1 when there is no history, it does not cover the position, or the reload is
refused; 2 for a bad command line or config.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TextIO

from bridge.commands.status import stored_cursor
from bridge.config import BridgeConfig
from bridge.exceptions import BridgeError
from bridge.parse.scan import ddl_statements
from bridge.parse.source import open_connection, preflight
from bridge.position import EntryPosition
from bridge.schema.apply import touched_tables
from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import Schemas, TableDefinition
from bridge.schema.recorder import HistoryNotCovering, SchemaRecorder
from bridge.schema.store import HistoryStore, history_store
from bridge.sink import TableFilter

OK, FAILED, USAGE = 0, 1, 2


class CommandError(Exception):
    """One line for the user, and the exit code."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def show_schema(
    config: BridgeConfig,
    destination: str,
    *,
    table: str | None,
    at: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        with _recorder(config, destination) as recorder:
            history = recorder.stored()
            if history is None:
                raise CommandError(f"destination {destination} has no schema history yet")
            position = _position(at) if at else _cursor(config, destination)
            if position is None:  # no cursor: the history as it ends
                schemas, where = recorder.replay(history).schemas, "the end of the history"
            else:
                if position.sort_key() < history.mark.sort_key():
                    raise HistoryNotCovering(position, history.mark)
                schemas = recorder.replay(history, position).schemas
                where = f"{position.journal_name}:{position.position}"
    except (CommandError, BridgeError, HistoryNotCovering) as exc:
        err.write(f"error: {exc}\n")
        return exc.code if isinstance(exc, CommandError) else FAILED
    out.write(
        f"# destination {destination}: {len(schemas.tables)} tables as of {where} "
        f"(history from {history.mark}, {len(history.records)} records after it)\n"
    )
    wanted = table.lower() if table else None
    for definition in sorted(schemas.tables.values(), key=lambda t: t.full_name):
        if wanted is None or definition.full_name.lower() == wanted:
            out.write(describe_table(definition))
    return OK


def reload_table(
    config: BridgeConfig,
    destination: str,
    *,
    table: str,
    at: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        schema, _, name = table.partition(".")
        if not schema or not name:
            raise CommandError(f"--table expects db.table, got {table!r}", USAGE)
        source = config.destination(destination).source
        with _recorder(config, destination) as recorder:
            history = recorder.stored()
            if history is None:
                raise CommandError(f"destination {destination} has no schema history yet")
            position = _position(at) if at else _cursor(config, destination)
            if position is None:
                raise CommandError(f"destination {destination} has no cursor: give --at")
            with open_connection(source) as conn:
                dialect = read_dialect(conn)
                definition = read_definitions(conn, dialect, [(schema, name)]).table(schema, name)
            if definition is None:
                raise CommandError(f"{table} does not exist on {source.address}")
            at_position = recorder.replay(history, position).schemas
            later = _later_change(config, destination, position, at_position, (schema, name))
            if later is not None:
                raise CommandError(
                    f"a later DDL at {later} also changed {table}: its definition now is not "
                    f"the one after {_at(position)}. Reload at {later} instead, or set "
                    "binlog_row_metadata=FULL (names from the binlog)"
                )
            mark = Mark(position.journal_name or "", position.position or 0)
            recorder.reload(DdlRecord(mark, schema, table=definition))
    except (CommandError, BridgeError, HistoryNotCovering) as exc:
        err.write(f"error: {exc}\n")
        return exc.code if isinstance(exc, CommandError) else FAILED
    columns = ", ".join(c.name for c in definition.columns)
    out.write(
        f"destination {destination}: {table} reloaded from the source at {_at(position)} "
        f"({columns}); restart the destination\n"
    )
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


def _later_change(
    config: BridgeConfig,
    destination: str,
    position: EntryPosition,
    scratch: Schemas,
    name: tuple[str, str],
) -> str | None:
    """Where a DDL after ``position`` (the one at it aside) touched ``name``, if any;
    ``scratch``: the definitions at ``position``, applied to as the statements pass."""
    source = config.destination(destination).source
    wanted = scratch.key(*name)
    for statement in ddl_statements(source, preflight(source), position):
        if (statement.journal_name, statement.position) == position.sort_key():
            continue
        touched = touched_tables(scratch, statement.sql, statement.schema)
        if wanted in {scratch.key(*t) for t in touched}:
            return f"{statement.journal_name}:{statement.position}"
    return None


@contextlib.contextmanager
def _recorder(config: BridgeConfig, destination: str) -> Iterator[SchemaRecorder]:
    if destination not in {d.name for d in config.destinations}:
        raise CommandError(f"no destination {destination!r} in the configuration", USAGE)
    chosen = config.destination(destination).filter
    selected = TableFilter(chosen.regex, chosen.black_regex)
    if config.meta.store == "zookeeper" and config.zookeeper is not None:
        from bridge.ha import ZkLayout, ZkSession
        from bridge.schema.zookeeper_store import ZooKeeperHistoryStore

        zookeeper = config.zookeeper
        session = ZkSession(zookeeper.hosts, zookeeper.session_timeout_ms, connect_timeout_s=5)
        session.start()
        try:
            path = f"{ZkLayout(zookeeper.root).destination(destination)}/schema"
            yield SchemaRecorder(ZooKeeperHistoryStore(session.client, path), selected=selected)
        finally:
            session.stop()
        return
    store: HistoryStore | None = history_store(config, destination)
    if store is None:
        raise CommandError(f"destination {destination} keeps its history in memory only")
    yield SchemaRecorder(store, selected=selected)


def _position(text: str) -> EntryPosition:
    journal, _, offset = text.rpartition(":")
    if not journal or not offset.isdigit():
        raise CommandError(f"--at expects FILE:OFFSET (binlog.000003:1234), got {text!r}", USAGE)
    return EntryPosition(journal_name=journal, position=int(offset))


def _cursor(config: BridgeConfig, destination: str) -> EntryPosition | None:
    if config.meta.store == "zookeeper":
        return None
    cursor = stored_cursor(config, destination)
    return cursor.position if cursor is not None else None


def _at(position: EntryPosition) -> str:
    return f"{position.journal_name}:{position.position}"
