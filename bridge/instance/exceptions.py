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


class DamagedCursor(InstanceError):
    """The destination's stored cursor parses, but the source cannot read at its position
    (past the end of its binlog file, or not on an event boundary): it was edited or damaged.
    Said apart from a purged binlog, whose advice (``on_purged``) would skip or replay changes
    here instead of pointing at the cursor."""

    def __init__(self, destination: str, journal_name: str, position: int, detail: str) -> None:
        super().__init__(
            f"destination {destination}: its stored cursor {journal_name}:{position} is damaged "
            f"({detail}); on_purged does not apply. Safe choices: restore the cursor from a "
            f"backup; or set it to a transaction start that SHOW BINLOG EVENTS IN "
            f"'{journal_name}' lists (changes between the two are skipped or sent again); or "
            "delete it so the destination starts from its start settings (changes in between "
            "are not delivered)"
        )
        self.destination = destination
        self.journal_name = journal_name
        self.position = position


class DestinationElsewhere(UnknownDestination):
    """A destination this process is configured for but does not run now (HA standby);
    ``runs_on``: the address of the process that does, when known."""

    def __init__(self, destination: str, runs_on: str | None) -> None:
        InstanceError.__init__(
            self,
            f"destination {destination!r} is not running on this process: "
            + (f"it runs on {runs_on}" if runs_on else "no process runs it right now"),
        )
        self.destination = destination
        self.runs_on = runs_on
