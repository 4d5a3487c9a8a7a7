"""canal's EntryEventSink: filter entries, then put them into the store with backpressure.

What is stored, per entry kind:

* ROWDATA (DML and DDL) whose ``schema.table`` the table filter accepts and whose kind
  (INSERT, UPDATE, DELETE, DDL) is not skipped, with the field filter applied to DML row
  images. A skipped change is left out as a row of a filtered table is: its transaction still
  ends, so the acked position moves past it (see empty transactions below). An entry with
  neither schema nor table name is kept (there is nothing to filter on). Schema-level DDL is
  matched as ``schema.`` (empty table), as canal's sink does: ``shop\\..*`` keeps
  ``CREATE DATABASE shop``, ``shop\\.orders`` does not.
* TRANSACTIONBEGIN is held back until the transaction's first kept row, so it is stored just
  before it; TRANSACTIONEND is stored if a row of its transaction was stored.
* Empty transactions (every row filtered out) are dropped like canal's
  ``filterEmtryTransactionEntry``, except one every ``empty_transaction_threshold`` or
  ``empty_transaction_interval_ms`` of binlog time, so the acked position keeps advancing
  while only filtered tables change.
* HEARTBEAT entries are not stored (canal's HeartBeatEntryEventHandler drops them too).

If ``sink`` raises (stopped, store error), the transaction state is undefined until
``reset()``; the parser calls it when it restarts from a transaction boundary.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from bridge.entry import (
    ROWDATA,
    TRANSACTION_BEGIN,
    TRANSACTION_END,
    Entry,
    EntryType,
    EventType,
    RowChange,
)
from bridge.position import LogIdentity
from bridge.sink.exceptions import SinkAlreadyStarted, SinkStopped
from bridge.sink.filters import FieldFilter, TableFilter
from bridge.sink.keys import KeyColumns
from bridge.sink.shaping import ColumnShaper
from bridge.store import EventStore

# The change kinds ``filter.skip`` names, as the row changes' event types (DDL: any is_ddl).
SKIPPABLE = {
    "insert": EventType.INSERT,
    "update": EventType.UPDATE,
    "delete": EventType.DELETE,
}


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """canal's defaults: ``filterTransactionEntry`` on, 8192 empty transactions or 5 s."""

    filter_empty_transactions: bool = True
    empty_transaction_threshold: int = 8192
    empty_transaction_interval_ms: int = 5000
    put_poll_seconds: float = 0.5  # how soon a put blocked on a full store notices stop()


class EntrySink:
    def __init__(
        self,
        store: EventStore,
        table_filter: TableFilter | None = None,
        field_filter: FieldFilter | None = None,
        options: SinkOptions | None = None,
        *,
        skip: Collection[str] = (),
        shaper: ColumnShaper | None = None,
        keys: KeyColumns | None = None,
    ) -> None:
        """``skip``: the change kinds left out, names of ``SKIPPABLE`` and ``ddl``
        (``filter.skip``); a snapshot's rows are reads, not changes, and are never skipped.
        ``shaper``: masks, hashes and truncates columns (``columns``), after the field filter,
        streamed and snapshot rows alike. ``keys``: the columns that key a table's records
        (``mq.key_columns``), marked before the shaper looks for masked keys."""
        self._store = store
        self.table_filter = table_filter
        self.field_filter = field_filter if field_filter else None
        self.shaper = shaper if shaper else None
        self.keys = keys if keys else None
        self.skipped = frozenset(SKIPPABLE[kind] for kind in skip if kind != "ddl")
        self.skip_ddl = "ddl" in skip
        self.options = options or SinkOptions()
        self._running = False
        self._lock = threading.Lock()
        self._held_begin: Entry | None = None
        self._rows_stored = False
        # Between a BEGIN (or, without BEGINs, a transaction's first row) and its END.
        self._in_transaction = False
        self._empty_count = 0
        self._empty_last_ms: int | None = None

    def start(self) -> None:
        if self._running:
            raise SinkAlreadyStarted()
        self.reset()
        self._running = True

    def stop(self) -> None:
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def reset(self) -> None:
        self._held_begin = None
        self._rows_stored = False
        self._in_transaction = False

    def sink(self, entries: Sequence[Entry], identity: LogIdentity) -> int:
        with self._lock:
            if not self._running:
                raise SinkStopped()
            selected = self._select(entries)
            if selected:
                self._put(identity, selected)
            return len(selected)

    def put_snapshot(self, entries: Sequence[Entry], identity: LogIdentity) -> None:
        """Put a snapshot chunk (bridge.snapshot.handoff) as it is, between two transactions:
        its tables passed the table filter when planned, and a chunk is not a transaction of
        the source to filter as empty; the field filter applies to its rows as to the stream's.
        Put in pieces the store can take (a chunk may be larger than the store)."""
        with self._lock:
            if not self._running:
                raise SinkStopped()
            kept = [
                self.field_filter.apply(entry)
                if self.field_filter is not None and entry.entry_type is EntryType.ROWDATA
                else entry
                for entry in entries
            ]
            if self.keys is not None:
                kept = [self.keys.apply(entry) for entry in kept]
            if self.shaper is not None:
                kept = [self.shaper.apply(entry) for entry in kept]
            piece = max(1, self._store.capacity_items // 2)
            for i in range(0, len(kept), piece):
                self._put(identity, kept[i : i + piece])

    def _select(self, entries: Sequence[Entry]) -> list[Entry]:
        """The entries to store. A held BEGIN is put with its transaction's first row, under
        that call's source: the same, since an instance reads one source (a new source is a
        new instance) and resets its sink whenever it reads again."""
        out: list[Entry] = []
        accepts = None if self.table_filter is None else self.table_filter.accepts
        skipped, skip_ddl = self.skipped, self.skip_ddl
        for entry in entries:
            kind = entry.entry_type
            if kind is TRANSACTION_BEGIN:
                self._held_begin = entry
                self._rows_stored = False
                self._in_transaction = True
            elif kind is ROWDATA:
                header = entry.header
                schema, table = header.schema_name, header.table_name
                change = entry.row_change
                wanted = not (skipped or skip_ddl) or not _skipped(change, skipped, skip_ddl)
                if wanted and (accepts is None or not (schema or table) or accepts(schema, table)):
                    if self._held_begin is not None:
                        out.append(self._held_begin)
                        self._held_begin = None
                    field_filter, keys, shaper = self.field_filter, self.keys, self.shaper
                    kept = entry if field_filter is None else field_filter.apply(entry)
                    kept = kept if keys is None else keys.apply(kept)
                    out.append(kept if shaper is None else shaper.apply(kept))
                    self._rows_stored = True
                if change is None or not change.is_ddl or change.event_type is EventType.QUERY:
                    # A row, or a statement that may open or sit in a transaction (SAVEPOINT,
                    # XA START, a statement-based change): its transaction's END follows.
                    self._in_transaction = True
                elif not self._in_transaction:
                    # A DDL outside any transaction is one of its own (it commits): the next
                    # transaction starts afresh, as its BEGIN would say (a FlatMessage
                    # destination's reader sends none).
                    self._rows_stored = False
            elif kind is TRANSACTION_END:
                if self._rows_stored or self._pass_empty(entry):
                    if self._held_begin is not None:
                        out.append(self._held_begin)
                    out.append(entry)
                self._held_begin = None
                self._rows_stored = False
                self._in_transaction = False
        return out

    def _pass_empty(self, end: Entry) -> bool:
        """Whether an empty transaction is stored anyway (canal's periodic pass-through)."""
        options = self.options
        if not options.filter_empty_transactions:
            return True
        now = end.header.execute_time
        self._empty_count += 1
        if (
            self._empty_last_ms is None
            or self._empty_count > options.empty_transaction_threshold
            or abs(now - self._empty_last_ms) > options.empty_transaction_interval_ms
        ):
            self._empty_count = 0
            self._empty_last_ms = now
            return True
        return False

    def _put(self, identity: LogIdentity, entries: list[Entry]) -> None:
        """Block until the store takes ``entries`` (backpressure), or until ``stop()``."""
        while self._running:
            if self._store.put(identity, entries, timeout=self.options.put_poll_seconds):
                return
        raise SinkStopped()


def _skipped(change: RowChange | None, kinds: frozenset[EventType], ddl: bool) -> bool:
    """Whether ``filter.skip`` leaves a rows entry out: a DDL when ``ddl``, a row change of a
    kind in ``kinds`` (a statement without rows, e.g. SAVEPOINT, is never skipped)."""
    if change is None:
        return False
    if change.is_ddl:
        return ddl and change.event_type is not EventType.QUERY
    return change.event_type in kinds
