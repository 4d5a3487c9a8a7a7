"""Instances (one per destination) and the embedded server's get / ack / rollback API."""

from bridge.instance.api import EMPTY_BATCH_ID, CanalService, Message
from bridge.instance.embedded import EmbeddedServer
from bridge.instance.exceptions import (
    DestinationElsewhere,
    InstanceError,
    InstanceFailed,
    UnknownDestination,
)
from bridge.instance.instance import Instance, mq_client

__all__ = [
    "EMPTY_BATCH_ID",
    "CanalService",
    "DestinationElsewhere",
    "EmbeddedServer",
    "Instance",
    "InstanceError",
    "InstanceFailed",
    "Message",
    "UnknownDestination",
    "mq_client",
]
