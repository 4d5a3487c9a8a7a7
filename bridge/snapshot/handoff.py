"""The stream's side of a snapshot: chunks wait here until the stream reaches their high
watermark, then go into the store between two binlog transactions (docs/snapshots.md).

``SnapshotHandoff.lock`` is the one lock of the interleaving: the instance's flush path holds
it while it notes the keys of a transaction (``observe``), puts the transaction and, at a
transaction boundary, puts every ready chunk (``reached``); a snapshot reader holds it while
it offers a chunk, which is put at once when the stream already stands at a boundary past
its high watermark (the stream idle at the end of the binlog).

A chunk is put as one pseudo-transaction: BEGIN, its rows minus the keys the stream changed
inside the window (INSERT entries of ``ChunkRead.per_entry`` rows, about a binlog rows
event's worth; each row still becomes a record of its own), END. Every rows entry and the END
are ack points carrying the progress after them (``SnapshotHeader.progress``), so the cursor
says which key a resumed snapshot starts after; the END also covers the table's end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bridge.entry import EncodedRowsApart, Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.position import (
    EntryPosition,
    SnapshotHeader,
    SnapshotProgress,
    TableProgress,
)
from bridge.snapshot.window import Key, Position, WatermarkWindows

PutEntries = Callable[[Sequence[Entry]], None]
BACKLOG_POLL_S = 0.005


class StoreBacklog(Protocol):
    """What the store holds unacknowledged, in batch items: an entry each, a snapshot entry
    its rows (``MemoryEventStore.unacked_items``)."""

    @property
    def unacked_items(self) -> int: ...


@dataclass(eq=False)
class Chunk:
    """One chunk read between two watermarks, and what became of it.

    ``rows``/``keys`` are parallel: the rows as INSERT images (or written in the output format
    ahead, a record each: ``EncodedRowsApart``), each row's key as the window compares it.
    They go in ``per_entry`` to an entry; ``entry_keys``: per entry, its last row's key as
    the cursor stores it. ``end_key``: the encoded key the next chunk starts after; ``last``:
    the table has no rows after this chunk.
    """

    table: str
    key_columns: tuple[str, ...]
    number: int
    rows: Sequence[RowData] | EncodedRowsApart
    keys: Sequence[Key]
    per_entry: int
    entry_keys: Sequence[object]
    low: Position
    high: Position
    read_ms: int
    end_key: object
    last: bool
    done: threading.Event = field(default_factory=threading.Event)
    redo: bool = False  # the table's shape changed in the window: read the chunk again
    rows_put: int = 0
    rows_dropped: int = 0


class SnapshotHandoff:
    def __init__(
        self,
        progress: SnapshotProgress,
        windows: WatermarkWindows,
        put: PutEntries,
        *,
        start: EntryPosition | None = None,
        store: StoreBacklog | None = None,
        backlog_rows: int = 0,
        drop_changed_keys: bool = True,
    ) -> None:
        """``put``: puts entries into the store (blocking while it is full). ``start``: where
        the stream starts reading, a transaction boundary; a chunk whose high watermark it
        has reached goes in at once, before the stream flushed anything (without it, the
        first chunk of a snapshot of an idle source waited for the first heartbeat, up to
        ``heartbeat_period_s``). ``store`` and ``backlog_rows``: readers wait in
        ``wait_for_room`` while the store holds ``backlog_rows`` items or more unacknowledged
        (a snapshot entry counts its rows; a chunk's entries hold a rows event's worth each,
        so the store's own bound, in entries, would let a slow Kafka pile up many times the
        rows it holds of the stream). ``drop_changed_keys=False`` disables the algorithm's
        one safety step, for the test that shows a stale row reaching Kafka without it."""
        self.lock = threading.Lock()
        self.progress = progress  # as put into the store
        self.windows = windows
        self._put = put
        self._drop = drop_changed_keys
        self._pending: list[Chunk] = []
        # The stream's last transaction boundary (a GTID-only start has no binlog position).
        self._at: EntryPosition | None = start if start and start.journal_name else None
        self._between = True
        self._store = store
        self._backlog_rows = backlog_rows

    # -- the stream's side (under ``lock``) ---------------------------------------------------

    def observe(self, entries: Sequence[Entry]) -> None:
        self.windows.observe(entries)

    def flushed(self, boundary: EntryPosition | None) -> None:
        """The stream put a transaction ending at ``boundary`` (None: a piece of one, the
        stream is inside a transaction). Puts every chunk the stream has now passed."""
        if boundary is None:
            self._between = False
            return
        self._between = True
        self._at = boundary
        self.windows.reached(boundary.sort_key())
        self._put_ready()

    def idle_at(self, position: EntryPosition) -> None:
        """A heartbeat: the source is idle with its binlog ending at ``position`` (past events
        the stream does not show, such as a rotation), between transactions."""
        if self._between:
            self.flushed(position)

    # -- the reader's side --------------------------------------------------------------------

    def offer(self, chunk: Chunk) -> None:
        """Queue ``chunk``; put it right away if the stream is already past its ``high``."""
        with self.lock:
            self._pending.append(chunk)
            self._put_ready()

    def wait_for_room(self, stopping: threading.Event) -> None:
        """Wait while the store holds ``backlog_rows`` items or more not yet acknowledged
        (or until ``stopping``)."""
        store = self._store
        if store is None or self._backlog_rows <= 0:
            return
        while store.unacked_items >= self._backlog_rows and not stopping.is_set():
            stopping.wait(BACKLOG_POLL_S)

    def cancel(self) -> None:
        """Release every waiting reader (stopping): their chunks are not put."""
        with self.lock:
            for chunk in self._pending:
                chunk.redo = True
                chunk.done.set()
            self._pending.clear()

    # -- putting ------------------------------------------------------------------------------

    def _put_ready(self) -> None:
        if not self._between or self._at is None:
            return
        at = self._at.sort_key()
        ready = [chunk for chunk in self._pending if chunk.high <= at]
        for chunk in ready:
            self._pending.remove(chunk)
            try:
                self._put_chunk(chunk, self._at)
            except BaseException:
                chunk.redo = True  # not put (the store stopped): the reader must not go on
                raise
            finally:
                chunk.done.set()

    def _put_chunk(self, chunk: Chunk, at: EntryPosition) -> None:
        # Up to where the chunk goes in, not just H: the stream may have run past H before
        # the chunk came, and the events in [H, at) are in the store ahead of it too.
        changed = self.windows.changed_keys(
            chunk.table, chunk.key_columns, chunk.low, at.sort_key()
        )
        if not isinstance(changed, set):  # REDO
            chunk.redo = True
            return
        schema, _, table = chunk.table.partition(".")
        current = self.progress.table(chunk.table) or TableProgress(chunk.table)
        rows = current.rows
        # Per entry: the progress after it (the plan with this table's step replaced) and
        # the entry.
        tables = self.progress.tables
        place = next((i for i, t in enumerate(tables) if t.table == chunk.table), None)
        before, after = (tables, ()) if place is None else (tables[:place], tables[place + 1 :])

        def progress_at(step: TableProgress) -> SnapshotProgress:
            if place is None:  # not in the plan (cannot happen): the plan as it is
                return self.progress
            return self.progress.with_tables((*before, step, *after))

        chunk_name = f"{chunk.table};{chunk.number}"

        def header(event_type: EventType | None, progress: SnapshotProgress | None) -> Header:
            return SnapshotHeader(
                at.journal_name or "",
                at.position or 0,
                at.server_id or 0,
                chunk.read_ms,
                schema,
                table,
                event_type,
                at.gtid or "",
                0,
                chunk_name,
                progress,
            )

        entries: list[Entry] = [Entry(header(None, None), EntryType.TRANSACTIONBEGIN, None, "")]
        insert, rowdata, name = EventType.INSERT, EntryType.ROWDATA, chunk.table
        count, per_entry, keys = len(chunk.rows), chunk.per_entry, chunk.keys
        dropping = self._drop and bool(changed)
        for start, encoded in zip(range(0, count, per_entry), chunk.entry_keys, strict=True):
            stop = min(start + per_entry, count)
            if dropping:
                kept = [i for i in range(start, stop) if keys[i] not in changed]
                chunk.rows_dropped += stop - start - len(kept)
                if not kept:
                    continue
                row_datas = _pick(chunk.rows, kept)
            else:
                row_datas = _pick(chunk.rows, range(start, stop))
            rows += len(row_datas)
            step = progress_at(TableProgress(name, encoded, rows, False))
            change = RowChange(insert, False, "", "", row_datas)
            entries.append(Entry(header(insert, step), rowdata, change, ""))
        progress = progress_at(TableProgress(chunk.table, chunk.end_key, rows, done=chunk.last))
        entries.append(Entry(header(None, progress), EntryType.TRANSACTIONEND))
        self._put(entries)
        chunk.rows_put = rows - current.rows
        self.progress = progress


def _pick(
    rows: Sequence[RowData] | EncodedRowsApart, indexes: Sequence[int]
) -> tuple[RowData, ...] | EncodedRowsApart:
    """The rows at ``indexes`` as an entry's rows."""
    if isinstance(rows, Sequence):
        if isinstance(indexes, range):
            return tuple(rows[indexes.start : indexes.stop])
        return tuple(rows[i] for i in indexes)
    return rows.pick(indexes)
