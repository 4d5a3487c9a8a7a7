"""What the file and ZooKeeper meta stores share: periodic flushing of changed keys, and
outstanding batches kept in the wrapped manager.

Changed keys (destinations, or clients) are marked dirty; a background thread writes them every
period, and ``stop()`` writes what is left. A failed write keeps its key dirty for the next
round, so a store that is briefly unreachable loses nothing that a later flush can write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from bridge.meta.base import ClientIdentity, MetaManager
from bridge.meta.exceptions import MetaError
from bridge.position import PositionRange

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class MixedMetaManager:
    """What canal's mixed managers (file, ZooKeeper) share: outstanding batches stay in the
    wrapped manager's memory, since a persistent store keeps cursors only, so those calls go
    straight through; cursors are written by a ``PeriodicFlusher``, and stopping writes what
    is left before the wrapped manager stops."""

    _delegate: MetaManager
    _flusher: PeriodicFlusher[Any]
    _running: bool

    def stop(self) -> None:
        """Stop the flush thread, write what is dirty, stop the delegate (even if that fails)."""
        if not self._running:
            return
        self._running = False
        try:
            self._flusher.stop()
        finally:
            self._delegate.stop()

    @property
    def running(self) -> bool:
        return self._running

    @property
    def flusher_alive(self) -> bool:
        return self._flusher.alive

    @property
    def flush_period_ms(self) -> int:
        return self._flusher.period_ms

    @property
    def last_flush_error(self) -> MetaError | None:
        return self._flusher.last_error

    def flush(self, *, raise_errors: bool = False) -> None:
        """Write every changed key (destination, client) now; failed ones stay marked for the
        next try."""
        self._flusher.flush(raise_errors=raise_errors)

    def add_batch(self, client: ClientIdentity, position_range: PositionRange) -> int:
        return self._delegate.add_batch(client, position_range)

    def get_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange | None:
        return self._delegate.get_batch(client, batch_id)

    def remove_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange:
        return self._delegate.remove_batch(client, batch_id)

    def get_first_batch(self, client: ClientIdentity) -> PositionRange | None:
        return self._delegate.get_first_batch(client)

    def get_last_batch(self, client: ClientIdentity) -> PositionRange | None:
        return self._delegate.get_last_batch(client)

    def list_all_batch_ids(self, client: ClientIdentity) -> list[int]:
        return self._delegate.list_all_batch_ids(client)

    def clear_all_batches(self, client: ClientIdentity) -> None:
        self._delegate.clear_all_batches(client)


class PeriodicFlusher(Generic[K]):
    def __init__(
        self,
        write: Callable[[K], None],
        period_ms: int,
        name: str,
        order: Callable[[K], object] = repr,
    ) -> None:
        if period_ms <= 0:
            raise MetaError(f"flush_period_ms must be > 0, got {period_ms}")
        self._write = write
        self.period_ms = period_ms
        self._name = name
        self._order = order
        self._dirty: set[K] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: MetaError | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def mark(self, key: K) -> None:
        with self._lock:
            self._dirty.add(key)

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then write what is dirty; a failure of that last write raises."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush(raise_errors=True)

    def flush(self, *, raise_errors: bool = False) -> None:
        """Write every dirty key now; failed ones stay dirty for the next try."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        for key in sorted(dirty, key=self._order):  # type: ignore[arg-type]
            try:
                self._write(key)
            except MetaError as exc:
                self.mark(key)
                self.last_error = exc
                if raise_errors:
                    raise
                log.error("meta flush failed, retrying in %d ms: %s", self.period_ms, exc)

    def _run(self) -> None:
        while not self._stopping.wait(self.period_ms / 1000):
            self.flush()
