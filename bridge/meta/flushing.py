"""Periodic flushing of changed keys (the persistent meta manager's destinations).

Changed keys are marked dirty; a background thread writes them a period after the first
change, and ``stop()`` writes what is left. While nothing changes the thread sleeps (a process
with a hundred idle destinations has a hundred of these threads). A failed write keeps its
key dirty for the next round, so a store that is briefly unreachable loses nothing that a
later flush can write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from bridge.backoff import Backoff
from bridge.meta.exceptions import MetaError

log = logging.getLogger(__name__)

# The longest wait between flushes while the store keeps failing (a full disk, ZooKeeper down):
# one line per attempt, a few a minute, and the cursor written soon after the store is back.
RETRY_MAX_S = 30.0

K = TypeVar("K", bound=Hashable)


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
        self._changed = threading.Condition(self._lock)  # a key was marked, or stopping
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: MetaError | None = None
        period_s = period_ms / 1000
        self._retry = Backoff(period_s, max(RETRY_MAX_S, period_s))

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def mark(self, key: K) -> None:
        with self._lock:
            self._dirty.add(key)
            self._changed.notify()

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then write what is dirty; a failure of that last write raises."""
        with self._lock:
            self._stopping.set()
            self._changed.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush(raise_errors=True)

    def flush(self, *, raise_errors: bool = False) -> MetaError | None:
        """Write every dirty key now; failed ones stay dirty for the next try. Returns the
        round's last failure (``raise_errors``: raises the first)."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        failure = None
        for key in sorted(dirty, key=self._order):  # type: ignore[arg-type]
            try:
                self._write(key)
            except MetaError as exc:
                self.mark(key)
                self.last_error = failure = exc
                if raise_errors:
                    raise
        return failure

    def _run(self) -> None:
        """Once a key is dirty, flush a period later; while the store fails, wait longer each
        time (``Backoff``) and say so once per attempt, and once when it works again."""
        wait_s = self.period_ms / 1000
        while self._await_change() and not self._stopping.wait(wait_s):
            failure = self.flush()
            if failure is not None:
                wait_s = self._retry.next()
                log.error("meta flush failed, retrying in %.1f s: %s", wait_s, failure)
            elif self._retry.failures:
                log.warning("meta flush works again after %d failed attempts", self._retry.failures)
                self._retry.reset()
                wait_s = self.period_ms / 1000

    def _await_change(self) -> bool:
        """Sleep until a key is dirty (True) or the flusher stops (False)."""
        with self._lock:
            while not self._dirty and not self._stopping.is_set():
                self._changed.wait()
            return not self._stopping.is_set()
