"""Errors of the event store; each carries the numbers needed to understand it."""

from __future__ import annotations

from bridge.exceptions import BridgeError
from bridge.position import LogPosition


class StoreError(BridgeError):
    """Base class of every error raised by ``bridge.store``."""


class StoreStopped(StoreError):
    """The store is not running: raised to callers blocked in put/get when it stops."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"event store is not running ({operation} refused)")
        self.operation = operation


class StoreAlreadyStarted(StoreError):
    def __init__(self) -> None:
        super().__init__("event store is already running; stop() it before start()")


class BatchTooLarge(StoreError):
    """A put of more entries than the ring has slots could never be admitted."""

    def __init__(self, size: int, buffer_size: int) -> None:
        super().__init__(
            f"cannot put {size} entries at once into a store of {buffer_size} slots; "
            f"make the transaction buffer size <= the store buffer size"
        )
        self.size = size
        self.buffer_size = buffer_size


class AckOutOfRange(StoreError):
    """An ack names a sequence that was not delivered, or was already acked."""

    def __init__(self, sequence: int, ack_sequence: int, get_sequence: int) -> None:
        super().__init__(
            f"cannot ack sequence {sequence}: only ({ack_sequence}, {get_sequence}] "
            f"is delivered and not yet acked"
        )
        self.sequence = sequence
        self.ack_sequence = ack_sequence
        self.get_sequence = get_sequence


class NoMatchingPosition(StoreError):
    """canal's "no match ack position": no delivered, unacked entry sits at that position."""

    def __init__(self, position: LogPosition) -> None:
        super().__init__(f"no delivered and unacked entry at position {position}")
        self.position = position
