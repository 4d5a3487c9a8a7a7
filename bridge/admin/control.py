"""Control actions of the admin endpoint: the operator's actions (``DestinationControl``) and
``POST /destinations/<d>/snapshot`` (docs/operations.md). Always behind ``requires_token`` (no
token file: 403).

``snapshot_answer`` is the action without HTTP: the status code and JSON document for a
request body, computed on the server's worker pool (checking the tables asks the source,
and the instance waits a few seconds for its cursor to carry the plan):

* 202 ``{"destination", "tables", "persisted"}``: planned; ``persisted`` false when the
  cursor did not carry the plan within the wait (queued in the running instance);
* 400: a body that is not ``{"tables": [...]}`` of ``schema.table`` names, or tables the
  destination cannot snapshot (each named);
* 404: a destination this process does not run (an HA standby names the process that does);
* 503: the destination has failed, or the source could not be asked.

``failure_answer`` maps every action's errors to their status the same way (the REST API's
actions in ``bridge.admin.api_actions`` use it too).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from bridge.config import ConfigChange, InvalidConfig
from bridge.exceptions import ActionRefused, BridgeError, ConfigError
from bridge.instance import UnknownDestination
from bridge.position import EntryPosition
from bridge.snapshot.exceptions import SnapshotRequestRefused
from bridge.snapshot.requests import RequestOutcome, parse_tables


class SnapshotControl(Protocol):
    """What runs destinations and can snapshot their tables again (``bridge.runner.Runner``)."""

    def request_snapshot(self, destination: str, tables: Sequence[str]) -> RequestOutcome: ...


class DestinationControl(SnapshotControl, Protocol):
    """The operator's actions on a running bridge (``bridge.runner.Runner``), each answered
    by the admin API and the console. Every method raises ``UnknownDestination`` (or
    ``DestinationElsewhere``) for a destination this process does not run or know,
    ``ActionRefused`` for an action its state does not allow, ``ConfigError`` for a file
    that does not validate (nothing applied), and other ``BridgeError``s when the source or
    a store cannot be reached; each message is one line saying what to do."""

    def pause(self, destination: str) -> None:
        """Stop the destination (its in-flight batch rolled back, its cursor flushed) until
        ``resume``; pausing a paused destination does nothing."""
        ...

    def resume(self, destination: str) -> None:
        """Start a paused destination again from its cursor."""
        ...

    def move_cursor(self, destination: str, target: str) -> EntryPosition:
        """Set a paused destination's cursor to ``target``: ``file:position``, a GTID set,
        or an ISO-8601 timestamp (the first transaction at or after it); refused while it
        runs, or where the source has purged the binlog. Returns the cursor stored."""
        ...

    def check_config(self, text: str) -> ConfigChange:
        """What applying ``text`` (a destinations.yaml) would change; nothing is applied."""
        ...

    def apply_config(self, text: str) -> ConfigChange:
        """Validate ``text``, write it to the configuration file, and apply it."""
        ...


Answer = tuple[int, dict[str, object]]


def snapshot_answer(control: SnapshotControl | None, destination: str, body: bytes) -> Answer:
    """The status and JSON document answering a snapshot request for ``destination``."""
    try:
        document = json.loads(body or b"null")
        if not isinstance(document, dict) or "tables" not in document:
            raise ValueError('the body must be a JSON object {"tables": ["schema.table", ...]}')
        tables = parse_tables(document["tables"])
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return 400, {"error": _one_line(exc)}
    if control is None:
        return 404, {"error": f"destination {destination!r} is not running on this process"}
    try:
        outcome = control.request_snapshot(destination, tables)
    except BridgeError as exc:
        return failure_answer(exc)
    return 202, {
        "destination": destination,
        "tables": list(outcome.tables),
        "persisted": outcome.persisted,
    }


def failure_answer(exc: BridgeError) -> Answer:
    """The status and ``{"error"}`` document of an action that raised ``exc``: 400 for a
    request the destination cannot do as asked (with ``problems`` for a configuration), 404
    for a destination this process does not run, 409 for an action its state refuses, 503
    for anything else (the destination failed, the source or a store did not answer)."""
    if isinstance(exc, InvalidConfig):
        return 400, {"error": str(exc).splitlines()[0], "problems": list(exc.problems)}
    if isinstance(exc, ConfigError):
        return 400, {"error": str(exc), "problems": [str(exc)]}
    if isinstance(exc, SnapshotRequestRefused):
        return 400, {"error": str(exc)}
    if isinstance(exc, UnknownDestination):
        return 404, {"error": str(exc)}
    if isinstance(exc, ActionRefused):
        return 409, {"error": str(exc)}
    return 503, {"error": str(exc)}


def _one_line(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f'the body is not JSON ({exc.msg}); send {{"tables": ["schema.table"]}}'
    return str(exc)
