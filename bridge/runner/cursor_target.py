"""Where an operator moves a stopped destination's cursor: ``file:position``, a GTID set, or
an ISO-8601 timestamp (the admin API's ``PUT .../cursor``).

``parse_target`` turns the text into the ``start`` section it means (pure, so every form and
every malformed one is unit-tested); ``resolve_target`` asks the source where that is, as a
file position: a position or a time with the search a destination's configured ``start``
gets (``StartPositionFinder``), after refusing a file the source no longer lists, a position
past a file's end and a time before the oldest binlog; a GTID set with the source's own GTID
dump, which starts at the first transaction outside the set.
"""

from __future__ import annotations

import datetime as dt
import re

from bridge.config import DestinationConfig, SourceConfig, StartConfig
from bridge.exceptions import ActionRefused
from bridge.instance.start_position import StartPositionFinder
from bridge.parse.binlog.gtid import is_mariadb_gtid_set, parse_gtid_set
from bridge.parse.exceptions import BinlogPurged
from bridge.parse.scan import first_transaction_after
from bridge.parse.source import (
    SourceFacts,
    binary_logs,
    master_position,
    open_connection,
    preflight,
)
from bridge.position import EntryPosition

FORMS = "file:position (mysql-bin.000003:4), a GTID set, or an ISO-8601 timestamp with offset"

_FILE_POSITION = re.compile(r"([^\s:]+):(\d+)")
# A date first: 2026-11-29T08:00:00Z. A bare date is also a valid MariaDB GTID (domain-server-
# sequence), so it is refused as ambiguous rather than guessed.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_target(text: str) -> StartConfig:
    """The ``start`` section ``text`` names; ``ValueError`` (one line, the forms accepted)
    for anything else."""
    target = text.strip()
    if not target:
        raise ValueError(f"the cursor target is empty; give {FORMS}")
    if _DATE.match(target):
        return StartConfig(timestamp=_timestamp_ms(target))
    if is_mariadb_gtid_set(target):
        return StartConfig(gtid=target)
    match = _FILE_POSITION.fullmatch(target)
    if match is not None and not _looks_like_uuid(match[1]):
        position = int(match[2])
        if position < 4:
            raise ValueError(f"{target!r}: a binlog position is 4 or more (4: the file's start)")
        return StartConfig(journal_name=match[1], position=position)
    try:
        parse_gtid_set(target)
    except ValueError:
        raise ValueError(f"{target!r} is not a cursor target; give {FORMS}") from None
    return StartConfig(gtid=target)


def _timestamp_ms(text: str) -> int:
    if _DATE.fullmatch(text):
        raise ValueError(
            f"{text!r} is a date without a time (and also reads as a MariaDB GTID); give a "
            f"timestamp such as {text}T00:00:00Z, or the GTID with its domain as 0-{text}"
        )
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO-8601 timestamp; give one such as 2026-11-29T08:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset; add Z or +hh:mm so it names one moment")
    if moment.timestamp() < 0:
        raise ValueError(f"{text!r} is before 1970; give a moment the source's binlog can hold")
    return int(moment.timestamp() * 1000)


def _looks_like_uuid(name: str) -> bool:
    """A MySQL GTID set's ``uuid:N`` has the shape of ``file:position``."""
    return len(name) == 36 and name.count("-") == 4


def resolve_target(destination: DestinationConfig, start: StartConfig) -> EntryPosition:
    """The binlog position ``start`` names on the destination's source; ``ActionRefused``
    when its file is not listed by SHOW BINARY LOGS (purged, or never there), the position
    is past the file's end, or the time is before the oldest binlog. A position inside a
    transaction moves back to its start, a timestamp to the first transaction at or after
    it, a GTID set to the first transaction outside it (the binlog end if none is): the
    cursor is always a file position, as the schema history is kept by position."""
    source = destination.source
    facts = preflight(source, destination.timestamp_time_zone)
    with open_connection(source) as conn:
        files = dict(binary_logs(conn))
        end = master_position(conn, facts.server)  # before the search: nothing is skipped
    if start.gtid is not None:
        return _after_gtid(destination.name, source, facts, start.gtid) or end
    if start.journal_name is not None and start.position is not None:
        check_listed(destination.name, start.journal_name, start.position, files)
    finder = StartPositionFinder(source, facts, start)
    if start.timestamp is not None and files:
        oldest = next(iter(files))  # SHOW BINARY LOGS lists the oldest first
        first_ms = finder.first_transaction_ms(oldest)
        check_reached(destination.name, start.timestamp, oldest, first_ms)
    try:
        return finder.find(None)
    except BinlogPurged as exc:  # purged between the check and the search
        raise ActionRefused(f"destination {destination.name}: {exc}") from None


def _after_gtid(
    name: str, source: SourceConfig, facts: SourceFacts, gtid: str
) -> EntryPosition | None:
    if is_mariadb_gtid_set(gtid) != facts.is_mariadb:
        kind, server = ("MariaDB", "MySQL") if is_mariadb_gtid_set(gtid) else ("MySQL", "MariaDB")
        raise ActionRefused(
            f"destination {name}: {gtid} is a {kind} GTID set and the source is {server}; "
            "give one of the source's own (SELECT @@gtid_binlog_pos or @@gtid_executed)"
        )
    try:
        found = first_transaction_after(source, facts, gtid)
    except BinlogPurged:
        raise ActionRefused(
            f"destination {name}: the source's binlog does not go on from GTID set {gtid} "
            "(purged, or not this source's history): give a set it still covers, a "
            "file:position or a time"
        ) from None
    if found is None:
        return None
    return EntryPosition(journal_name=found.journal_name, position=found.position)


def check_reached(name: str, timestamp_ms: int, oldest: str, first_ms: int | None) -> None:
    """Refuse a time before the oldest binlog the source keeps: what came between is purged."""
    if first_ms is not None and first_ms > timestamp_ms:
        first = dt.datetime.fromtimestamp(first_ms / 1000, dt.UTC).isoformat()
        raise ActionRefused(
            f"destination {name}: the source's oldest binlog {oldest} begins at {first}, after "
            f"the time asked: what came before was purged; choose a later time, or {oldest}:4 "
            "to start at the oldest change the source keeps"
        )


def check_listed(name: str, journal_name: str, position: int, files: dict[str, int]) -> None:
    names = list(files)
    listed = f"SHOW BINARY LOGS lists {names[0]} to {names[-1]}" if names else "none listed"
    if journal_name not in files:
        raise ActionRefused(
            f"destination {name}: binlog file {journal_name} is not on the source ({listed}); "
            "it was purged or never existed: choose a position in a listed file"
        )
    size = files[journal_name]
    if position > size:
        raise ActionRefused(
            f"destination {name}: position {position} is past the end of {journal_name} "
            f"({size} bytes); choose a position up to {size}"
        )
