"""canal's MemoryMetaManager: everything in memory, lost on restart (thread-safe)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bridge.meta.base import ClientIdentity
from bridge.meta.exceptions import (
    BatchOutOfOrder,
    MetaAlreadyStarted,
    MetaNotRunning,
    NotSubscribed,
    UnknownBatch,
)
from bridge.position import LogPosition, PositionRange


@dataclass(slots=True)
class _Batches:
    """canal's MemoryClientIdentityBatch: ids in insertion (= increasing) order."""

    next_id: int = 1
    ranges: dict[int, PositionRange] = field(default_factory=dict)


class MemoryMetaManager:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._running = False
        self._clear()

    def _clear(self) -> None:
        # destination -> client -> the client as last subscribed (with its current filter)
        self._subscriptions: dict[str, dict[ClientIdentity, ClientIdentity]] = {}
        self._cursors: dict[ClientIdentity, LogPosition] = {}
        self._batches: dict[ClientIdentity, _Batches] = {}

    def start(self) -> None:
        with self._lock:
            if self._running:
                raise MetaAlreadyStarted()
            self._clear()
            self._running = True

    def stop(self) -> None:
        with self._lock:
            self._running = False
            self._clear()

    @property
    def running(self) -> bool:
        return self._running

    def flush(self, *, raise_errors: bool = False) -> None:
        """Nothing to persist: the cursors live as long as the process."""

    # -- subscriptions -------------------------------------------------------------------

    def subscribe(self, client: ClientIdentity) -> None:
        with self._lock:
            self._check()
            clients = self._subscriptions.setdefault(client.destination, {})
            clients.pop(client, None)  # re-subscribing moves it last, with the new filter
            clients[client] = client

    def unsubscribe(self, client: ClientIdentity) -> None:
        with self._lock:
            self._check()
            self._subscriptions.get(client.destination, {}).pop(client, None)
            self._cursors.pop(client, None)
            self._batches.pop(client, None)

    def has_subscribe(self, client: ClientIdentity) -> bool:
        with self._lock:
            self._check()
            return client in self._subscriptions.get(client.destination, {})

    def list_subscriptions(self, destination: str) -> list[ClientIdentity]:
        with self._lock:
            self._check()
            return list(self._subscriptions.get(destination, {}).values())

    # -- cursors -------------------------------------------------------------------------

    def get_cursor(self, client: ClientIdentity) -> LogPosition | None:
        with self._lock:
            self._check()
            return self._cursors.get(client)

    def update_cursor(self, client: ClientIdentity, position: LogPosition) -> None:
        with self._lock:
            self._check_subscribed(client)
            self._cursors[client] = position

    # -- batches -------------------------------------------------------------------------

    def add_batch(self, client: ClientIdentity, position_range: PositionRange) -> int:
        with self._lock:
            self._check_subscribed(client)
            batches = self._batches.setdefault(client, _Batches())
            batch_id = batches.next_id
            batches.next_id += 1
            batches.ranges[batch_id] = position_range
            return batch_id

    def get_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange | None:
        with self._lock:
            self._check()
            batches = self._batches.get(client)
            return None if batches is None else batches.ranges.get(batch_id)

    def remove_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange:
        with self._lock:
            self._check()
            batches = self._batches.get(client)
            if batches is None or batch_id not in batches.ranges:
                raise UnknownBatch(client, batch_id)
            first = next(iter(batches.ranges))
            if batch_id != first:
                raise BatchOutOfOrder(batch_id, first)
            return batches.ranges.pop(batch_id)

    def get_first_batch(self, client: ClientIdentity) -> PositionRange | None:
        with self._lock:
            ranges = self._ranges(client)
            return next(iter(ranges.values()), None)

    def get_last_batch(self, client: ClientIdentity) -> PositionRange | None:
        with self._lock:
            ranges = self._ranges(client)
            return next(reversed(ranges.values()), None)

    def list_all_batch_ids(self, client: ClientIdentity) -> list[int]:
        with self._lock:
            return list(self._ranges(client))

    def clear_all_batches(self, client: ClientIdentity) -> None:
        with self._lock:
            self._ranges(client).clear()

    # -- helpers -------------------------------------------------------------------------

    def _ranges(self, client: ClientIdentity) -> dict[int, PositionRange]:
        self._check()
        batches = self._batches.get(client)
        return {} if batches is None else batches.ranges

    def _check(self) -> None:
        if not self._running:
            raise MetaNotRunning()

    def _check_subscribed(self, client: ClientIdentity) -> None:
        self._check()
        if client not in self._subscriptions.get(client.destination, {}):
            raise NotSubscribed(client)
