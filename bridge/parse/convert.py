"""Turn mysql-replication's binlog events into canal Entries.

A transaction becomes TRANSACTIONBEGIN, one ROWDATA entry per rows event, TRANSACTIONEND (with
the XID); a DDL statement becomes one ROWDATA entry typed like canal's SimpleDdlParser; idle
heartbeats become HEARTBEAT entries. Each header carries the position where its event starts
and the GTID of its transaction.

Row images are decoded by a ``RowDecoder`` built once per table id and TABLE_MAP definition
(``bridge.parse.rows``) straight from the event's raw bytes, so the library's own value
conversion never runs.

The hot events arrive as ``RawEvent`` bytes (``bridge.parse.framing``) and are read here without
the library: rows events, TABLE_MAP (parsed by the library once per distinct definition, then
cached by its bytes), XID and MariaDB GTID. ``convert_raw`` returns None for the others, which
the parser hands to mysql-replication's classes and then to ``convert``.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from pymysqlreplication import event as binlog_event
from pymysqlreplication import row_event

from bridge.entry import Entry, EntryType, EventType, Header, RowChange
from bridge.parse.construct import slotted_constructor
from bridge.parse.ddl import classify_ddl, is_transaction_control
from bridge.parse.exceptions import SchemaMismatch
from bridge.parse.framing import CHECKSUM_SIZE, HEADER_SIZE, RawEvent
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


# Raw event type codes (MySQL's Log_event_type, MariaDB's additions).
QUERY_EVENT = 2
ROTATE_EVENT = 4
FORMAT_DESCRIPTION_EVENT = 15
XID_EVENT = 16
TABLE_MAP_EVENT = 19
HEARTBEAT_EVENT = 27
GTID_EVENT = 33
MARIADB_GTID_EVENT = 162
# The events the library still parses for us; every other type not decoded here is skipped.
LIBRARY_TYPES = frozenset(
    {QUERY_EVENT, ROTATE_EVENT, FORMAT_DESCRIPTION_EVENT, HEARTBEAT_EVENT, GTID_EVENT}
)
# type code -> (event type, rows kind, default post-header length)
_RAW_ROWS: dict[int, tuple[EventType, RowsKind, int]] = {
    23: (EventType.INSERT, "insert", 8),
    24: (EventType.UPDATE, "update", 8),
    25: (EventType.DELETE, "delete", 8),
    30: (EventType.INSERT, "insert", 10),
    31: (EventType.UPDATE, "update", 10),
    32: (EventType.DELETE, "delete", 10),
}
_V2_ROWS = frozenset({30, 31, 32})
# Positional constructors of the model classes, all fields in order (see bridge.parse.construct).
_new_header = slotted_constructor(Header)
_new_entry = slotted_constructor(Entry)
_new_row_change = slotted_constructor(RowChange)
_MAX_TABLE_MAPS = 4096  # distinct TABLE_MAP definitions cached by their bytes


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
        # Raw path: table id -> decoder of its latest TABLE_MAP, and TABLE_MAP bytes -> decoder.
        self._raw_tables: dict[int, _CachedTable] = {}
        self._table_maps: dict[bytes, _CachedTable] = {}
        # The body of the last TABLE_MAP mapped (table id and definition): the same one again
        # maps its table id to the decoder it already has.
        self._last_table_map = b""

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
                # A real rotation may follow a restart: table ids restart.
                self._tables.clear()
                self._raw_tables.clear()
                self._table_maps.clear()
                self._last_table_map = b""
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

    def convert_raw(
        self,
        raw: RawEvent,
        parse_table_map: Any,
        post_header_lengths: bytes | None = None,
    ) -> list[Entry] | None:
        """The entries of one raw event, or None when the library should parse it
        (``LIBRARY_TYPES``). ``parse_table_map(bytes)`` gives the library's TableMapEvent of a
        TABLE_MAP not seen before."""
        code = raw.type_code
        rows = _RAW_ROWS.get(code)
        if rows is not None:
            return self._raw_rows_entry(raw, code, *rows, post_header_lengths)
        if code == TABLE_MAP_EVENT:
            self._raw_table_map(raw, parse_table_map)
            return []
        if code == XID_EVENT:
            xid = int.from_bytes(raw.data[HEADER_SIZE : HEADER_SIZE + 8], "little")
            return [self._entry(raw, EntryType.TRANSACTIONEND, transaction_id=str(xid))]
        if code == MARIADB_GTID_EVENT:
            data = raw.data
            seq_no = int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
            domain_id = int.from_bytes(data[HEADER_SIZE + 8 : HEADER_SIZE + 12], "little")
            self._gtid = f"{domain_id}-{raw.server_id}-{seq_no}"
            if data[HEADER_SIZE + 12] & MARIADB_GTID_STANDALONE:
                return []
            return [self._entry(raw, EntryType.TRANSACTIONBEGIN)]
        return None if code in LIBRARY_TYPES else []

    def repeats_table_map(self, data: bytes, checksum: bool) -> bool:
        """Whether ``data`` is a TABLE_MAP event identical to the last one mapped (one-row
        events repeat the map of their table before each): it changes nothing, so the parser
        need not frame, follow or convert it."""
        end = len(data) - CHECKSUM_SIZE if checksum else len(data)
        return data[HEADER_SIZE:end] == self._last_table_map

    def _raw_table_map(self, raw: RawEvent, parse_table_map: Any) -> None:
        key = raw.data[HEADER_SIZE : raw.body_end]
        cached = self._table_maps.get(key)
        if cached is None:
            event = parse_table_map(raw.data)
            if event is None:
                return
            table = event.get_table()
            cached = self._build_decoder(table, _null_bitmask(table))
            if len(self._table_maps) >= _MAX_TABLE_MAPS:
                self._table_maps.clear()
            self._table_maps[key] = cached
        self._raw_tables[int.from_bytes(key[:6], "little")] = cached
        self._last_table_map = key

    def _raw_rows_entry(  # noqa: PLR0917  (one call site, the row kinds table spread out)
        self,
        raw: RawEvent,
        code: int,
        event_type: EventType,
        kind: RowsKind,
        post_header: int,
        post_header_lengths: bytes | None,
    ) -> list[Entry]:
        data = raw.data
        cached = self._raw_tables.get(int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 6], "little"))
        if cached is None:
            return []  # no TABLE_MAP seen for it (the library skips such events too)
        if post_header_lengths is not None and len(post_header_lengths) >= code:
            post_header = max(post_header, post_header_lengths[code - 1])
        pos = HEADER_SIZE + post_header
        if code in _V2_ROWS:
            extra = int.from_bytes(data[HEADER_SIZE + 8 : HEADER_SIZE + 10], "little")
            pos += max(0, extra - 2)
        columns, pos = _length_coded(data, pos)
        return [
            self._decoded_entry(
                raw,
                cached.decoder,
                event_type,
                kind,
                body=data[pos : raw.body_end],
                column_count=columns,
            )
        ]

    # -------------------------------------------------------------------- pieces

    def _header(
        self,
        event: Any,
        schema_name: str = "",
        table_name: str = "",
        event_type: EventType | None = None,
    ) -> Header:
        packet = event.packet
        return _new_header(
            self._journal,
            packet.log_pos - packet.event_size,
            packet.server_id,
            event.timestamp * 1000,
            schema_name,
            table_name,
            event_type,
            self._gtid,
            packet.event_size,
        )

    def _entry(self, event: Any, entry_type: EntryType, transaction_id: str = "") -> Entry:
        return _new_entry(self._header(event), entry_type, None, transaction_id)

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
            cached = self._build_decoder(table, _null_bitmask(table))
            self._tables[event.table_id] = cached
        return cached.decoder

    def _build_decoder(self, table: Any, null_bitmask: bytes) -> _CachedTable:
        meta = build_table_meta(
            table.schema,
            table.table,
            table.columns,
            null_bitmask,
            self._live.columns(table.schema, table.table),
        )
        return _CachedTable(table, RowDecoder(meta, self._time_zone))

    def _rows_entry(self, event: Any, event_type: EventType, kind: RowsKind) -> Entry:
        decoder = self._decoder(event)
        # mysql-replication has read the columns-present bitmap(s); the decoder wants them too.
        bitmaps = event.columns_present_bitmap
        if kind == "update":
            bitmaps += event.columns_present_bitmap2
        body = bitmaps + event.packet.read(event.event_size - event.packet.read_bytes)
        return self._decoded_entry(
            event, decoder, event_type, kind, body=body, column_count=event.number_of_columns
        )

    def _decoded_entry(
        self,
        event: Any,
        decoder: RowDecoder,
        event_type: EventType,
        kind: RowsKind,
        *,
        body: bytes,
        column_count: int,
    ) -> Entry:
        header = self._header(
            event,
            schema_name=decoder.table.schema,
            table_name=decoder.table.table,
            event_type=event_type,
        )
        try:
            rows = decoder.decode(kind, body, column_count)
        except SchemaMismatch as exc:
            raise SchemaMismatch(
                f"{exc} (binlog position {header.logfile_name}:{header.logfile_offset})"
            ) from exc
        change = _new_row_change(event_type, False, "", "", rows)
        return _new_entry(header, EntryType.ROWDATA, change, "")


def _length_coded(data: bytes, pos: int) -> tuple[int, int]:
    """A length-coded integer at ``pos`` and the position after it."""
    first = data[pos]
    if first < 251:
        return first, pos + 1
    size = {252: 2, 253: 3, 254: 8}.get(first, 0)
    return int.from_bytes(data[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def _null_bitmask(table: Any) -> bytes:
    """The TABLE_MAP's nullability bits; mysql-replication keeps them on the event only, so
    absent ones count as nullable."""
    bitmask = getattr(table, "null_bitmask", None)
    if isinstance(bitmask, bytes | bytearray):
        return bytes(bitmask)
    return b"\xff" * ((len(table.columns) + 7) // 8)
