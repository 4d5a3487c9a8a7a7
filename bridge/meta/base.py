"""The meta manager interface (canal's CanalMetaManager) and the client identity it keys on."""

from __future__ import annotations

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
