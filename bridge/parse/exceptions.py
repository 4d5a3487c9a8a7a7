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
            "set the destination's on_purged to 'oldest' or 'latest', or reset the cursor to a "
            "position that SHOW BINARY LOGS still lists"
        )


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
