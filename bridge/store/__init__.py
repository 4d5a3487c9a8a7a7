"""The event store between sink and consumers (canal's store module)."""

from bridge.store.base import BatchMode, Event, Events, EventStore
from bridge.store.exceptions import (
    AckOutOfRange,
    BatchTooLarge,
    NoMatchingPosition,
    StoreAlreadyStarted,
    StoreError,
    StoreStopped,
)
from bridge.store.memory import MemoryEventStore, MemoryStoreConfig

__all__ = [
    "AckOutOfRange",
    "BatchMode",
    "BatchTooLarge",
    "Event",
    "EventStore",
    "Events",
    "MemoryEventStore",
    "MemoryStoreConfig",
    "NoMatchingPosition",
    "StoreAlreadyStarted",
    "StoreError",
    "StoreStopped",
]
