"""Periodic flushing of changed keys (the persistent meta manager's destinations).

Changed keys are marked dirty; a background thread writes them every period, and ``stop()``
writes what is left. A failed write keeps its key dirty for the next round, so a store that is
briefly unreachable loses nothing that a later flush can write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from bridge.meta.exceptions import MetaError

log = logging.getLogger(__name__)

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
