"""Errors of ``bridge.ha``: ZooKeeper out of reach, and a destination this process lost.

    BridgeError
    └── HaError
        ├── CoordinatorUnavailable   ZooKeeper cannot be reached / a request failed
        └── FencedOut                this process no longer owns the destination's running node

kazoo's errors are translated here at the boundary (``raise ... from exc``).
"""

from __future__ import annotations

from bridge.exceptions import BridgeError


class HaError(BridgeError):
    """Base class of every error raised by ``bridge.ha``."""


class CoordinatorUnavailable(HaError):
    """ZooKeeper did not answer (connect timeout, connection loss, expired session)."""

    def __init__(self, hosts: str, reason: str) -> None:
        super().__init__(
            f"ZooKeeper at {hosts} is unavailable: {reason}; check zookeeper.hosts and that "
            "the ensemble is up"
        )
        self.hosts = hosts
        self.reason = reason


class FencedOut(HaError):
    """Raised instead of producing or acking once this process may no longer run
    ``destination``: its session is suspended or lost, or another process owns the running
    node. The batch in hand is rolled back; the new owner sends it again from the cursor."""

    def __init__(self, destination: str, reason: str) -> None:
        super().__init__(f"destination {destination} fenced off: {reason}")
        self.destination = destination
        self.reason = reason
