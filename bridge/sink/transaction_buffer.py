"""canal's EventTransactionBuffer: group parsed entries into transactions before the sink.

Flushing per transaction lets the parser record a position on a transaction boundary after
each flush; the size bound keeps memory flat for huge transactions, which then reach the sink
in pieces of at most ``transaction_size`` entries.

When a flush happens (canal's ``add``):

1. TRANSACTIONBEGIN: flush what is buffered (an unterminated previous piece), then buffer it.
2. TRANSACTIONEND: buffer it, then flush (the whole transaction, or its last piece).
3. ROWDATA: buffer it; a non-DML entry (DDL, QUERY, ...) flushes at once.
4. HEARTBEAT: buffer it, then flush (the source is idle: deliver what is waiting).
5. Any entry that fills the buffer to ``transaction_size`` flushes it.

If the flush callback raises, nothing is dropped: the entries stay buffered, the error
propagates to the caller, and a later ``flush()`` (or ``reset()`` on a parser restart) decides
their fate. The buffer never holds more than ``transaction_size`` entries: a full buffer must
be flushed successfully before another entry is accepted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from bridge.entry import Entry, EntryType
from bridge.sink.exceptions import SinkError

FlushCallback = Callable[[list[Entry]], None]


class TransactionBuffer:
    def __init__(self, flush_callback: FlushCallback, transaction_size: int = 1024) -> None:
        if transaction_size < 1:
            raise SinkError(f"transaction_size must be >= 1, got {transaction_size}")
        self.transaction_size = transaction_size
        self._callback = flush_callback
        self._buffer: list[Entry] = []
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._buffer)

    def add(self, entry: Entry) -> None:
        with self._lock:
            kind = entry.entry_type
            if kind is EntryType.TRANSACTIONBEGIN or len(self._buffer) >= self.transaction_size:
                self._flush()
            self._buffer.append(entry)
            if (
                kind in (EntryType.TRANSACTIONEND, EntryType.HEARTBEAT)
                or (kind is EntryType.ROWDATA and not _is_dml(entry))
                or len(self._buffer) >= self.transaction_size
            ):
                self._flush()

    def flush(self) -> None:
        """Hand everything buffered to the callback (e.g. on an idle timer)."""
        with self._lock:
            self._flush()

    def reset(self) -> None:
        """Drop buffered entries: the parser restarts from a transaction boundary anyway."""
        with self._lock:
            self._buffer = []

    def _flush(self) -> None:
        if not self._buffer:
            return
        pending = list(self._buffer)
        self._callback(pending)  # on failure the entries stay buffered
        self._buffer = []


def _is_dml(entry: Entry) -> bool:
    if entry.is_ddl:
        return False
    event_type = entry.header.event_type
    if event_type is None and entry.row_change is not None:
        event_type = entry.row_change.event_type
    return event_type is None or event_type.is_dml
