"""canal's Entry model (EntryProtocol.proto) as plain, immutable dataclasses.

An Entry is one step of the change stream: a transaction begin, the rows of one binlog rows
event (or one DDL statement), a transaction end, or a heartbeat. Column values are text,
rendered the way canal renders them (see ``bridge.parse.binlog.values``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from bridge.model import value_class


class EntryType(Enum):
    TRANSACTIONBEGIN = "TRANSACTIONBEGIN"
    ROWDATA = "ROWDATA"
    TRANSACTIONEND = "TRANSACTIONEND"
    HEARTBEAT = "HEARTBEAT"

    # Members are compared by identity, so hashed by it: Enum's own __hash__ is a Python
    # method (60 ns per set or dict lookup in Python 3.11, several per entry), this one C.
    __hash__ = object.__hash__


# The members as module names, for the loops that compare every entry's type (parser, converter,
# transaction buffer, sink, instance): a member read through its enum class costs 50 ns in
# Python 3.11, a module name a few.
TRANSACTION_BEGIN, TRANSACTION_END = EntryType.TRANSACTIONBEGIN, EntryType.TRANSACTIONEND
ROWDATA, HEARTBEAT = EntryType.ROWDATA, EntryType.HEARTBEAT


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

    __hash__ = object.__hash__  # as EntryType's

    @property
    def is_dml(self) -> bool:
        return self in DML_EVENT_TYPES


DML_EVENT_TYPES = frozenset({EventType.INSERT, EventType.UPDATE, EventType.DELETE})


@value_class
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


@value_class
class RowData:
    before: tuple[Column, ...] = ()
    after: tuple[Column, ...] = ()


class EncodedRows(Protocol):
    """The rows of one rows event already written in the destination's output format.

    The binlog reader's process writes them ahead of their batch where the destination's
    encoder allows (``AheadEncoding``), so that the instance carries a few
    bytes objects instead of row objects across the process boundary. Opaque to everything
    but the encoder that wrote them; ``len()`` is the number of rows.
    """

    def __len__(self) -> int: ...


class EncodedRowsApart(EncodedRows, Protocol):
    """Rows each written in the output format as a record of its own (a snapshot chunk's:
    ``AheadEncoding.encode_apart``), of which a snapshot entry may carry any subset."""

    def pick(self, indexes: Sequence[int]) -> EncodedRowsApart:
        """These rows at ``indexes``, in that order."""
        ...


@value_class
class RowChange:
    event_type: EventType
    is_ddl: bool = False
    sql: str = ""
    ddl_schema_name: str = ""
    row_datas: tuple[RowData, ...] | EncodedRows = ()


def row_images(change: RowChange) -> tuple[RowData, ...]:
    """The row images of a change. Encoded rows have none: they are encoded ahead only where
    nothing reads images afterwards (no field filter, no partition hash), so asking is a bug."""
    rows = change.row_datas
    if not isinstance(rows, tuple):
        raise TypeError("rows encoded by the binlog reader process have no row images")
    return rows


@value_class
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


@value_class
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
        """Bytes this entry is charged in the store's MEMSIZE mode (canal: the raw event size;
        at least 1, for entries made by the bridge)."""
        return self.header.event_length or 1


def decoded_row_change(entry: Entry) -> RowChange | None:
    """The change of a DML entry with decoded row images (not encoded ahead, not empty), or
    None: what the sink's per-row steps (shaping, key columns) rewrite and leave alone."""
    change = entry.row_change
    if (
        entry.entry_type is not EntryType.ROWDATA
        or change is None
        or change.is_ddl
        or type(change.row_datas) is not tuple
        or not change.row_datas
    ):
        return None
    return change


# A change's rows written in the output format as plain parts, or None to send the rows.
AheadEncode = Callable[[Header, RowChange], tuple[Any, ...] | None]


@value_class
class EncodedAhead:
    """The rows of a rows event its encoder wrote from the event's bytes, without decoding
    them (``AheadEncoding.encode_event``): ``parts`` as ``revive`` takes them. Only in the
    binlog reader's process, where ``bridge.parse.entry_codec`` sends the parts."""

    rows: int
    parts: tuple[Any, ...]

    def __len__(self) -> int:
        return self.rows


# The rows of a rows event written in the output format from its undecoded images: given the
# entry's schema, table, event type, execute time (ms) and GTID, then the plans of its before
# and after images (the same one but for an UPDATE; the parser's, opaque here), the event's
# rows body and where the images start in it. Returns the parts ``AheadEncoding.revive``
# takes (the row count first), or None to have the rows decoded.
EventEncode = Callable[
    [str, str, EventType, int, str, object, object, bytes, int], tuple[Any, ...] | None
]


@dataclass(frozen=True, slots=True)
class AheadEncoding:
    """How the binlog reader's process writes rows events in the destination's output format,
    ahead of their batch (the format is the destination's business, not the reader's).

    ``encode(header, change)`` runs in the reader's process and returns plain parts (a tuple
    of bytes, ints, strings: the process pipe carries them), or None to send the rows themselves;
    it must pickle (a module function or a ``functools.partial`` of one). ``revive(*parts)``
    runs in the instance's process and returns the ``EncodedRows`` its encoder reads.

    ``encode_apart`` / ``revive_apart`` do the same for rows that become a record each (a
    snapshot chunk's rows, ``EncodedRowsApart``), where the encoder can write them so.

    ``encode_event`` (``EventEncode``), where given, is tried first for a binlog rows event:
    it writes the rows straight from the event's undecoded images, so the reader never makes
    their values or its entry's objects; None to have them decoded and ``encode`` tried.
    """

    encode: AheadEncode
    revive: Callable[..., EncodedRows]
    encode_apart: AheadEncode | None = None
    revive_apart: Callable[..., EncodedRowsApart] | None = None
    encode_event: EventEncode | None = None
