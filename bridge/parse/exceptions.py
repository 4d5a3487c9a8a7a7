"""Errors of the binlog parser. Each message says what is wrong and how to fix it."""

from __future__ import annotations

from bridge.exceptions import BridgeError
from bridge.position import EntryPosition


class ParseError(BridgeError):
    """Base of the parser's errors."""


class SourceUnreachable(ParseError):
    """The source database cannot be reached (network, DNS, closed port); retried by the parser."""


class SourceMisconfigured(ParseError):
    """The source's settings make CDC impossible (binlog off, not ROW, not FULL, same server_id)."""


class SourceAccessDenied(ParseError):
    """Bad credentials, or the user lacks REPLICATION SLAVE / REPLICATION CLIENT / SELECT."""


class BinlogPurged(ParseError):
    """The start position no longer exists on the source (errno 1236)."""

    def __init__(self, position: EntryPosition, detail: str) -> None:
        self.position = position
        where = f"{position.journal_name}:{position.position}"
        if position.gtid:
            where = f"GTID {position.gtid}"
        super().__init__(
            f"binlog position {where} is no longer on the source ({detail}); "
            "set the destination's on_purged to 'snapshot', 'oldest' or 'latest', or reset the "
            "cursor to a position that SHOW BINARY LOGS still lists"
        )


class BinlogPositionUnreadable(ParseError):
    """The source still has the binlog file but cannot start a dump at the offset (errno 1236:
    "bogus data in log event", "impossible position", "position > file size", ...): the offset
    is not the start of an event or lies past the file's end. Kept apart from
    ``BinlogPurged`` because the fix differs: ``on_purged`` would skip or replay changes, while
    the position itself is what is wrong (the instance names the damaged cursor)."""

    def __init__(self, position: EntryPosition, detail: str) -> None:
        self.position = position
        self.detail = detail
        super().__init__(
            f"binlog position {position.journal_name}:{position.position} cannot be read although "
            f"the source still has {position.journal_name} ({detail}): the offset is not the "
            "start of an event or lies past the end of the file"
        )


# What the source says, in errno 1236's text, when the file is there but the offset is wrong
# (MariaDB 11 and MySQL 8.4/9 wordings); any other 1236 means the position is gone.
UNREADABLE_POSITION_MARKERS = (
    "impossible position",
    "position > file size",
    "position < 4",
    "bogus data in log event",
    "exceeded max_allowed_packet",
    "truncated in the middle of event",
)


# The errno of a dump the source refuses to start (or to go on with).
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


def start_refused(position: EntryPosition, detail: str) -> ParseError:
    """The error for a dump the source refused with errno 1236 at ``position``."""
    if position.journal_name and any(m in detail for m in UNREADABLE_POSITION_MARKERS):
        return BinlogPositionUnreadable(position, detail)
    return BinlogPurged(position, detail)


class SchemaMismatch(ParseError):
    """A rows event does not fit the table definition known for it."""


class ParserProcessFailed(ParseError):
    """The binlog reader's process ended without being asked to, or failed with an error that
    could not be carried back as itself; the instance restarts it."""


class UnsupportedBinlogEvent(ParseError):
    """An event the parser refuses or does not know: the destination stops rather than skip
    changes it cannot read. ``code`` and ``position`` say which and where."""

    def __init__(self, code: int, name: str, position: str, why: str = "") -> None:
        self.code = code
        self.position = position
        if why:
            message = f"binlog event {name} ({code}) at {position} cannot be streamed: {why}"
        else:
            message = (
                f"{name} at {position}: canal-bridge does not know this binlog event and stops "
                "rather than skip changes it cannot read; upgrade canal-bridge (or report the "
                "source's version)"
            )
        super().__init__(message)


class CorruptPayload(ParseError):
    """A TRANSACTION_PAYLOAD event (a compressed transaction) that cannot be unpacked; the
    destination stops: its changes cannot be read, and skipping them would lose them."""
