"""The definitions a destination starts reading with: its stored history, or a capture.

With a stored history that covers the start, the history says (``SchemaRecorder``). Without
one (a first start, a history lost, a rewind before the history, ``schema_history.recover``
after damage), the selected tables' definitions are captured from the source at a known
position: position, definitions, position again, until no event came between. Those are the
definitions at the *start* only where no DDL touched the table in between, so the binlog
from the start to that position is scanned for DDL (headers and statements only):

- a table whose first statement there creates it did not exist at the start: it is left out,
  and the stream's own CREATE defines it;
- a table a DDL changed there is *uncertain*: its definition at the start is unknown. With
  ``binlog_row_metadata=FULL`` its rows carry their names (it is left out and decoded from
  them); otherwise the start is refused with the tables named (``SchemaHistoryGap``), unless
  ``schema_history.recover: live`` takes today's definitions, logging the range.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from bridge.config import DestinationConfig
from bridge.entry import EventType
from bridge.parse.access import Source
from bridge.parse.ddl import classify_ddl
from bridge.parse.scan import DdlStatement, ddl_statements
from bridge.parse.source import SourceFacts, master_position, open_connection
from bridge.position import EntryPosition
from bridge.schema.apply import touched_tables
from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.definitions import Schemas
from bridge.schema.exceptions import SchemaHistoryDamaged, SchemaHistoryGap
from bridge.schema.recorder import HistoryNotCovering, SchemaRecorder, mark_of
from bridge.sink.filters import TableFilter

log = logging.getLogger(__name__)

CAPTURE_ATTEMPTS = 5
_IF_NOT_EXISTS = re.compile(r"\bif\s+not\s+exists\b", re.I)
SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


def ensure_history(
    recorder: SchemaRecorder,
    config: DestinationConfig,
    facts: SourceFacts,
    start: EntryPosition,
    *,
    jumped: bool = False,
) -> None:
    """Make sure ``recorder`` can give the definitions at ``start``; raise the error that
    says why not (``SchemaHistoryGap``, ``SchemaHistoryDamaged``) otherwise. ``jumped``: the
    start is not where the destination stopped reading (a purged binlog skipped, another
    source after a fail-over): the DDL in between never reached the history, which begins
    anew there."""
    recover = config.schema_history.recover == "live"
    why = "no schema history yet"
    try:
        if jumped:
            why = "the start skips binlog the history never read"
        elif recorder.schemas_at(start) is not None:
            return
    except HistoryNotCovering as exc:
        why = str(exc)
    except SchemaHistoryDamaged:
        if not recover:
            raise
        why = "the stored schema history is damaged"
    selected = TableFilter(config.filter.regex, config.filter.black_regex)
    schemas, end = capture(config.source, selected)
    uncertain = _left_out(schemas, start, end, config.source, facts)
    if uncertain and not facts.row_metadata_full:
        names = tuple(sorted(f"{s}.{t}" for s, t in uncertain if selected.accepts(s, t)))
        if names and not recover:
            raise SchemaHistoryGap(
                config.name,
                f"{why}; DDL ran on them between the start {_at(start)} and {_at(end)}",
                names,
            )
        if names:
            log.warning(
                "destination %s: schema_history.recover live: today's definitions of %s are "
                "used from %s on; rows written before the last DDL on them (up to %s) may be "
                "misnamed",
                config.name,
                ", ".join(names),
                _at(start),
                _at(end),
            )
    else:
        for name in uncertain:
            schemas.tables.pop(name, None)
    log.info(
        "destination %s: schema history begun at %s with %d table definitions (%s)",
        config.name,
        _at(start),
        len(schemas.tables),
        why,
    )
    recorder.begin(mark_of(start), schemas)


def capture(source: Source, selected: TableFilter) -> tuple[Schemas, EntryPosition]:
    """The selected tables' definitions and a binlog position they hold at: read between two
    equal positions (a few attempts; the last one's end position otherwise, whose gap the
    DDL scan covers)."""
    with open_connection(source) as conn:
        dialect = read_dialect(conn)
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES")
            names = [
                (str(s), str(t))
                for s, t in cur.fetchall()
                if str(s).lower() not in SYSTEM_SCHEMAS and selected.accepts(str(s), str(t))
            ]
        for _ in range(CAPTURE_ATTEMPTS):
            before = master_position(conn)
            schemas = read_definitions(conn, dialect, names)
            after = master_position(conn)
            if before.sort_key() == after.sort_key():
                break
        return schemas, after


def _left_out(
    schemas: Schemas,
    start: EntryPosition,
    end: EntryPosition,
    source: Source,
    facts: SourceFacts,
) -> set[tuple[str, str]]:
    """Tables whose captured definition does not hold at ``start``: created after it
    (removed from ``schemas`` here) or changed after it (returned: uncertain)."""
    if start.journal_name and start.sort_key() >= end.sort_key():
        return set()
    log.info(
        "reading the binlog from %s to %s for DDL on the captured tables", _at(start), _at(end)
    )
    return left_out(schemas, _until(ddl_statements(source, facts, start), end))


def left_out(schemas: Schemas, statements: Iterable[DdlStatement]) -> set[tuple[str, str]]:
    """Of the captured ``schemas``, the tables the ``statements`` (read from the start to the
    capture, in order) touch: one whose first statement there creates it did not exist at the
    start and is removed from ``schemas``; any other is returned, uncertain. A CREATE ... IF
    NOT EXISTS may have met the table already there: uncertain too. The statements are
    applied to a working copy of the capture, so that each is read against the tables the
    ones before it left (a DROP DATABASE names the tables it held)."""
    scratch = schemas.copy()
    uncertain: set[tuple[str, str]] = set()
    seen: set[tuple[str, str]] = set()
    for statement in statements:
        kind = classify_ddl(statement.sql, statement.schema).event_type
        created = kind is EventType.CREATE and not _IF_NOT_EXISTS.search(statement.sql)
        for name in touched_tables(scratch, statement.sql, statement.schema):
            key = schemas.key(*name)
            if key in seen:
                continue
            seen.add(key)
            if created:
                schemas.tables.pop(key, None)
            else:
                uncertain.add(key)
    return uncertain


def _until(statements: Iterable[DdlStatement], end: EntryPosition) -> Iterable[DdlStatement]:
    for statement in statements:
        if (statement.journal_name, statement.position) >= end.sort_key():
            return
        yield statement


def _at(position: EntryPosition) -> str:
    if position.journal_name:
        return f"{position.journal_name}:{position.position}"
    return f"GTID {position.gtid}"
