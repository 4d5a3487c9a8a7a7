"""The watermark windows of a destination's snapshot (docs/snapshots.md, "The algorithm").

For a chunk of table ``T`` read between a low watermark ``L`` and a high watermark ``H``, the
keys of ``T`` that rows events at positions in ``[L, P)`` changed, where ``P >= H`` is the
stream position where the chunk is put (an event *starting* at or after ``L`` was written
after ``L`` was taken; the events before ``P`` are in the store ahead of the chunk, those in
``[H, P)`` too when the stream ran past ``H`` before the chunk came). Those rows are dropped
from the chunk: the events carry them (full row images), at their place in the stream.

The windows are fed by the stream (``observe``, ``reached``) as it is put into the store,
in the binlog reader's thread; a chunk's ``L`` lies in the past of the stream, so this keeps
the row images of the planned tables since the oldest ``L`` still in use (``begin_chunk`` /
``release``) rather than opening a window when a chunk starts (a table's key columns are known
only once its reader described it, after the stream may have passed ``L``). Pure logic:
positions are ``(binlog file, offset)`` sort keys, keys are tuples of the key columns' rendered
values (the same rendering for the stream and the snapshot, so they compare equal).

A DDL of a table in its window cannot be judged row by row (the key columns may have
changed): ``changed_keys`` answers ``REDO`` and the chunk is read again.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from bridge.entry import Column, Entry, EntryType, RowData, row_images

Position = tuple[str, int]  # EntryPosition.sort_key()
Key = tuple[str | None, ...]  # the key columns' values as rendered; None for NULL


class _Redo:
    def __repr__(self) -> str:
        return "REDO"


REDO: Final = _Redo()  # the table changed shape inside the window: read the chunk again


@dataclass(frozen=True, slots=True)
class _Change:
    position: Position
    table: str
    rows: tuple[RowData, ...] | _Redo


def key_of(columns: Iterable[Column], key_columns: tuple[str, ...]) -> Key | None:
    """The key of a row image by column name, or None when a key column is missing."""
    values = {column.name.lower(): column for column in columns}
    key: list[str | None] = []
    for name in key_columns:
        column = values.get(name.lower())
        if column is None:
            return None
        key.append(None if column.is_null else column.value)
    return tuple(key)


class WatermarkWindows:
    """The changes of the tracked tables since the oldest low watermark still needed.

    Thread-safe: the stream feeds it from the binlog reader's thread, snapshot readers take
    watermarks from theirs.
    """

    def __init__(self, start: Position, tables: Iterable[str]) -> None:
        """``start``: where the stream starts reading (the first chunk's low watermark);
        ``tables``: the ``schema.table`` names still to snapshot."""
        self._lock = threading.Lock()
        self._tables = {table.lower() for table in tables}
        self._changes: deque[_Change] = deque()
        self._stream_at = start
        self._last_begin = start
        self._pins: Counter[Position] = Counter()

    # -- the stream's side -------------------------------------------------------------------

    def untrack(self, table: str) -> None:
        """``table``'s snapshot is over: its changes need no noting any more."""
        with self._lock:
            self._tables.discard(table.lower())

    def observe(self, entries: Iterable[Entry]) -> None:
        """Note the row images of every rows event of a planned table, and every DDL of one.
        Entries must come in stream order."""
        with self._lock:
            if not self._tables:
                return
            for entry in entries:
                if entry.entry_type is not EntryType.ROWDATA:
                    continue
                header = entry.header
                table = f"{header.schema_name}.{header.table_name}".lower()
                if table not in self._tables:
                    continue
                position = (header.logfile_name, header.logfile_offset)
                if entry.is_ddl or entry.row_change is None:
                    self._changes.append(_Change(position, table, REDO))
                else:
                    self._changes.append(_Change(position, table, row_images(entry.row_change)))

    def reached(self, position: Position) -> None:
        """The stream has put everything before ``position`` (a transaction boundary)."""
        with self._lock:
            self._stream_at = max(self._stream_at, position)
            self._trim()

    @property
    def stream_at(self) -> Position:
        return self._stream_at

    # -- the snapshot's side -----------------------------------------------------------------

    def begin_chunk(self) -> Position:
        """The low watermark of a chunk starting now: the stream's position when the previous
        chunk of the destination started (the first: where the stream started), not the
        server's position now. The window is widened backwards on purpose: a transaction
        written to the binlog before a chunk's SELECT but not yet visible to it (group commit
        writes the binlog before the engine commits) must still fall inside the window; this
        assumes no transaction stays invisible for longer than one chunk's read. Pinned until
        ``release``."""
        with self._lock:
            low = self._last_begin
            self._last_begin = self._stream_at
            self._pins[low] += 1
            return low

    def release(self, low: Position) -> None:
        """The chunk begun with ``low`` is put (or abandoned): its changes may go."""
        with self._lock:
            self._pins[low] -= 1
            if self._pins[low] <= 0:
                del self._pins[low]
            self._trim()

    def changed_keys(
        self, table: str, key_columns: tuple[str, ...], low: Position, high: Position
    ) -> set[Key] | _Redo:
        """The keys (by ``key_columns``, before and after images) of ``table`` changed by
        events in ``[low, high)``, or REDO."""
        table = table.lower()
        keys: set[Key] = set()
        with self._lock:
            for change in self._changes:
                if change.table != table or not low <= change.position < high:
                    continue
                if isinstance(change.rows, _Redo):
                    return REDO
                for row in change.rows:
                    for image in (row.before, row.after):
                        if not image:
                            continue
                        key = key_of(image, key_columns)
                        if key is None:  # a key column is gone: the table changed shape
                            return REDO
                        keys.add(key)
        return keys

    def _trim(self) -> None:
        oldest = min([self._last_begin, *self._pins])
        changes = self._changes
        while changes and changes[0].position < oldest:
            changes.popleft()
