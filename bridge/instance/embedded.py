"""canal's CanalServerWithEmbedded: the get / ack / rollback API over running instances.

Guarantees: one getter at a time per instance; batches ack strictly in order (the meta manager
enforces it with canal's errors); the cursor only moves to a batch's ``ack`` position, which
lies on a transaction boundary, so a restart never resumes mid-transaction.
"""

from __future__ import annotations

import threading

from bridge.instance.api import EMPTY_BATCH_ID, Message
from bridge.instance.exceptions import UnknownDestination
from bridge.instance.instance import Instance
from bridge.meta import ClientIdentity


class EmbeddedServer:
    def __init__(self) -> None:
        self._instances: dict[str, Instance] = {}
        self._sequences: dict[tuple[str, int], int] = {}  # (destination, batch id) -> last seq
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def start(self, instance: Instance) -> None:
        with self._lock:
            if instance.destination in self._instances:
                raise RuntimeError(f"destination {instance.destination} already started")
            self._instances[instance.destination] = instance
        instance.start()

    def stop(self, destination: str) -> None:
        with self._lock:
            instance = self._instances.pop(destination, None)
        if instance is not None:
            instance.stop()

    def stop_all(self) -> None:
        for destination in list(self._instances):
            self.stop(destination)

    def instance(self, destination: str) -> Instance:
        try:
            return self._instances[destination]
        except KeyError:
            raise UnknownDestination(destination) from None

    # ------------------------------------------------------------------ client API

    def subscribe(self, client: ClientIdentity) -> None:
        instance = self.instance(client.destination)
        if not instance.meta.has_subscribe(client):
            instance.meta.subscribe(client)

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        instance = self.instance(client.destination)
        instance.check_alive()
        with instance.get_lock:
            events = instance.store.get(batch_size, timeout_s, idle_wait_s)
            if not events or events.range is None:
                instance.check_alive()
                return Message(EMPTY_BATCH_ID, ())
            batch_id = instance.meta.add_batch(client, events.range)
            self._sequences[(client.destination, batch_id)] = events.last_sequence
            return Message(batch_id, events.entries)

    def get(
        self, client: ClientIdentity, batch_size: int, timeout_s: float | None = None
    ) -> Message:
        """``get_without_ack`` followed by ``ack`` (canal's auto-ack get)."""
        message = self.get_without_ack(client, batch_size, timeout_s)
        if not message.empty:
            self.ack(client, message.batch_id)
        return message

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        instance = self.instance(client.destination)
        with instance.ack_lock:
            position_range = instance.meta.remove_batch(client, batch_id)
            if position_range.ack is not None:
                # A batch of binlog transactions only keeps the snapshot progress (sticky).
                cursor = position_range.ack.keeping_snapshot_of(instance.meta.get_cursor(client))
                instance.meta.update_cursor(client, cursor)
            sequence = self._sequences.pop((client.destination, batch_id))
            instance.store.ack(sequence)

    def wake(self, client: ClientIdentity) -> None:
        instance = self._instances.get(client.destination)
        if instance is not None:  # gone: no get of it to wake
            instance.store.wake()

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        """Drop every outstanding batch and rewind the store to the last ack.

        With ``batch_id`` it must be the oldest outstanding batch (canal's order rule): the store
        can only rewind everything after the ack, so later batches are dropped too.
        """
        instance = self.instance(client.destination)
        with instance.ack_lock:
            if batch_id is not None:
                instance.meta.remove_batch(client, batch_id)
            instance.meta.clear_all_batches(client)
            for key in [k for k in self._sequences if k[0] == client.destination]:
                del self._sequences[key]
            instance.store.rollback()
