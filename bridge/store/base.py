"""The event store interface (canal's CanalEventStore) and what flows through it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from bridge.entry import Entry
from bridge.model import value_class
from bridge.position import (
    LogIdentity,
    LogPosition,
    PositionRange,
    SnapshotHeader,
    position_of,
)


class BatchMode(Enum):
    """How capacity and get batch sizes are counted (canal's BatchMode)."""

    ITEMSIZE = "ITEMSIZE"
    MEMSIZE = "MEMSIZE"


def batch_items(entry: Entry) -> int:
    """What an entry counts for in an ITEMSIZE batch: the records it becomes. One for a
    binlog entry (a rows event is one message); a snapshot entry's rows for a snapshot entry
    (each row is a message of its own, and an entry holds a rows event's worth of them), so
    a batch of ``batch_size`` holds as many snapshot rows as when each row was an entry."""
    change = entry.row_change
    if change is None or type(entry.header) is not SnapshotHeader:
        return 1
    return max(1, len(change.row_datas))


@value_class
class Event:
    """An entry with the source it was read from (canal's store Event). The store keeps the
    two side by side, per slot, and makes an Event only for the positions it reports."""

    identity: LogIdentity
    entry: Entry

    def log_position(self, *, included: bool = False) -> LogPosition:
        """Where the entry starts, tagged with its source (canal's createPosition)."""
        return LogPosition(self.identity, position_of(self.entry).with_included(included))


@dataclass(frozen=True, slots=True)
class Events:
    """One batch handed out by ``get``.

    ``first_sequence``/``last_sequence`` are the store's sequence numbers of the first and last
    entry; acking ``last_sequence`` is exact even when two entries share a binlog position.
    For an empty batch ``range`` is ``None`` and ``last_sequence == first_sequence - 1``.
    ``range`` holds the positions with their sources.
    """

    entries: tuple[Entry, ...]
    range: PositionRange | None
    first_sequence: int
    last_sequence: int

    @property
    def mem_size(self) -> int:
        return sum(entry.mem_size for entry in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)


class EventStore(Protocol):
    """A bounded buffer between the sink (producer) and the getter (consumer).

    Three sequences ``put >= get >= ack``: delivered entries stay until acked, so a
    ``rollback`` delivers them again. ``put`` blocks while full (backpressure to the parser).
    """

    def start(self) -> None: ...

    def stop(self) -> None:
        """Stop and release every blocked caller with ``StoreStopped``."""

    @property
    def running(self) -> bool: ...

    @property
    def capacity_items(self) -> int:
        """The most entries the store holds, so the most one ``put`` may carry (a larger
        batch is refused): a producer with more to put at once (a snapshot chunk) splits it."""
        ...

    def put(
        self, source: LogIdentity, entries: Sequence[Entry], timeout: float | None = None
    ) -> bool:
        """Add all of ``entries``, read from ``source``, or none; wait for room (``None`` =
        forever). False on timeout."""

    def try_put(self, source: LogIdentity, entries: Sequence[Entry]) -> bool: ...

    def get(
        self, batch_size: int, timeout: float | None = None, idle_timeout: float | None = None
    ) -> Events:
        """``timeout`` ``None``: what is there now; ``<= 0``: wait for a full batch; ``> 0``:
        wait so long, or until ``source_caught_up`` says no more is on its way (then what is
        there). ``idle_timeout`` (> 0): when nothing at all is there, first wait up to
        that long for an entry (returning empty if none comes), then as ``timeout`` says: an
        idle client sleeps until there is work instead of coming round every ``timeout``."""

    def wake(self) -> None:
        """End a get's idle wait (empty), or the next one's if none is under way."""

    def source_caught_up(self) -> None:
        """The reader has put everything the source has written so far (the next ``put``
        says otherwise): a get waiting ``timeout`` for a fuller batch returns what is there,
        as waiting would only add latency."""

    def ack(self, target: int | LogPosition) -> None:
        """Free everything up to and including a sequence number or an entry's position."""

    def rollback(self) -> None:
        """Forget what was delivered but not acked: the next get starts after the ack."""

    def first_position(self) -> LogPosition | None: ...

    def latest_position(self) -> LogPosition | None: ...
