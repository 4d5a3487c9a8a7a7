"""The instance's side of the schema history: what is stored, what a start decodes with.

The binlog reader applies DDL to its own copy as it reads (``bridge.schema.history``); the
recorder keeps the durable record of the same statements, appended as each DDL entry arrives
from the reader, before it is put in the store and long before its batch is acked. A start
at cursor C takes the base and replays the records before C: those at or after C are read
again from the binlog, so they are dropped from the log first. Whatever the order of crash,
ack and write, a start decodes its first row with the definitions at its position.

The log is folded into the base once it holds ``compact_after`` records, up to the acked
cursor (the oldest position a restart may need): the history stays bounded however many DDL
statements a destination sees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bridge.entry import Entry
from bridge.position import EntryPosition
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import Schemas, TableDefinition
from bridge.schema.history import SchemaHistory, Selection
from bridge.schema.store import HistoryStore, StoredHistory

log = logging.getLogger(__name__)

COMPACT_AFTER = 1000


class HistoryNotCovering(Exception):
    """The start is before the stored base: the history cannot say what held there."""

    def __init__(self, start: EntryPosition, base: Mark) -> None:
        super().__init__(
            f"the start {start.journal_name}:{start.position} is before the history's oldest "
            f"definitions ({base})"
        )


def mark_of(position: EntryPosition) -> Mark:
    return Mark(position.journal_name or "", position.position or 0, position.gtid or "")


def before(mark: Mark, start: EntryPosition) -> bool:
    """Whether the event at ``mark`` comes before a dump that starts at ``start`` (an
    ``included`` start has consumed its own event too)."""
    key, at = mark.sort_key(), start.sort_key()
    return key < at or (key == at and start.included)


class SchemaRecorder:
    def __init__(
        self,
        store: HistoryStore,
        *,
        selected: Selection | None = None,
        acked: Callable[[], EntryPosition | None] = lambda: None,
        compact_after: int = COMPACT_AFTER,
    ) -> None:
        """``selected``: the destination's tables (``SchemaHistory``: replayed as the reader
        read); ``acked``: the destination's acked cursor, up to which the log may be folded."""
        self._store = store
        self._selected = selected
        self._acked = acked
        self._compact_after = compact_after
        self._history: StoredHistory | None = None
        self._loaded = False
        self.applied = 0  # DDL records written since start (a metric)

    @property
    def store(self) -> HistoryStore:
        return self._store

    def stored(self) -> StoredHistory | None:
        if not self._loaded:
            self._history = self._store.load()
            self._loaded = True
        return self._history

    def kept(self) -> StoredHistory | None:
        """The history as this recorder last loaded or wrote it (no store access: for
        metrics); None before it was loaded."""
        return self._history

    def schemas_at(self, start: EntryPosition) -> Schemas | None:
        """The definitions in force at ``start``; None when there is no history yet.

        Raises ``HistoryNotCovering`` for a start before the base (a rewind past what the
        history kept), and the reader's ``UnreadableDdl`` if a record no longer applies."""
        history = self._history_for(start)
        if history is None:
            return None
        return self.replay(history, start).schemas

    def history_at(self, start: EntryPosition) -> SchemaHistory:
        """What a binlog reader starting at ``start`` decodes with: ``schemas_at``, and the
        reloaded definitions at or after it, which replace the statements there."""
        history = self._history_for(start)
        assert history is not None, "a history is begun before a reader starts"
        overrides: dict[str, tuple[TableDefinition, ...]] = {}
        for record in history.records:
            if record.table is not None and not before(record.mark, start):
                overrides[str(record.mark)] = (*overrides.get(str(record.mark), ()), record.table)
        schemas = self.replay(history, start).schemas
        return SchemaHistory(schemas, overrides=overrides, selected=self._selected)

    def _history_for(self, start: EntryPosition) -> StoredHistory | None:
        """The stored history, without the statements at or after ``start`` (read again from
        the binlog after it, recorded again as they come); reloaded definitions stay."""
        history = self.stored()
        if history is None:
            return None
        if not start.journal_name:
            raise HistoryNotCovering(start, history.mark)
        if history.mark.sort_key() > start.sort_key():
            raise HistoryNotCovering(start, history.mark)
        kept = tuple(r for r in history.records if r.table is not None or before(r.mark, start))
        if len(kept) != len(history.records):
            history = StoredHistory(history.mark, history.schemas, kept)
            self._store.replace(history)
            self._history = history
        return history

    def replay(self, history: StoredHistory, until: EntryPosition | None = None) -> SchemaHistory:
        """The base with the records before ``until`` applied (all without it), as the
        reader applied them: a reloaded definition at or before ``until`` replaces the
        table, and the statement at its position gives way to it."""
        replayed = SchemaHistory(history.schemas.copy(), selected=self._selected)
        schemas = replayed.schemas
        reloaded = {r.mark for r in history.records if r.table is not None}
        for record in history.records:
            at_or_before = until is None or record.mark.sort_key() <= until.sort_key()
            if record.table is not None and at_or_before:
                schemas.tables[schemas.key(record.table.schema, record.table.name)] = record.table
            elif (
                record.table is None
                and (until is None or before(record.mark, until))
                and record.mark not in reloaded
            ):
                replayed.apply(record.sql, record.schema, str(record.mark))
        return replayed

    def reload(self, record: DdlRecord) -> None:
        """Keep a definition re-read from the source (``canal-bridge schema reload``), in
        binlog order among the records."""
        history = self.stored()
        assert history is not None and record.table is not None
        records = sorted((*history.records, record), key=lambda r: r.mark.sort_key())
        self._store.replace(StoredHistory(history.mark, history.schemas, tuple(records)))
        self._loaded = False

    def begin(self, mark: Mark, schemas: Schemas) -> None:
        """A new history: ``schemas`` hold at ``mark``, nothing recorded after it."""
        history = StoredHistory(mark, schemas.copy(), ())
        self._store.replace(history)
        self._history, self._loaded = history, True

    def record(self, entry: Entry) -> None:
        """Keep a DDL entry the reader read (and applied) before it goes further."""
        change = entry.row_change
        history = self.stored()
        if change is None or history is None:
            return
        header = entry.header
        mark = Mark(header.logfile_name, header.logfile_offset, header.gtid)
        if history.records and history.records[-1].mark.sort_key() >= mark.sort_key():
            return  # already kept (a reader that re-read it after a reconnect)
        self.add(DdlRecord(mark, change.ddl_schema_name, change.sql))

    def add(self, record: DdlRecord) -> None:
        history = self.stored()
        assert history is not None, "begin() first"
        self._store.append(record)
        self._history = StoredHistory(history.mark, history.schemas, (*history.records, record))
        self.applied += 1
        if len(self._history.records) >= self._compact_after:
            self.compact()

    def compact(self) -> None:
        """Fold the records before the acked cursor into the base."""
        history = self.stored()
        acked = self._acked()
        if history is None or acked is None or not acked.journal_name:
            return
        count = sum(1 for r in history.records if before(r.mark, acked))
        if not count:
            return
        folded = self.replay(history, acked)
        kept = tuple(r for r in history.records if not before(r.mark, acked))
        compacted = StoredHistory(mark_of(acked), folded.schemas, kept)
        self._store.replace(compacted)
        self._history = compacted
        log.info("schema history compacted: %d records folded up to %s", count, compacted.mark)
