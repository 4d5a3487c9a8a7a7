"""canal's Entry model (EntryProtocol.proto) as plain, immutable dataclasses.

An Entry is one step of the change stream: a transaction begin, the rows of one binlog rows
event (or one DDL statement), a transaction end, or a heartbeat. Column values are text,
rendered the way canal renders them (see ``bridge.parse.values``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EntryType(Enum):
    TRANSACTIONBEGIN = "TRANSACTIONBEGIN"
    ROWDATA = "ROWDATA"
    TRANSACTIONEND = "TRANSACTIONEND"
    HEARTBEAT = "HEARTBEAT"


class EventType(Enum):
    """canal's EventType: DML, then the DDL kinds canal distinguishes."""

    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CREATE = "CREATE"
    ALTER = "ALTER"
    ERASE = "ERASE"
    QUERY = "QUERY"
    TRUNCATE = "TRUNCATE"
    RENAME = "RENAME"
    CINDEX = "CINDEX"
    DINDEX = "DINDEX"
    GTID = "GTID"

    @property
    def is_dml(self) -> bool:
        return self in _DML


_DML = frozenset({EventType.INSERT, EventType.UPDATE, EventType.DELETE})


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a row image. ``value`` is canal's text rendering ('' when ``is_null``)."""

    index: int
    sql_type: int
    name: str
    is_key: bool
    updated: bool
    is_null: bool
    value: str
    mysql_type: str


@dataclass(frozen=True, slots=True)
class RowData:
    before: tuple[Column, ...] = ()
    after: tuple[Column, ...] = ()


# ``RenderedRows``' fields in order, as the compiled path returns them and the wire carries them.
RenderedParts = tuple[int, bytes, bytes, bytes, bytes]


@dataclass(frozen=True, slots=True)
class RenderedRows:
    """The rows of one rows event already written as canal's FlatMessage JSON and record key.

    The binlog reader's child process renders them (``bridge.parse.child``) so that the
    instance carries a few bytes objects instead of row objects across the process boundary.
    The JSON lacks the batch ``id`` and build ``ts``, known only when a batch is built:
    ``finish`` puts them in. ``len()`` is the number of rows; there are no row images to read.
    Fields in ``RenderedParts`` order.
    """

    count: int
    head: bytes
    middle: bytes
    tail: bytes
    key: bytes

    def __len__(self) -> int:
        return self.count

    def finish(self, batch_id: bytes, ts: bytes) -> bytes:
        """The record value, given the batch id and build time as JSON numbers."""
        return b"".join((self.head, batch_id, self.middle, ts, self.tail))


@dataclass(frozen=True, slots=True)
class RowChange:
    event_type: EventType
    is_ddl: bool = False
    sql: str = ""
    ddl_schema_name: str = ""
    row_datas: tuple[RowData, ...] | RenderedRows = ()


def row_images(change: RowChange) -> tuple[RowData, ...]:
    """The row images of a change. Rendered rows have none: the child renders rows only where
    nothing reads images afterwards (no field filter, no partition hash), so asking is a bug."""
    rows = change.row_datas
    if isinstance(rows, RenderedRows):
        raise TypeError("rows rendered by the binlog reader process have no row images")
    return rows


@dataclass(frozen=True, slots=True)
class Header:
    logfile_name: str
    logfile_offset: int
    server_id: int
    execute_time: int
    schema_name: str = ""
    table_name: str = ""
    event_type: EventType | None = None
    gtid: str = ""
    event_length: int = 0


@dataclass(frozen=True, slots=True)
class Entry:
    """One element of the stream. ``transaction_id`` is the XID on TRANSACTIONEND."""

    header: Header
    entry_type: EntryType
    row_change: RowChange | None = None
    transaction_id: str = ""

    @property
    def is_ddl(self) -> bool:
        return self.row_change is not None and self.row_change.is_ddl

    @property
    def mem_size(self) -> int:
        """Bytes this entry is charged in the store's MEMSIZE mode (canal: the raw event size)."""
        return max(self.header.event_length, 1)
