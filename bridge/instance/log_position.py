"""Where the parser resumes: canal's log-position managers, composed rather than inherited.

``FailbackLogPositionManager(memory, meta)``: after an in-process parser restart the memory
manager knows the last position put into the store; on a fresh start only the meta manager's
acked cursor is known, so consumption resumes after the last acked transaction.
"""

from __future__ import annotations

import threading
from typing import Protocol

from bridge.meta import MetaManager
from bridge.position import LogPosition


class LogPositionManager(Protocol):
    def get_latest(self, destination: str) -> LogPosition | None: ...

    def persist(self, destination: str, position: LogPosition) -> None: ...


class MemoryLogPositionManager:
    def __init__(self) -> None:
        self._positions: dict[str, LogPosition] = {}
        self._lock = threading.Lock()

    def get_latest(self, destination: str) -> LogPosition | None:
        with self._lock:
            return self._positions.get(destination)

    def persist(self, destination: str, position: LogPosition) -> None:
        with self._lock:
            self._positions[destination] = position


class MetaLogPositionManager:
    """The smallest acked cursor among the destination's clients (read only)."""

    def __init__(self, meta: MetaManager) -> None:
        self._meta = meta

    def get_latest(self, destination: str) -> LogPosition | None:
        cursors = [
            cursor
            for client in self._meta.list_subscriptions(destination)
            if (cursor := self._meta.get_cursor(client)) is not None
        ]
        if not cursors:
            return None
        return min(cursors, key=lambda c: c.position.sort_key())

    def persist(self, destination: str, position: LogPosition) -> None:
        """Cursors move only through acks; the parser's progress is not a consumed position."""


class FailbackLogPositionManager:
    def __init__(self, primary: LogPositionManager, secondary: LogPositionManager) -> None:
        self._primary = primary
        self._secondary = secondary

    def get_latest(self, destination: str) -> LogPosition | None:
        return self._primary.get_latest(destination) or self._secondary.get_latest(destination)

    def persist(self, destination: str, position: LogPosition) -> None:
        self._primary.persist(destination, position)
