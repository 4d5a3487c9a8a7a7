"""Errors of an instance and of the embedded server."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class InstanceError(BridgeError):
    """Base of the instance's errors."""


class InstanceFailed(InstanceError):
    """The destination's parser stopped on an error a retry cannot fix; the message is its."""


class UnknownDestination(InstanceError):
    def __init__(self, destination: str) -> None:
        super().__init__(f"destination {destination!r} is not running on this server")
