"""Our ``Entry`` written as canal's protobuf ``Entry``, filled the way canal's parser
(``LogEventConvert``) fills it:

* Header: ``version`` 1, ``serverenCode`` "UTF-8" and ``sourceType`` MYSQL always set; binlog
  file, start offset, server id, execute time (ms), event length; schema and table; the event
  type for row changes and DDL (none on transaction markers); ``gtid``; a ``rowsCount`` prop
  on rows events.
* ROWDATA: a ``RowChange`` with ``eventType``, ``isDdl`` (always set), ``sql``,
  ``ddlSchemaName`` and one ``RowData`` per row, INSERT in ``afterColumns``, DELETE in
  ``beforeColumns``, UPDATE both; every ``Column`` carries ``isNull`` even when false, as
  canal sets it explicitly. The Columns come from the row images (``RowData.before/after``):
  the parser decides index, sqlType, isKey, updated and the value text, for this format and
  the FlatMessage alike.
* TRANSACTIONBEGIN: an empty ``TransactionBegin``; TRANSACTIONEND: ``TransactionEnd`` with the
  XID as ``transactionId`` ("0" for a COMMIT statement, as canal writes).

What our model does not carry is left at its default (not on the wire): ``RowChange.tableId``,
``TransactionBegin.threadId`` and canal's ``curtGtid*`` header props.
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.entry import Column, Entry, EntryType, EventType, Header, RowChange, row_images
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb

HEADER_VERSION = 1
SERVER_ENCODING = "UTF-8"  # canal: text is Java's (unicode) once parsed, written as UTF-8
ROWS_COUNT = "rowsCount"

_ENTRY_TYPES = {kind: pb.EntryType.Value(kind.value) for kind in EntryType}
_EVENT_TYPES = {kind: pb.EventType.Value(kind.value) for kind in EventType}


def canal_entry(entry: Entry) -> pb.Entry:
    """canal's Entry of one of ours (HEARTBEATs too, though canal never sends them)."""
    change = entry.row_change
    if entry.entry_type is EntryType.TRANSACTIONBEGIN:
        store = pb.TransactionBegin().SerializeToString()
    elif entry.entry_type is EntryType.TRANSACTIONEND:
        store = pb.TransactionEnd(transactionId=entry.transaction_id or "0").SerializeToString()
    elif change is not None:
        store = canal_row_change(change).SerializeToString()
    else:
        store = b""
    rows = 0 if change is None or change.is_ddl else len(change.row_datas)
    return pb.Entry(
        header=canal_header(entry.header, rows),
        entryType=_ENTRY_TYPES[entry.entry_type],
        storeValue=store,
    )


def canal_header(header: Header, rows_count: int = 0) -> pb.Header:
    canal = pb.Header(
        version=HEADER_VERSION,
        logfileName=header.logfile_name,
        logfileOffset=header.logfile_offset,
        serverId=header.server_id,
        serverenCode=SERVER_ENCODING,
        executeTime=header.execute_time,
        sourceType=pb.MYSQL,
        schemaName=header.schema_name,
        tableName=header.table_name,
        eventLength=header.event_length,
        gtid=header.gtid,
    )
    if header.event_type is not None:
        canal.eventType = _EVENT_TYPES[header.event_type]
    if rows_count > 0:
        canal.props.add(key=ROWS_COUNT, value=str(rows_count))
    return canal


def canal_row_change(change: RowChange) -> pb.RowChange:
    canal = pb.RowChange(
        eventType=_EVENT_TYPES[change.event_type],
        isDdl=change.is_ddl,
        sql=change.sql,
        ddlSchemaName=change.ddl_schema_name,
    )
    rows = canal.rowDatas
    for row in row_images(change):
        rows.add(
            beforeColumns=[canal_column(c) for c in row.before],
            afterColumns=[canal_column(c) for c in row.after],
        )
    return canal


def canal_column(column: Column) -> pb.Column:
    return pb.Column(
        index=column.index,
        sqlType=column.sql_type,
        name=column.name,
        isKey=column.is_key,
        updated=column.updated,
        isNull=column.is_null,
        value=column.value,
        mysqlType=column.mysql_type,
    )


def with_rows(change: pb.RowChange, rows: Sequence[pb.RowData]) -> pb.RowChange:
    """A copy of ``change`` carrying only ``rows``."""
    part = pb.RowChange()
    part.CopyFrom(change)
    del part.rowDatas[:]
    part.rowDatas.extend(rows)
    return part


def entry_with_rows(entry: pb.Entry, change: pb.RowChange) -> bytes:
    """``entry`` (a ROWDATA entry) serialized with ``change`` as its row change, header
    unchanged (``rowsCount`` still counts the whole event), as canal writes the pieces of an
    event whose rows go to several partitions."""
    return pb.Entry(
        header=entry.header, entryType=entry.entryType, storeValue=change.SerializeToString()
    ).SerializeToString()
