"""The sink interface (canal's CanalEventSink): where the parser hands flushed entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bridge.entry import Entry
from bridge.position import LogIdentity


class EventSink(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...

    @property
    def running(self) -> bool: ...

    def sink(self, entries: Sequence[Entry], identity: LogIdentity) -> int:
        """Filter ``entries`` read from ``identity`` and store them, blocking while the store is
        full; returns how many were stored. Raises ``SinkStopped`` if stopped meanwhile."""

    def reset(self) -> None:
        """Forget per-transaction state: the parser restarts at a transaction boundary."""
