"""canal's mixed meta managers (FileMixedMetaManager, PeriodMixedMetaManager over ZooKeeper) as
one wrapper: a memory manager answers every call, a ``CursorStore`` keeps the cursors.

* Outstanding batches stay in the wrapped manager only: after a restart, unacked batches are
  simply delivered again from the cursor.
* A destination's subscriptions and cursors are read from the store once: at ``start`` for the
  destinations the store's ``open`` names (the file store: every ``meta.dat``, so a damaged
  one fails the start), else on first use (ZooKeeper: a process that takes a destination over
  resumes from the last cursor its previous owner wrote).
* Cursor updates mark their destination dirty; a background thread saves dirty destinations
  every ``flush_period_ms`` (so a cursor acked at most that long ago may be lost on a crash:
  the tail after it is delivered again, nothing is skipped).
* subscribe/unsubscribe save at once (rare, and must not be lost); ``stop()`` saves whatever
  is still dirty.

A failed periodic save is logged and retried next period; ``stop()`` raises it if the final
save fails too.
"""

from __future__ import annotations

import threading

from bridge.meta.base import ClientIdentity, CursorStore, MetaManager
from bridge.meta.exceptions import MetaAlreadyStarted, MetaError, MetaNotRunning
from bridge.meta.flushing import PeriodicFlusher
from bridge.position import LogPosition, PositionRange


class PersistentMetaManager:
    def __init__(
        self, delegate: MetaManager, store: CursorStore, flush_period_ms: int = 1000
    ) -> None:
        self._delegate = delegate
        self.store = store
        self._running = False
        self._loaded: set[str] = set()
        self._load_lock = threading.Lock()
        self._save_lock = threading.Lock()  # one save at a time: no older content wins
        self._flusher: PeriodicFlusher[str] = PeriodicFlusher(
            self._save, flush_period_ms, f"meta-flush:{store!r}"
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            raise MetaAlreadyStarted()
        self._delegate.start()
        self._loaded.clear()
        try:
            for destination in self.store.open():
                self._ensure_loaded(destination)
        except BaseException:
            self._delegate.stop()
            raise
        self._running = True
        self._flusher.start()

    def stop(self) -> None:
        """Stop the flush thread, save what is dirty, stop the delegate (even if that fails)."""
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
        """Save every changed destination now; failed ones stay marked for the next try."""
        self._flusher.flush(raise_errors=raise_errors)

    # -- persistence -------------------------------------------------------------------------

    def _save(self, destination: str) -> None:
        with self._save_lock:
            cursors = [
                (client, self._delegate.get_cursor(client))
                for client in self._delegate.list_subscriptions(destination)
            ]
            self.store.save(destination, cursors)

    def _ensure_loaded(self, destination: str) -> None:
        """Read the destination's subscriptions and cursors once."""
        if destination in self._loaded:
            return
        with self._load_lock:
            if destination in self._loaded:
                return
            for client, cursor in self.store.load(destination):
                self._delegate.subscribe(client)
                if cursor is not None:
                    self._delegate.update_cursor(client, cursor)
            self._loaded.add(destination)

    def _loaded_for(self, destination: str) -> None:
        if self._running:  # stopped: the delegate raises MetaNotRunning
            self._ensure_loaded(destination)

    def _check(self) -> None:
        if not self._running:
            raise MetaNotRunning()

    # -- subscriptions and cursors: the delegate's, saved to the store ------------------------

    def subscribe(self, client: ClientIdentity) -> None:
        self._check()
        self._ensure_loaded(client.destination)
        self._delegate.subscribe(client)
        self._flusher.mark(client.destination)
        self.flush(raise_errors=True)

    def unsubscribe(self, client: ClientIdentity) -> None:
        self._check()
        self._ensure_loaded(client.destination)
        self._delegate.unsubscribe(client)
        self._flusher.mark(client.destination)
        self.flush(raise_errors=True)

    def has_subscribe(self, client: ClientIdentity) -> bool:
        self._loaded_for(client.destination)
        return self._delegate.has_subscribe(client)

    def list_subscriptions(self, destination: str) -> list[ClientIdentity]:
        self._loaded_for(destination)
        return self._delegate.list_subscriptions(destination)

    def get_cursor(self, client: ClientIdentity) -> LogPosition | None:
        self._loaded_for(client.destination)
        return self._delegate.get_cursor(client)

    def update_cursor(self, client: ClientIdentity, position: LogPosition) -> None:
        self._loaded_for(client.destination)
        self._delegate.update_cursor(client, position)
        self._flusher.mark(client.destination)  # after the update: a flush never misses it

    # -- batches: memory only ----------------------------------------------------------------

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
