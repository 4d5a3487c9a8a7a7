"""What HA is made of: the running node's content, who may act for a destination, and the
host the election starts and stops destinations in.

canal's model (``ServerRunningMonitor``): per destination, the server that creates the
ephemeral ``running`` node runs it; the others stand by and race again when it disappears.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from bridge.exceptions import BridgeError


@dataclass(frozen=True, slots=True)
class RunningInfo:
    """canal's ``ServerRunningData``: ``{"active":true,"address":"ip:port","cid":N}``."""

    address: str
    cid: int
    active: bool = True

    def dumps(self) -> bytes:
        document = {"active": self.active, "address": self.address, "cid": self.cid}
        return json.dumps(document, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, data: bytes) -> RunningInfo:
        """Parse a running node; content written by canal itself reads back too."""
        try:
            obj = json.loads(data)
            return cls(address=str(obj["address"]), cid=int(obj["cid"]), active=bool(obj["active"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise BridgeError(f"running node holds {data[:80]!r}, not canal's JSON") from exc


class Fence(Protocol):
    """Who may act for a destination. ``check`` is cheap (local state only); ``verify`` asks
    ZooKeeper. Both raise ``FencedOut``."""

    def check(self, destination: str) -> None: ...

    def verify(self, destination: str) -> None: ...


class DestinationHost(Protocol):
    """Runs destinations on behalf of the election (``bridge.runner.Runner`` in HA mode).

    ``start_destination`` starts the instance (meta -> store -> sink -> parser) and its MQ
    worker; ``stop_destination`` stops the worker (rolling back its in-flight batch) and then
    the instance (flushing the acked cursor if the meta store still may write).
    """

    def start_destination(self, name: str) -> None: ...

    def stop_destination(self, name: str) -> None: ...

    def destination_ended(self, name: str) -> bool:
        """Its worker has ended on its own (error, or the source stopped)."""
        ...

    def destination_error(self, name: str) -> BaseException | None:
        """What ended its worker, if anything."""
        ...
