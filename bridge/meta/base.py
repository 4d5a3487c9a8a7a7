"""The meta manager interface (canal's CanalMetaManager), the client identity it keys on, and
the cursor store a persistent meta manager writes to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bridge.position import LogPosition, PositionRange

# canal's one client of a destination in MQ mode (CanalMQStarter's clientId 1001).
MQ_CLIENT_ID = 1001


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """A consumer of one destination. As in canal, equality ignores ``filter``: a client that
    subscribes again with another filter is the same client (same cursor, same batches)."""

    destination: str
    client_id: int = MQ_CLIENT_ID
    filter: str = field(default="", compare=False)


class MetaManager(Protocol):
    """Subscriptions, acked cursors and outstanding batches of every client.

    Batch ids are per client, start at 1 and only increase (also across ``clear_all_batches``).
    Batches are removed oldest first: removing another one raises ``BatchOutOfOrder``.
    Every method but ``start``/``stop``/``running`` raises ``MetaNotRunning`` when stopped.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...

    @property
    def running(self) -> bool: ...

    def flush(self, *, raise_errors: bool = False) -> None:
        """Persist every changed cursor now rather than at the next periodic flush (a first
        start's cursor must survive a kill before the first ack)."""

    def subscribe(self, client: ClientIdentity) -> None:
        """Register ``client``, or replace its filter if already subscribed."""

    def unsubscribe(self, client: ClientIdentity) -> None:
        """Forget ``client`` with its cursor and batches (do not call it on a normal stop)."""

    def has_subscribe(self, client: ClientIdentity) -> bool: ...

    def list_subscriptions(self, destination: str) -> list[ClientIdentity]: ...

    def get_cursor(self, client: ClientIdentity) -> LogPosition | None: ...

    def update_cursor(self, client: ClientIdentity, position: LogPosition) -> None: ...

    def add_batch(self, client: ClientIdentity, position_range: PositionRange) -> int: ...

    def get_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange | None: ...

    def remove_batch(self, client: ClientIdentity, batch_id: int) -> PositionRange: ...

    def get_first_batch(self, client: ClientIdentity) -> PositionRange | None: ...

    def get_last_batch(self, client: ClientIdentity) -> PositionRange | None: ...

    def list_all_batch_ids(self, client: ClientIdentity) -> list[int]: ...

    def clear_all_batches(self, client: ClientIdentity) -> None: ...


# A subscribed client with its acked cursor (None before its first ack).
ClientCursor = tuple[ClientIdentity, LogPosition | None]


class CursorStore(Protocol):
    """Where a persistent meta manager keeps each destination's subscriptions and acked cursors
    (``bridge.meta.persistent.PersistentMetaManager`` wraps a memory manager around one; batches
    never reach a store). Implementations: ``FileCursorStore`` (``meta.dat`` files) and
    ``ZooKeeperCursorStore`` (canal's znodes).

    Adding a cursor store = implement this protocol + register it: one entry in
    ``bridge.meta.factory.CURSOR_STORES`` from the config's ``meta.store`` kind to a
    constructor (and the kind in ``MetaConfig.store``'s ``Literal``). For example::

        class DictCursorStore:
            def __init__(self) -> None:
                self.saved: dict[str, list[ClientCursor]] = {}

            def open(self) -> list[str]:
                return sorted(self.saved)

            def load(self, destination: str) -> list[ClientCursor]:
                return list(self.saved.get(destination, []))

            def save(self, destination: str, cursors: Sequence[ClientCursor]) -> None:
                self.saved[destination] = list(cursors)

        CURSOR_STORES["dict"] = lambda config, context: DictCursorStore()

    Failures raise a ``MetaError`` (``CorruptMetaFile``, ``MetaWriteFailed``,
    ``MetaStoreUnavailable``, ...); a failed ``save`` is retried by the manager's next flush.
    """

    def open(self) -> list[str]:
        """Get ready (called by the manager's ``start``) and name the destinations to load at
        once, so that a damaged store fails the start; any other is loaded on first use."""
        ...

    def load(self, destination: str) -> list[ClientCursor]:
        """The destination's subscribed clients with their cursors, as last saved."""
        ...

    def save(self, destination: str, cursors: Sequence[ClientCursor]) -> None:
        """Make ``cursors`` the destination's whole state: clients missing from it are gone."""
        ...
