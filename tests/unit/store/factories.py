"""Small builders of entries (and store events), shared by the store and sink tests."""

from __future__ import annotations

from bridge.entry import Column, Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.position import LogIdentity
from bridge.store import Event

IDENTITY = LogIdentity("127.0.0.1:3306", 1234)
BINLOG = "mysql-bin.000001"


def header(
    offset: int,
    size: int = 100,
    schema: str = "",
    table: str = "",
    *,
    event_type: EventType | None = None,
    file: str = BINLOG,
    ts: int | None = None,
) -> Header:
    return Header(
        logfile_name=file,
        logfile_offset=offset,
        server_id=1,
        execute_time=1_700_000_000_000 + offset if ts is None else ts,
        schema_name=schema,
        table_name=table,
        event_type=event_type,
        event_length=size,
    )


def begin(offset: int, size: int = 100) -> Entry:
    return Entry(header(offset, size), EntryType.TRANSACTIONBEGIN)


def end(offset: int, size: int = 100) -> Entry:
    return Entry(header(offset, size), EntryType.TRANSACTIONEND, transaction_id=str(offset))


def heartbeat(offset: int) -> Entry:
    return Entry(header(offset, 0), EntryType.HEARTBEAT)


def col(index: int, name: str, value: str, *, key: bool = False) -> Column:
    return Column(index, 12, name, key, False, False, value, "varchar(10)")


def row(
    offset: int,
    schema: str = "shop",
    table: str = "orders",
    *,
    size: int = 100,
    columns: tuple[Column, ...] = (),
    event_type: EventType = EventType.INSERT,
) -> Entry:
    change = RowChange(event_type, row_datas=(RowData(after=columns),))
    return Entry(
        header(offset, size, schema, table, event_type=event_type), EntryType.ROWDATA, change
    )


def ddl(offset: int, schema: str = "shop", table: str = "orders", size: int = 100) -> Entry:
    change = RowChange(EventType.ALTER, is_ddl=True, sql="ALTER TABLE x", ddl_schema_name=schema)
    return Entry(
        header(offset, size, schema, table, event_type=EventType.ALTER), EntryType.ROWDATA, change
    )


def ev(entry: Entry) -> Event:
    """``entry`` read from ``IDENTITY``: where the store reports it (its log position)."""
    return Event(IDENTITY, entry)


def rows(first_offset: int, count: int, size: int = 100) -> list[Entry]:
    """``count`` row entries at increasing offsets, ``size`` bytes each."""
    return [row(first_offset + i * size, size=size) for i in range(count)]


def transaction(offset: int, n_rows: int, size: int = 100) -> list[Entry]:
    """BEGIN, ``n_rows`` rows, END at consecutive offsets."""
    out = [begin(offset, size)]
    out += rows(offset + size, n_rows, size)
    out.append(end(offset + size * (n_rows + 1), size))
    return out
