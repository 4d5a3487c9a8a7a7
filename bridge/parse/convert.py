"""Turn mysql-replication's binlog events into canal Entries.

A transaction becomes TRANSACTIONBEGIN, one ROWDATA entry per rows event, TRANSACTIONEND (with
the XID); a DDL statement becomes one ROWDATA entry typed like canal's SimpleDdlParser; idle
heartbeats become HEARTBEAT entries. Each header carries the position where its event starts
and the GTID of its transaction.

Row images are decoded by a ``RowDecoder`` built once per table id and TABLE_MAP definition
(``bridge.parse.rows``) straight from the event's raw bytes, so the library's own value
conversion never runs.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from pymysqlreplication import event as binlog_event
from pymysqlreplication import row_event

from bridge.entry import Entry, EntryType, EventType, Header, RowChange
from bridge.parse.ddl import classify_ddl, is_transaction_control
from bridge.parse.exceptions import SchemaMismatch
from bridge.parse.rows import RowDecoder, RowsKind
from bridge.parse.schema import LiveSchema
from bridge.parse.table_map import build_table_meta

log = logging.getLogger(__name__)

MARIADB_GTID_STANDALONE = 0x01

_ROWS_KINDS: dict[type[Any], tuple[EventType, RowsKind]] = {
    row_event.WriteRowsEvent: (EventType.INSERT, "insert"),
    row_event.UpdateRowsEvent: (EventType.UPDATE, "update"),
    row_event.DeleteRowsEvent: (EventType.DELETE, "delete"),
}
_DML_WORDS = ("insert", "update", "delete", "replace")

# The events the converter needs from the dump; everything else is skipped by the library.
WANTED_EVENTS: tuple[type[Any], ...] = (
    binlog_event.RotateEvent,
    binlog_event.QueryEvent,
    binlog_event.XidEvent,
    binlog_event.GtidEvent,
    binlog_event.MariadbGtidEvent,
    binlog_event.HeartbeatLogEvent,
    *_ROWS_KINDS,
)


@dataclass(slots=True)
class _CachedTable:
    source: object  # the library's Table object the decoder was built from
    decoder: RowDecoder


class EventConverter:
    """Stateful: it follows the binlog file name, the current GTID and the table ids."""

    def __init__(
        self, live_schema: LiveSchema, time_zone: dt.tzinfo, journal_name: str = ""
    ) -> None:
        self._live = live_schema
        self._time_zone = time_zone
        self._journal = journal_name
        self._gtid = ""
        self._tables: dict[int, _CachedTable] = {}

    @property
    def journal_name(self) -> str:
        return self._journal

    def convert(self, event: Any) -> list[Entry]:
        """The entries for one binlog event (often none)."""
        kind = _ROWS_KINDS.get(type(event))
        if kind is not None:
            return [self._rows_entry(event, *kind)]
        if isinstance(event, binlog_event.RotateEvent):
            self._journal = event.next_binlog
            if event.timestamp:
                self._tables.clear()  # a real rotation may follow a restart: table ids restart
            return []
        if isinstance(event, binlog_event.MariadbGtidEvent):
            self._gtid = event.gtid
            if event.flags & MARIADB_GTID_STANDALONE:
                return []
            return [self._entry(event, EntryType.TRANSACTIONBEGIN)]
        if isinstance(event, binlog_event.GtidEvent):
            self._gtid = event.gtid
            return []
        if isinstance(event, binlog_event.XidEvent):
            return [self._entry(event, EntryType.TRANSACTIONEND, transaction_id=str(event.xid))]
        if isinstance(event, binlog_event.QueryEvent):
            return self._query_entries(event)
        if isinstance(event, binlog_event.HeartbeatLogEvent):
            return [self._heartbeat(event)]
        return []

    # -------------------------------------------------------------------- pieces

    def _header(self, event: Any, **fields: Any) -> Header:
        packet = event.packet
        return Header(
            logfile_name=self._journal,
            logfile_offset=packet.log_pos - packet.event_size,
            server_id=packet.server_id,
            execute_time=event.timestamp * 1000,
            gtid=self._gtid,
            event_length=packet.event_size,
            **fields,
        )

    def _entry(self, event: Any, entry_type: EntryType, transaction_id: str = "") -> Entry:
        return Entry(self._header(event), entry_type, transaction_id=transaction_id)

    def _heartbeat(self, event: Any) -> Entry:
        header = Header(
            logfile_name=self._journal,
            logfile_offset=event.packet.log_pos,
            server_id=event.packet.server_id,
            execute_time=event.timestamp * 1000,
            gtid=self._gtid,
        )
        return Entry(header, EntryType.HEARTBEAT)

    def _query_entries(self, event: Any) -> list[Entry]:
        sql = (
            event.query if isinstance(event.query, str) else event.query.decode("utf-8", "replace")
        )
        control = is_transaction_control(sql)
        if control == "BEGIN":
            return [self._entry(event, EntryType.TRANSACTIONBEGIN)]
        if control == "COMMIT":
            return [self._entry(event, EntryType.TRANSACTIONEND)]
        schema = (
            event.schema.decode("utf-8", "replace")
            if isinstance(event.schema, bytes)
            else event.schema
        )
        if sql.lstrip().lower().startswith(_DML_WORDS):
            log.warning(
                "statement-based change at %s:%s in schema %r passed on as a QUERY entry: "
                "the session used binlog_format=STATEMENT; set it to ROW",
                self._journal,
                event.packet.log_pos - event.packet.event_size,
                schema,
            )
        ddl = classify_ddl(sql, schema)
        if ddl.event_type is not EventType.QUERY or ddl.table:
            self._live.forget(ddl.schema, ddl.table)
        elif sql.lstrip().lower().startswith(("drop database", "drop schema", "alter database")):
            self._live.forget(ddl.schema)
        header = self._header(
            event, schema_name=ddl.schema, table_name=ddl.table, event_type=ddl.event_type
        )
        change = RowChange(ddl.event_type, is_ddl=True, sql=sql, ddl_schema_name=schema)
        return [Entry(header, EntryType.ROWDATA, row_change=change)]

    def _decoder(self, event: Any) -> RowDecoder:
        table = event.table_map[event.table_id]
        cached = self._tables.get(event.table_id)
        if cached is None or cached.source is not table:
            meta = build_table_meta(
                table.schema,
                table.table,
                table.columns,
                _null_bitmask(table),
                self._live.columns(table.schema, table.table),
            )
            cached = _CachedTable(table, RowDecoder(meta, self._time_zone))
            self._tables[event.table_id] = cached
        return cached.decoder

    def _rows_entry(self, event: Any, event_type: EventType, kind: RowsKind) -> Entry:
        decoder = self._decoder(event)
        # mysql-replication has read the columns-present bitmap(s); the decoder wants them too.
        bitmaps = event.columns_present_bitmap
        if kind == "update":
            bitmaps += event.columns_present_bitmap2
        body = bitmaps + event.packet.read(event.event_size - event.packet.read_bytes)
        header = self._header(
            event,
            schema_name=decoder.table.schema,
            table_name=decoder.table.table,
            event_type=event_type,
        )
        try:
            rows = decoder.decode(kind, body, event.number_of_columns)
        except SchemaMismatch as exc:
            raise SchemaMismatch(
                f"{exc} (binlog position {header.logfile_name}:{header.logfile_offset})"
            ) from exc
        change = RowChange(event_type, row_datas=rows)
        return Entry(header, EntryType.ROWDATA, row_change=change)


def _null_bitmask(table: Any) -> bytes:
    """The TABLE_MAP's nullability bits; mysql-replication keeps them on the event only, so
    absent ones count as nullable."""
    bitmask = getattr(table, "null_bitmask", None)
    if isinstance(bitmask, bytes | bytearray):
        return bytes(bitmask)
    return b"\xff" * ((len(table.columns) + 7) // 8)
