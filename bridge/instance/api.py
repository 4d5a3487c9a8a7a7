"""What a client of an instance sees: canal's streaming get / ack / rollback API.

The MQ worker (``bridge.mq.worker``) is such a client; the embedded server
(``bridge.instance.embedded``) implements it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bridge.entry import Entry
from bridge.meta import ClientIdentity

EMPTY_BATCH_ID = -1


@dataclass(frozen=True, slots=True)
class Message:
    """One batch: ``batch_id`` is -1 when nothing was there (canal's empty message)."""

    batch_id: int
    entries: tuple[Entry, ...]

    @property
    def empty(self) -> bool:
        return self.batch_id == EMPTY_BATCH_ID or not self.entries


class CanalService(Protocol):
    """canal's CanalServerWithEmbedded, as its MQ worker uses it."""

    def subscribe(self, client: ClientIdentity) -> None: ...

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        """A batch that stays outstanding until acked or rolled back. ``timeout_s``: None ->
        what is there now; <= 0 -> block for a full batch (``batch_size`` entries, or their
        bytes: ``bridge.store.memory``); > 0 -> wait that long.
        ``idle_wait_s``: when nothing is there, first wait up to that long for a first entry
        (empty if none comes); then ``timeout_s`` applies. An idle client wakes up when
        there is work, not every ``timeout_s``."""
        ...

    def wake(self, client: ClientIdentity) -> None:
        """End the client's idle wait in a get now (it is stopping): that get returns empty,
        or the next one if none is under way."""
        ...

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        """Batches ack strictly in order; acking moves the client's cursor."""
        ...

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        """Drop outstanding batches (all, or up to ``batch_id``); the next get starts again at
        the cursor."""
        ...
