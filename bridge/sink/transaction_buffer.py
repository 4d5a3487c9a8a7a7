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

``add_batch`` takes the entries that arrived together (one batch of the binlog reader process)
and flushes the whole transactions among them together, at the batch's end: one flush (one
sink lock, one store put, one wake-up of the MQ worker) for hundreds of one-row transactions
instead of one each. It delays nothing (the whole batch is already here), and the rules above
still decide every other flush; a flush ends on a transaction boundary as before.

If the flush callback raises, nothing is dropped: the entries stay buffered, the error
propagates to the caller, and a later ``flush()`` (or ``reset()`` on a parser restart) decides
their fate. The buffer never holds more than ``transaction_size`` entries: a full buffer must
be flushed successfully before another entry is accepted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from bridge.entry import (
    DML_EVENT_TYPES,
    HEARTBEAT,
    ROWDATA,
    TRANSACTION_BEGIN,
    TRANSACTION_END,
    Entry,
)
from bridge.sink.exceptions import SinkError

FlushCallback = Callable[[list[Entry]], None]


class TransactionBuffer:
    def __init__(self, flush_callback: FlushCallback, transaction_size: int = 1024) -> None:
        if transaction_size < 1:
            raise SinkError(f"transaction_size must be >= 1, got {transaction_size}")
        self.transaction_size = transaction_size
        self._callback = flush_callback
        self._buffer: list[Entry] = []
        # Buffered entries up to here are whole transactions, not yet flushed (add_batch).
        self._complete = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._buffer)

    def add(self, entry: Entry) -> None:
        """One entry by the rules above (``add_batch`` of one entry: a transaction it ends is
        flushed at once)."""
        self.add_batch((entry,))

    def add_batch(self, entries: Sequence[Entry]) -> None:
        """The rules above for each entry, except that a TRANSACTIONEND does not flush at
        once: the transactions completed by ``entries`` are flushed together at the end (module
        docstring). A transaction left open stays buffered. (The buffer's length and its
        whole part are kept in locals, read again after each flush: every entry of the
        source passes here.)"""
        with self._lock:
            size = self.transaction_size
            buffer, complete, buffered = self._state()
            for entry in entries:
                kind = entry.entry_type
                # The rules apply to the open transaction (what follows the whole ones); whole
                # ones are flushed first whenever the open one is, or for room.
                open_piece = buffered - complete
                if (kind is TRANSACTION_BEGIN and open_piece) or open_piece >= size:
                    self._flush_in_order()
                    buffer, complete, buffered = self._state()
                elif buffered >= size:
                    self._flush_complete()
                    buffer, complete, buffered = self._state()
                buffer.append(entry)
                buffered += 1
                if kind is TRANSACTION_END:
                    complete = self._complete = buffered
                elif (
                    kind is HEARTBEAT
                    or (kind is ROWDATA and not _is_dml(entry))
                    or buffered - complete >= size
                ):
                    self._flush_in_order()
                    buffer, complete, buffered = self._state()
                if buffered >= size:
                    self._flush_complete()
                    buffer, complete, buffered = self._state()
            self._flush_complete()

    def _state(self) -> tuple[list[Entry], int, int]:
        """The buffer, its whole part and its length, as ``add_batch`` keeps them in locals
        (read again after a flush, which may replace the buffer)."""
        buffer = self._buffer
        return buffer, self._complete, len(buffer)

    def flush(self) -> None:
        """Hand everything buffered to the callback (e.g. on an idle timer)."""
        with self._lock:
            self._flush()

    def reset(self) -> None:
        """Drop buffered entries: the parser restarts from a transaction boundary anyway."""
        with self._lock:
            self._buffer = []
            self._complete = 0

    def _flush(self) -> None:
        if not self._buffer:
            return
        pending = list(self._buffer)
        self._callback(pending)  # on failure the entries stay buffered
        self._buffer = []
        self._complete = 0

    def _flush_complete(self) -> None:
        """Flush the whole transactions buffered, keeping an open one."""
        complete = self._complete
        if complete == 0:
            return
        if complete == len(self._buffer):
            self._flush()
            return
        self._callback(self._buffer[:complete])  # on failure the entries stay buffered
        del self._buffer[:complete]
        self._complete = 0

    def _flush_in_order(self) -> None:
        """Flush everything, the whole transactions first: each flush that ends on a
        transaction end lets the instance record that boundary."""
        self._flush_complete()
        self._flush()


def _is_dml(entry: Entry) -> bool:
    change = entry.row_change
    if change is not None and change.is_ddl:
        return False
    event_type = entry.header.event_type
    if event_type is None and change is not None:
        event_type = change.event_type
    return event_type is None or event_type in DML_EVENT_TYPES  # (is_dml: a property call)
