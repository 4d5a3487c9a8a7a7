"""canal's MemoryEventStoreWithBuffer: a ring buffer with put/get/ack sequences.

Capacity is ``buffer_size`` slots and, in MEMSIZE mode, also ``buffer_size * mem_unit`` bytes
(each entry charged ``Entry.mem_size``). Like canal, the byte check only asks whether the store
is below capacity *before* a put, so one oversized entry can always get in and the store never
deadlocks; the slot check is exact. Every operation holds one lock; blocked callers wait on
conditions and are woken by the operation that can let them through, or by ``stop``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from bridge.entry import Entry
from bridge.position import (
    LogIdentity,
    LogPosition,
    PositionRange,
    SnapshotHeader,
    is_ack_point,
    resume_position_after,
    snapshot_progress_of,
)
from bridge.store.base import BatchMode, Event, Events, batch_items
from bridge.store.exceptions import (
    AckOutOfRange,
    BatchTooLarge,
    NoMatchingPosition,
    StoreAlreadyStarted,
    StoreError,
    StoreStopped,
)

T = TypeVar("T")

_INIT_SEQUENCE = -1
_FIRST_RING = 256  # slots of a ring when first made; it doubles as the unacked events need


@dataclass(frozen=True, slots=True)
class MemoryStoreConfig:
    """canal's ``canal.instance.memory.*`` settings.

    Defaults are canal's except ``batch_mode``: ITEMSIZE, as in ``bridge.config`` (canal
    defaults to MEMSIZE), so that a get's ``batch_size`` counts records unless asked
    otherwise: an entry each, a snapshot entry as its rows (``base.batch_items``).
    """

    buffer_size: int = 16384
    mem_unit: int = 1024
    batch_mode: BatchMode = BatchMode.ITEMSIZE
    ddl_isolation: bool = False

    def __post_init__(self) -> None:
        size = self.buffer_size
        if size < 1 or size & (size - 1):
            raise StoreError(f"buffer_size must be a power of two >= 1, got {size}")
        if self.mem_unit < 1:
            raise StoreError(f"mem_unit must be >= 1 byte, got {self.mem_unit}")


class MemoryEventStore:
    """The in-memory ``EventStore``.

    In MEMSIZE mode ``get(batch_size)`` counts ``batch_size * mem_unit`` bytes, as canal does:
    events are taken while the bytes taken so far are <= that limit, so a batch may exceed it
    by its last event and always holds at least one. In ITEMSIZE mode it counts ``batch_size``
    items (``base.batch_items``) and also ends once it holds ``batch_size * mem_unit`` bytes
    (canal's ITEMSIZE has no such bound): a batch of one big transaction's rows events would
    otherwise hold 4,096 events of 8 KiB each, three times over (the batch sent, the next one
    built, librdkafka's copies); with it the 500k-row transaction of the benchmark's workload
    (c) peaks below 200 MB, not 220-260.
    """

    def __init__(self, config: MemoryStoreConfig | None = None) -> None:
        self.config = config or MemoryStoreConfig()
        self._lock = threading.Lock()
        self._not_full = threading.Condition(self._lock)
        self._not_empty = threading.Condition(self._lock)
        self._running = False
        self._reset()

    def _reset(self) -> None:
        # The ring: as many slots as the unacked entries need, a power of two up to
        # buffer_size, grown by ``_fit`` (at defaults each of its four lists is 128 KiB: 51 MB
        # for 100 quiet destinations, had every store the whole of it). Per slot its entry
        # and the source it was read from: canal's Event, without an object per entry (0.11
        # us each, three per one-row transaction).
        self._slots: list[Entry | None] = []
        self._sources: list[LogIdentity | None] = []
        # Per slot, the put totals (mem, batch items) once its event was in: a get and an ack
        # read their totals here instead of adding up their events one by one.
        self._mem_after: list[int] = []
        self._items_after: list[int] = []
        self._mask = -1  # len(self._slots) - 1
        self._put_seq = self._get_seq = self._ack_seq = _INIT_SEQUENCE
        self._put_mem = self._get_mem = self._ack_mem = 0
        self._put_items = self._get_items = self._ack_items = 0  # batch_items of entries
        self._last_put: Event | None = None
        self._last_snapshot_seq = _INIT_SEQUENCE  # the newest snapshot entry's sequence
        self._last_ack: Event | None = None
        self._woken = False  # wake() came: the next idle wait ends at once
        self._caught_up = False  # source_caught_up() came after the last put

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._running:
                raise StoreAlreadyStarted()
            self._reset()
            self._running = True

    def stop(self) -> None:
        with self._lock:
            self._running = False
            self._slots, self._sources = [], []  # lets go of the entries
            self._mem_after, self._items_after = [], []
            self._mask = -1
            self._not_full.notify_all()
            self._not_empty.notify_all()

    @property
    def running(self) -> bool:
        return self._running

    # -- introspection -----------------------------------------------------------------------

    @property
    def put_sequence(self) -> int:
        return self._put_seq

    @property
    def get_sequence(self) -> int:
        return self._get_seq

    @property
    def ack_sequence(self) -> int:
        return self._ack_seq

    @property
    def used_memory(self) -> int:
        """Bytes held by entries not yet acked."""
        return self._put_mem - self._ack_mem

    @property
    def unacked_items(self) -> int:
        """Batch items (``batch_items``: records) held by entries not yet acked."""
        return self._put_items - self._ack_items

    @property
    def capacity_items(self) -> int:
        return self.config.buffer_size

    @property
    def capacity_bytes(self) -> int:
        return self.config.buffer_size * self.config.mem_unit

    # -- put ---------------------------------------------------------------------------------

    def put(
        self, source: LogIdentity, entries: Sequence[Entry], timeout: float | None = None
    ) -> bool:
        if len(entries) > self.config.buffer_size:
            raise BatchTooLarge(len(entries), self.config.buffer_size)
        with self._lock:
            self._check_running("put")
            if not entries:
                return True
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._has_room(len(entries)):
                if not self._wait(self._not_full, deadline):
                    return False
                self._check_running("put")
            self._do_put(source, entries)
            return True

    def try_put(self, source: LogIdentity, entries: Sequence[Entry]) -> bool:
        return self.put(source, entries, timeout=0)

    def _has_room(self, count: int) -> bool:
        if self._put_seq + count - self._ack_seq > self.config.buffer_size:
            return False
        if self.config.batch_mode is BatchMode.MEMSIZE:
            return self._put_mem - self._ack_mem < self.capacity_bytes
        return True

    def _fit(self, count: int) -> None:
        """Grow the ring to hold ``count`` more unacked events (``_has_room`` said they fit
        in buffer_size), moving the unacked ones to their slots in the larger ring."""
        needed = self._put_seq + count - self._ack_seq
        if needed <= len(self._slots):
            return
        size = min(max(_FIRST_RING, 1 << (needed - 1).bit_length()), self.config.buffer_size)
        slots: list[Entry | None] = [None] * size
        sources: list[LogIdentity | None] = [None] * size
        mem_after, items_after = [0] * size, [0] * size
        old_mask, mask = self._mask, size - 1
        for sequence in range(self._ack_seq + 1, self._put_seq + 1):
            old, new = sequence & old_mask, sequence & mask
            slots[new], sources[new] = self._slots[old], self._sources[old]
            mem_after[new], items_after[new] = self._mem_after[old], self._items_after[old]
        self._slots, self._sources = slots, sources
        self._mem_after, self._items_after = mem_after, items_after
        self._mask = mask

    def _do_put(self, source: LogIdentity, entries: Sequence[Entry]) -> None:
        self._fit(len(entries))
        slots, sources, mem_after, items_after, mask = (
            self._slots,
            self._sources,
            self._mem_after,
            self._items_after,
            self._mask,
        )
        sequence, mem, items = self._put_seq, self._put_mem, self._put_items
        for entry in entries:
            sequence += 1
            slot = sequence & mask
            slots[slot] = entry
            sources[slot] = source
            header = entry.header
            mem += header.event_length or 1  # Entry.mem_size, without the property's call
            if type(header) is SnapshotHeader:
                items += batch_items(entry)
                self._last_snapshot_seq = sequence
            else:
                items += 1  # batch_items of a binlog entry, without the call
            mem_after[slot] = mem
            items_after[slot] = items
        self._put_seq, self._put_mem, self._put_items = sequence, mem, items
        self._last_put = Event(source, entries[-1])
        self._caught_up = False
        self._not_empty.notify_all()

    # -- get ---------------------------------------------------------------------------------

    def get(
        self, batch_size: int, timeout: float | None = None, idle_timeout: float | None = None
    ) -> Events:
        if batch_size < 1:
            raise StoreError(f"batch_size must be >= 1, got {batch_size}")
        with self._lock:
            self._check_running("get")
            # Any entry ends the idle wait (not a batch of one: in MEMSIZE mode that means
            # mem_unit bytes, which one small entry may not reach).
            if idle_timeout is not None and idle_timeout > 0 and self._put_seq == self._get_seq:
                idle_deadline = time.monotonic() + idle_timeout
                while self._put_seq == self._get_seq:
                    if self._woken or not self._wait(self._not_empty, idle_deadline):
                        self._woken = False
                        return self._do_get(batch_size)  # nothing came, or woken: empty
                    self._check_running("get")
            if timeout is not None:
                deadline = None if timeout <= 0 else time.monotonic() + timeout
                while not self._has_batch(batch_size):
                    if deadline is not None and self._caught_up and self._put_seq > self._get_seq:
                        break  # all the source wrote is here: waiting adds only latency
                    if not self._wait(self._not_empty, deadline):
                        break
                    self._check_running("get")
            return self._do_get(batch_size)

    def wake(self) -> None:
        """End a get's idle wait now, or the next one if none is under way (a stopping
        client's: set before its get begins, the wake is not lost)."""
        with self._lock:
            self._woken = True
            self._not_empty.notify_all()

    def source_caught_up(self) -> None:
        with self._lock:
            self._caught_up = True
            self._not_empty.notify_all()

    def _has_batch(self, batch_size: int) -> bool:
        bytes_ready = self._put_mem - self._get_mem >= batch_size * self.config.mem_unit
        if self.config.batch_mode is BatchMode.MEMSIZE:
            return bytes_ready
        return bytes_ready or self._put_items - self._get_items >= batch_size

    def _do_get(self, batch_size: int) -> Events:
        first = self._get_seq + 1
        last = self._last_of_batch(first, batch_size)
        taken = self._taken(self._slots, first, last)
        if self.config.ddl_isolation:
            ddl = next((i for i, entry in enumerate(taken) if entry.is_ddl), None)
            if ddl is not None:
                taken = taken[: max(ddl, 1)]  # a DDL alone, or what comes before it
                last = first + len(taken) - 1
        if taken:
            self._get_seq = last
            self._get_mem = self._mem_after[last & self._mask]
            self._get_items = self._items_after[last & self._mask]
        snapshot = self._last_snapshot_seq >= first
        sources = self._taken(self._sources, first, last)
        return Events(tuple(taken), _range_of(taken, sources, snapshot), first, self._get_seq)

    def _last_of_batch(self, first: int, batch_size: int) -> int:
        """The last sequence a batch from ``first`` takes: events are taken while the batch
        is under ``batch_size`` items and ``batch_size * mem_unit`` bytes (ITEMSIZE), or
        while its bytes are at most that (MEMSIZE); found by bisecting the put totals."""
        mem_limit = batch_size * self.config.mem_unit
        base_mem, base_items = self._get_mem, self._get_items
        mem_after, items_after, mask = self._mem_after, self._items_after, self._mask
        if self.config.batch_mode is BatchMode.ITEMSIZE:

            def full(sequence: int) -> bool:  # taking up to ``sequence`` ends the batch
                slot = sequence & mask
                return (
                    items_after[slot] - base_items >= batch_size
                    or mem_after[slot] - base_mem >= mem_limit
                )

        else:

            def full(sequence: int) -> bool:
                return mem_after[sequence & mask] - base_mem > mem_limit

        low, high = first, self._put_seq  # the answer: the first full sequence, else high
        while low < high:
            middle = (low + high) // 2
            if full(middle):
                high = middle
            else:
                low = middle + 1
        return high

    def _taken(self, ring: list[T | None], first: int, last: int) -> list[T]:
        """What ``ring`` (the entries or their sources) holds for sequences ``first..last``
        (nothing when ``last < first``), as slices."""
        taken: list[T | None] = []
        if last >= first:
            for start, end in self._spans(first, last):
                taken += ring[start:end]
        return cast("list[T]", taken)  # sequences up to put_seq are filled

    def _spans(self, first: int, last: int) -> tuple[tuple[int, int], ...]:
        """The slot ranges ``[start, end)`` of sequences ``first..last`` (``first <= last``),
        in order: one, or two where they wrap around the ring (or take all of it)."""
        start, end = first & self._mask, (last & self._mask) + 1
        if start < end:
            return ((start, end),)
        return (start, self._mask + 1), (0, end)

    # -- ack / rollback ----------------------------------------------------------------------

    def ack(self, target: int | LogPosition) -> None:
        with self._lock:
            self._check_running("ack")
            if isinstance(target, LogPosition):
                sequence = self._find_last(target)
            else:
                sequence = target
                if not self._ack_seq < sequence <= self._get_seq:
                    raise AckOutOfRange(sequence, self._ack_seq, self._get_seq)
            self._last_ack = self._slot(sequence)
            self._clear(self._ack_seq + 1, sequence)
            self._ack_seq = sequence
            self._ack_mem = self._mem_after[sequence & self._mask]
            self._ack_items = self._items_after[sequence & self._mask]
            self._not_full.notify_all()

    def _clear(self, first: int, last: int) -> None:
        """Let go of the entries of sequences ``first..last`` (slices, not one by one; their
        sources are a few shared objects)."""
        for start, end in self._spans(first, last):
            self._slots[start:end] = [None] * (end - start)

    def _find_last(self, position: LogPosition) -> int:
        """The last delivered, unacked entry at ``position`` (canal's cleanUntil match)."""
        wanted = position.position
        for seq in range(self._get_seq, self._ack_seq, -1):
            header = self._entry(seq).header
            if (
                header.logfile_name == wanted.journal_name
                and header.logfile_offset == wanted.position
                and (wanted.timestamp is None or header.execute_time == wanted.timestamp)
            ):
                return seq
        raise NoMatchingPosition(position)

    def rollback(self) -> None:
        with self._lock:
            self._check_running("rollback")
            self._get_seq = self._ack_seq
            self._get_mem = self._ack_mem
            self._get_items = self._ack_items
            self._not_empty.notify_all()

    # -- positions ---------------------------------------------------------------------------

    def first_position(self) -> LogPosition | None:
        """Where consumption stands: the first unacked entry (not included) or the last acked one
        (included); ``None`` for an empty store that has acked nothing."""
        with self._lock:
            if self._last_ack is not None:
                return self._last_ack.log_position(included=True)
            if self._put_seq > self._ack_seq:
                return self._slot(self._ack_seq + 1).log_position(included=False)
            return None

    def latest_position(self) -> LogPosition | None:
        """The last entry put (included), or ``None`` before the first put."""
        with self._lock:
            if self._last_put is None:
                return None
            return self._last_put.log_position(included=True)

    # -- helpers -----------------------------------------------------------------------------

    def _entry(self, sequence: int) -> Entry:
        entry = self._slots[sequence & self._mask] if self._slots else None
        if entry is None:  # a stopped store's, or a bug in the sequence arithmetic
            raise StoreError(f"slot of sequence {sequence} is empty")
        return entry

    def _slot(self, sequence: int) -> Event:
        """The entry of ``sequence`` with its source."""
        entry = self._entry(sequence)
        return Event(cast("LogIdentity", self._sources[sequence & self._mask]), entry)

    def _check_running(self, operation: str) -> None:
        if not self._running:
            raise StoreStopped(operation)

    @staticmethod
    def _wait(condition: threading.Condition, deadline: float | None) -> bool:
        """Wait once; False when the deadline has passed (the caller gives up)."""
        if deadline is None:
            condition.wait()
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        condition.wait(remaining)
        return True


def _range_of(
    entries: list[Entry], sources: list[LogIdentity], snapshot: bool
) -> PositionRange | None:
    """start/end of the batch; ack after its last ack point (transaction end, DDL, snapshot
    row; None without one), with the newest snapshot progress an ack point of the batch
    carries (the server keeps the cursor's own when the batch has none), as
    ``ack_position_after`` keeps it; ``snapshot``: whether a snapshot entry may be among
    ``entries`` (else none is looked for). ``sources``: each entry's. The position is made
    once, for the last ack point: a batch of one-row transactions holds a thousand of them."""
    if not entries:
        return None
    # The last ack point, looked for from the end: a batch nearly always ends with one.
    last = next((i for i in range(len(entries) - 1, -1, -1) if is_ack_point(entries[i])), None)
    ack = None
    if last is not None:
        # An entry carrying snapshot progress is an ack point itself, so none comes after
        # the last one; only snapshot entries carry it (the type test is the cheap one).
        progress = None
        if snapshot:
            progress = next(
                (
                    carried
                    for entry in reversed(entries)
                    if type(entry.header) is SnapshotHeader
                    and (carried := snapshot_progress_of(entry)) is not None
                ),
                None,
            )
        ack = LogPosition(sources[last], resume_position_after(entries[last]), progress)
    first_event, last_event = Event(sources[0], entries[0]), Event(sources[-1], entries[-1])
    return PositionRange(first_event.log_position(), last_event.log_position(), ack)
