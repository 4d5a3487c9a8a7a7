"""The REST API's actions without HTTP: a request's parts in, ``(status, JSON document)`` out.

Each runs on the admin server's worker pool (an action waits for a destination to stop, or
asks the source where a timestamp is). A body that does not parse is a 400 naming the shape
to send; the control's errors map through ``failure_answer`` (404 unknown destination, 409
refused in this state, 400 invalid configuration with one problem a line, 503 otherwise).
No answer repeats the request body: a configuration holds passwords.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from bridge.admin.control import Answer, DestinationControl, failure_answer
from bridge.config import ConfigChange
from bridge.exceptions import BridgeError
from bridge.position import EntryPosition

Switch = Literal["pause", "resume"]

# The keys a cursor move accepts, one of them per request.
CURSOR_KEYS = ("position", "gtid", "timestamp")
CURSOR_SHAPE = '{"position": "file:pos"}, {"gtid": "set"} or {"timestamp": "ISO-8601"}'


def switch_answer(control: DestinationControl | None, destination: str, action: Switch) -> Answer:
    """Pause or resume ``destination``: 200 ``{"destination", "state"}`` once done."""
    if control is None:
        return _not_here(destination)
    try:
        if action == "pause":
            control.pause(destination)
        else:
            control.resume(destination)
    except BridgeError as exc:
        return failure_answer(exc)
    return 200, {"destination": destination, "state": "paused" if action == "pause" else "running"}


def cursor_answer(control: DestinationControl | None, destination: str, body: bytes) -> Answer:
    """Move a paused destination's cursor: 200 ``{"destination", "cursor"}`` (the cursor
    stored: file, position, GTID set and event time as far as known)."""
    try:
        target = _cursor_target(body)
    except ValueError as exc:
        return 400, {"error": str(exc)}
    if control is None:
        return _not_here(destination)
    try:
        stored = control.move_cursor(destination, target)
    except BridgeError as exc:
        return failure_answer(exc)
    return 200, {"destination": destination, "cursor": _position(stored)}


def config_answer(control: DestinationControl | None, body: bytes, apply: bool) -> Answer:
    """Validate (``apply`` false) or apply a destinations.yaml: 200 with what changes."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return 400, {"error": "the body is not UTF-8 text: send the destinations.yaml as it is"}
    if not text.strip():
        return 400, {"error": "the body is empty: send the whole destinations.yaml"}
    if control is None:
        return 503, {"error": "this process applies no configuration change: restart it"}
    try:
        change = control.apply_config(text) if apply else control.check_config(text)
    except BridgeError as exc:
        return failure_answer(exc)
    return 200, _change(change, apply)


def _cursor_target(body: bytes) -> str:
    """The target string ``move_cursor`` takes, checked for its key's shape."""
    try:
        document = json.loads(body or b"null")
    except ValueError:
        raise ValueError(f"the body is not JSON: send one of {CURSOR_SHAPE}") from None
    given = [k for k in CURSOR_KEYS if isinstance(document, dict) and k in document]
    if not isinstance(document, dict) or len(given) != 1 or len(document) != 1:
        raise ValueError(f"send exactly one of {CURSOR_SHAPE}")
    (key,) = given
    value = document[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be a non-empty string: send one of {CURSOR_SHAPE}")
    value = value.strip()
    if key == "position":
        name, _, offset = value.rpartition(":")
        if not name or not offset.isdigit():
            raise ValueError(
                f"position {value!r} is not file:pos: give a binlog file and an offset, "
                "e.g. mysql-bin.000042:4"
            )
    elif key == "timestamp":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(
                f"timestamp {value!r} is not ISO-8601: give e.g. 2026-01-31T12:00:00+00:00"
            ) from None
    return value


def _position(position: EntryPosition) -> dict[str, object]:
    return {
        "file": position.journal_name,
        "position": position.position,
        "gtid": position.gtid,
        "timestamp_ms": position.timestamp,
    }


def _change(change: ConfigChange, applied: bool) -> dict[str, object]:
    return {
        "applied": applied,
        "summary": change.describe(),
        "added": list(change.added),
        "removed": list(change.removed),
        "changed": list(change.changed),
        "unchanged": list(change.unchanged),
    }


def _not_here(destination: str) -> Answer:
    return 404, {"error": f"destination {destination!r} is not running on this process"}
