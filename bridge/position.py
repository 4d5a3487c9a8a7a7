"""Binlog positions as canal names them (EntryPosition, LogIdentity, LogPosition, PositionRange),
and the snapshot progress that rides on a cursor, with the table filter it covers
(docs/snapshots.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bridge.entry import Entry, EntryType, Header
from bridge.model import value_class


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


@value_class
class TableProgress:
    """How far the snapshot of one table (``schema.table``) is acknowledged.

    ``last_key``: the key of the last row acknowledged, as ``bridge.snapshot.rows.encode_key``
    wrote it (JSON-safe); None: nothing yet, the table starts from its first row.
    """

    table: str
    last_key: object = None
    rows: int = 0
    done: bool = False


@value_class
class FilterCoverage:
    """The table filter (``filter.regex`` / ``filter.black_regex``) whose tables a destination
    has covered: each table it selects was streamed from its creation, or its existing rows
    are snapshotted (or planned). A filter selecting more at a later start is backfilled for
    the tables this one did not select (docs/snapshots.md, "Tables newly selected by the
    filter")."""

    regex: str
    black_regex: str = ""


@value_class
class SnapshotProgress:
    """The snapshot plan of a destination and how far each of its tables is acknowledged.

    ``covers``: the filter the destination covers (None in a cursor written before it was
    recorded). It rides with the plan so that the plan and the coverage it satisfies move
    together, atomically, wherever the cursor lives; a plan without tables still carries it.
    """

    tables: tuple[TableProgress, ...]
    covers: FilterCoverage | None = None

    @property
    def done(self) -> bool:
        return all(table.done for table in self.tables)

    def table(self, name: str) -> TableProgress | None:
        return next((table for table in self.tables if table.table == name), None)

    def with_table(self, progress: TableProgress) -> SnapshotProgress:
        return self.with_tables(
            tuple(progress if t.table == progress.table else t for t in self.tables)
        )

    def with_tables(self, tables: tuple[TableProgress, ...]) -> SnapshotProgress:
        """Another plan covering the same filter."""
        return SnapshotProgress(tables, self.covers)


@dataclass(frozen=True, slots=True)
class LogPosition:
    """A cursor: a binlog position of one source and, while a snapshot is under way or once
    one ran, its progress (``snapshot``), which advances with the position atomically."""

    identity: LogIdentity
    position: EntryPosition
    snapshot: SnapshotProgress | None = None

    def keeping_snapshot_of(self, previous: LogPosition | None) -> LogPosition:
        """This position with ``previous``'s snapshot progress when it carries none: a binlog
        transaction end says nothing about the snapshot, so the progress is sticky."""
        if self.snapshot is not None or previous is None or previous.snapshot is None:
            return self
        return replace(self, snapshot=previous.snapshot)


@value_class
class SnapshotHeader(Header):
    """The header of an entry a snapshot put into the stream (not read from the binlog).

    Its position is the stream's position where the chunk was put (``event_length`` 0, so
    resuming after it resumes there), ``execute_time`` the chunk's read time. ``chunk``
    (``schema.table;number``) becomes the record header ``canal-bridge-snapshot``.
    ``progress``: the snapshot progress once this entry is acknowledged; set on each row and
    on the chunk's end, which are ack points of their own (None on the chunk's begin).
    """

    chunk: str = ""
    progress: SnapshotProgress | None = None


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
    (MySQL commits implicitly around it), as canal also treats it. A snapshot row is one too:
    it is put between two binlog transactions and carries the snapshot progress after it.
    """
    return (
        entry.entry_type is EntryType.TRANSACTIONEND
        or entry.is_ddl
        or snapshot_progress_of(entry) is not None
    )


def snapshot_progress_of(entry: Entry) -> SnapshotProgress | None:
    """The snapshot progress an entry carries (snapshot rows and chunk ends), else None."""
    header = entry.header
    return header.progress if isinstance(header, SnapshotHeader) else None


def ack_position_after(
    identity: LogIdentity, entry: Entry, previous: LogPosition | None
) -> LogPosition:
    """The cursor once ``entry`` (an ack point) is consumed: the position after it, with the
    snapshot progress it carries, or else ``previous``'s (sticky across binlog transactions)."""
    position = LogPosition(identity, resume_position_after(entry), snapshot_progress_of(entry))
    return position.keeping_snapshot_of(previous)


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
