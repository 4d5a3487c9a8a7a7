"""Binlog positions as canal names them (EntryPosition, LogIdentity, LogPosition, PositionRange)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bridge.entry import Entry, EntryType


@dataclass(frozen=True, slots=True)
class EntryPosition:
    """A point in one source's binlog.

    ``included`` tells whether the event at this position itself has already been consumed
    (canal resumes *after* an included position). ``timestamp`` is the event time in ms.
    """

    journal_name: str | None = None
    position: int | None = None
    server_id: int | None = None
    gtid: str | None = None
    timestamp: int | None = None
    included: bool = False

    def with_included(self, included: bool) -> EntryPosition:
        return replace(self, included=included)

    def sort_key(self) -> tuple[str, int]:
        """Order within one source: binlog file names sort lexically, offsets numerically."""
        return (self.journal_name or "", self.position or 0)


@dataclass(frozen=True, slots=True)
class LogIdentity:
    """Which source (``host:port``) a position belongs to, and the replica id reading it."""

    source_address: str
    slave_id: int


@dataclass(frozen=True, slots=True)
class LogPosition:
    identity: LogIdentity
    position: EntryPosition


@dataclass(frozen=True, slots=True)
class PositionRange:
    """What one batch covers; ``ack`` is recorded as consumed when the batch is acked.

    ``ack`` lies on a transaction boundary (the last TRANSACTIONEND of the batch) so that a
    restart never resumes in the middle of a transaction; it is ``None`` when the batch holds
    no transaction end (a piece of a huge transaction).
    """

    start: LogPosition
    end: LogPosition
    ack: LogPosition | None = None


def position_of(entry: Entry) -> EntryPosition:
    """Where ``entry`` starts in the binlog (canal's header logfileOffset), with its time."""
    header = entry.header
    return EntryPosition(
        journal_name=header.logfile_name,
        position=header.logfile_offset,
        server_id=header.server_id,
        gtid=header.gtid or None,
        timestamp=header.execute_time,
    )


def is_ack_point(entry: Entry) -> bool:
    """Whether resuming right after ``entry`` starts on a transaction boundary.

    A TRANSACTIONEND closes a transaction; a DDL statement is a transaction of its own
    (MySQL commits implicitly around it), as canal also treats it.
    """
    return entry.entry_type is EntryType.TRANSACTIONEND or entry.is_ddl


def resume_position_after(entry: Entry) -> EntryPosition:
    """The position right after ``entry``: where a dump resumes once it is consumed.

    Used for ack cursors: the end of a TRANSACTIONEND event is the start of the next
    transaction, so a restart from it never begins mid-transaction.
    """
    header = entry.header
    return EntryPosition(
        journal_name=header.logfile_name,
        position=header.logfile_offset + header.event_length,
        server_id=header.server_id,
        gtid=header.gtid or None,
        timestamp=header.execute_time,
    )
