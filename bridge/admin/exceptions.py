"""Errors of the admin endpoint (health probes and metrics over HTTP)."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class AdminError(BridgeError):
    """Base class of every error raised by ``bridge.admin``."""


class AdminListenFailed(AdminError):
    """The admin endpoint cannot listen on ``admin.listen`` (address in use, not local, ...)."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(
            f"cannot serve health and metrics on {address} ({reason}): set admin.listen to a "
            "free host:port, or to null to turn the endpoint off"
        )
        self.address = address
        self.reason = reason


class AdminSetupFailed(AdminError):
    """The admin endpoint's token or TLS files cannot be used; the message names the key."""
