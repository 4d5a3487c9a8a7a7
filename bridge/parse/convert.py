"""Turn binlog events into canal Entries.

A transaction becomes TRANSACTIONBEGIN, one ROWDATA entry per rows event, TRANSACTIONEND (with
the XID). Without ``begins`` its BEGIN is left out: for a destination whose output has no use
for it (a FlatMessage has none), as nothing else reads it (the END alone marks the boundary a
cursor moves to). A DDL statement becomes one ROWDATA entry typed like canal's
SimpleDdlParser; idle heartbeats become HEARTBEAT entries. Each header carries the position
where its event starts and the GTID of its transaction.

Every event arrives as ``RawEvent`` bytes (``bridge.parse.binlog.framing``) and is read here: the
event table of ``bridge.parse.binlog.events`` says which types are decoded, which carry nothing a
row-based stream needs, and which are refused. An event type the table does not know stops the
destination with one line naming it and its position: skipping it could lose changes.

Row images are decoded by a ``RowDecoder`` built once per TABLE_MAP definition
(``bridge.parse.binlog.rows``), cached by the definition's bytes, from the TABLE_MAP and the table's
definition in the schema history (``bridge.schema``) as of the event: each DDL statement is
applied to the history as it passes, and drops every cached decoder. A compressed transaction
(TRANSACTION_PAYLOAD) is unpacked lazily: its inner events go through the same loop as a read's,
a chunk at a time.
"""

from __future__ import annotations

import datetime as dt
import logging
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from bridge import native
from bridge.entry import (
    ROWDATA,
    TRANSACTION_BEGIN,
    TRANSACTION_END,
    EncodedAhead,
    Entry,
    EntryType,
    EventEncode,
    EventType,
    Header,
    RowChange,
    RowData,
)
from bridge.parse.binlog import events
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.events import (
    CHECKSUM_SIZE,
    HEADER,
    HEADER_SIZE,
    TYPE_CODE_AT,
    Handling,
)
from bridge.parse.binlog.framing import RawEvent
from bridge.parse.binlog.gtid import decode_gtid_event
from bridge.parse.binlog.packed import read_packed_int
from bridge.parse.binlog.payload import inner_event_bytes, inner_events
from bridge.parse.binlog.rows import RowDecoder, RowsKind
from bridge.parse.binlog.table_map import TableMapDef, decode_table_map
from bridge.parse.binlog.table_meta import TableMeta, build_table_meta
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.ddl import classify_ddl, is_statement_dml, is_transaction_control
from bridge.parse.entry_codec import FlatEntry
from bridge.parse.exceptions import SchemaMismatch, UnsupportedBinlogEvent
from bridge.schema.history import SchemaHistory

log = logging.getLogger(__name__)

MARIADB_GTID_STANDALONE = 0x01
# Whole events read with one call: the header (events.HEADER), then an XID's xid (in
# flat_entries), or a MariaDB GTID's body (sequence number, domain id, flags).
_XID_EVENT = struct.Struct(events.HEADER.format + "Q")
_MARIADB_GTID_EVENT = struct.Struct(events.HEADER.format + "QIB")

_E = EventCode
# type code -> (event type, rows kind, default post-header length)
_ROWS_EVENTS: dict[EventCode, tuple[EventType, RowsKind, int]] = {
    _E.WRITE_ROWS_EVENT_V1: (EventType.INSERT, "insert", 8),
    _E.UPDATE_ROWS_EVENT_V1: (EventType.UPDATE, "update", 8),
    _E.DELETE_ROWS_EVENT_V1: (EventType.DELETE, "delete", 8),
    _E.WRITE_ROWS_EVENT: (EventType.INSERT, "insert", 10),
    _E.UPDATE_ROWS_EVENT: (EventType.UPDATE, "update", 10),
    _E.DELETE_ROWS_EVENT: (EventType.DELETE, "delete", 10),
    _E.PARTIAL_UPDATE_ROWS_EVENT: (EventType.UPDATE, "partial_update", 10),
}
_V2_ROWS = frozenset(
    {_E.WRITE_ROWS_EVENT, _E.UPDATE_ROWS_EVENT, _E.DELETE_ROWS_EVENT, _E.PARTIAL_UPDATE_ROWS_EVENT}
)
# The codes the converter tells apart, bound once (a member read through its enum class is a
# lookup of 50 ns per use in Python 3.11; transactions meet several each).
_TABLE_MAP, _XID, _XA_PREPARE = _E.TABLE_MAP_EVENT, _E.XID_EVENT, _E.XA_PREPARE_LOG_EVENT
_TRANSACTION_ENDS = frozenset({_XID, _XA_PREPARE})
_MARIADB_GTID, _QUERY, _PAYLOAD = (
    _E.MARIADB_GTID_EVENT,
    _E.QUERY_EVENT,
    _E.TRANSACTION_PAYLOAD_EVENT,
)
_MYSQL_GTIDS = frozenset({_E.GTID_LOG_EVENT, _E.ANONYMOUS_GTID_LOG_EVENT})
_ROTATE, _FORMAT_DESCRIPTION = _E.ROTATE_EVENT, _E.FORMAT_DESCRIPTION_EVENT
_HEARTBEATS = frozenset({_E.HEARTBEAT_LOG_EVENT, _E.HEARTBEAT_LOG_EVENT_V2})
# The entry types' values, as a FlatEntry holds them.
_TRANSACTION_BEGIN, _TRANSACTION_END = TRANSACTION_BEGIN.value, TRANSACTION_END.value
_ROWDATA = ROWDATA.value
_MAX_TABLE_MAPS = 4096  # distinct TABLE_MAP definitions cached by their bytes
# Entries per group of ``convert_read`` (one more event's may go over): what the binlog
# reader's process sends as one frame.
GROUP_ENTRIES = 1024
# Inner events of a compressed transaction unpacked at once (a rows event is at most
# binlog_row_event_max_size, 8 KB by default).
PAYLOAD_CHUNK = 256
_NO_ENTRIES: tuple[Entry, ...] = ()


@dataclass(slots=True)
class _CachedTable:
    source: TableMapDef
    decoder: RowDecoder


# How to read a rows event under a format description: its event type, rows kind, where its
# extra data starts (after the header and post-header) and whether it has any (v2 events).
_RowsLayout = tuple[EventType, RowsKind, int, bool]


def _rows_layouts(description: events.FormatDescription) -> dict[int, _RowsLayout]:
    """The rows event types by their type byte (plain ints: looked up per event, an enum key
    costs one more comparison), with the post-header lengths ``description`` announces
    (never shorter than the defaults)."""
    return {
        int(code): (
            event_type,
            kind,
            HEADER_SIZE + max(default, description.post_header(code, default)),
            code in _V2_ROWS,
        )
        for code, (event_type, kind, default) in _ROWS_EVENTS.items()
    }


class EventConverter:
    """Stateful: it follows the binlog file name, the format description, the current GTID and
    the table ids."""

    def __init__(
        self,
        history: SchemaHistory,
        time_zone: dt.tzinfo,
        journal_name: str = "",
        values: DecodeOptions | None = None,
        encode_event: EventEncode | None = None,
        *,
        begins: bool = True,
    ) -> None:
        """``values``: how values are spelled (``mq.value_mode``, ``mq.binary_encoding``);
        its time zone is replaced by ``time_zone``. ``encode_event``: writes a rows event's
        rows in the output format from its bytes (``AheadEncoding.encode_event``), tried
        before they are decoded. ``begins``: whether transactions start with a
        TRANSACTIONBEGIN entry (module docstring)."""
        self._history = history
        self._begins = begins
        self._encode_event = encode_event
        # The limit of a compiled encoder, whose rows events the compiled read loop writes.
        self._compiled_limit: int | None = getattr(encode_event, "compiled_limit", None)
        self._time_zone = time_zone
        self._values = values
        self._journal = journal_name
        self._gtid = ""
        self._format = events.FormatDescription("", b"")
        self._rows_layouts = _rows_layouts(self._format)
        self._last_log_pos = 0
        # table id -> decoder of its latest TABLE_MAP, and TABLE_MAP bytes -> decoder.
        self._raw_tables: dict[int, _CachedTable] = {}
        self._table_maps: dict[bytes, _CachedTable] = {}
        # The body of the last TABLE_MAP mapped (table id and definition): the same one again
        # maps its table id to the decoder it already has.
        self._last_table_map = b""

    @property
    def journal_name(self) -> str:
        return self._journal

    def convert_raw(self, raw: RawEvent) -> Iterable[Entry]:
        """The entries of one event (often none). A compressed transaction's come lazily."""
        code = raw.type_code
        rows = self._rows_layouts.get(code)
        if rows is not None:
            return (self._raw_rows_entry(raw, code, rows),)
        if raw.log_pos:
            self._last_log_pos = raw.log_pos
        if code == _TABLE_MAP:
            self._raw_table_map(raw)
            return _NO_ENTRIES
        if code in _TRANSACTION_ENDS:
            xid = str(events.xid(raw.data)) if code == _XID else ""
            return (self._entry(raw, TRANSACTION_END, xid),)
        if code == _MARIADB_GTID:
            *_, seq_no, domain_id, flags = _MARIADB_GTID_EVENT.unpack_from(raw.data)
            self._gtid = f"{domain_id}-{raw.server_id}-{seq_no}"
            if flags & MARIADB_GTID_STANDALONE or not self._begins:
                return _NO_ENTRIES
            return (self._entry(raw, TRANSACTION_BEGIN),)
        if code in events.GTID_EVENTS:
            gtid = decode_gtid_event(code, raw.data[HEADER_SIZE : raw.body_end])
            self._gtid = "" if gtid is None or gtid.anonymous else gtid.text
            return _NO_ENTRIES
        if code == _QUERY:
            return self._query_entries(raw)
        if code == _PAYLOAD:
            return self._payload_entries(raw)
        if code == _ROTATE:
            self._rotate(raw)
            return _NO_ENTRIES
        if code == _FORMAT_DESCRIPTION:
            self._format = events.format_description(raw.data, raw.body_end)
            self._rows_layouts = _rows_layouts(self._format)
            return _NO_ENTRIES
        if code in _HEARTBEATS:
            return (self._heartbeat(raw),)
        return self._other(raw)

    def _other(self, raw: RawEvent) -> Iterable[Entry]:
        """Events that carry nothing for us pass; refused and unknown ones stop the dump."""
        known = events.EVENT_TYPES.get(raw.type_code)
        if known is not None and known.handling is Handling.PASS:
            return _NO_ENTRIES
        raise UnsupportedBinlogEvent(
            raw.type_code,
            events.event_name(raw.type_code),
            f"{self._journal}:{raw.start}",
            known.why if known is not None else "",
        )

    def _payload_entries(self, raw: RawEvent) -> Iterator[Entry]:
        for inner in inner_events(raw):
            yield from self.convert_raw(inner)

    def _rotate(self, raw: RawEvent) -> None:
        _, self._journal = events.rotation(raw.data, raw.body_end)
        if raw.timestamp:
            # A real rotation may follow a restart: table ids restart.
            self._forget_tables()

    def _forget_tables(self) -> None:
        """Drop every decoder: table ids may be reused, and after a DDL the same TABLE_MAP
        bytes may stand for other names (a renamed column of the same type). The compiled
        loop reads these attributes at each call."""
        self._raw_tables.clear()
        self._table_maps.clear()
        self._last_table_map = b""

    def repeats_table_map(self, data: bytes, checksum: bool) -> bool:
        """Whether ``data`` is a TABLE_MAP event identical to the last one mapped (one-row
        events repeat the map of their table before each): it changes nothing, so the parser
        need not frame, follow or convert it."""
        end = len(data) - CHECKSUM_SIZE if checksum else len(data)
        return data[HEADER_SIZE:end] == self._last_table_map

    def _raw_table_map(self, raw: RawEvent) -> None:
        key = raw.data[HEADER_SIZE : raw.body_end]
        cached = self._table_maps.get(key)
        if cached is None:
            table = decode_table_map(
                key,
                self._format.post_header(_TABLE_MAP, 8),
                mariadb=_is_mariadb(self._format.server_version),
            )
            try:
                cached = self._build_decoder(table)
            except SchemaMismatch as exc:
                raise SchemaMismatch(
                    f"{exc} (binlog position {self._journal}:{raw.start})"
                ) from exc
            if len(self._table_maps) >= _MAX_TABLE_MAPS:
                self._table_maps.clear()
            self._table_maps[key] = cached
        self._raw_tables[int.from_bytes(key[:6], "little")] = cached
        self._last_table_map = key

    def _raw_rows_entry(self, raw: RawEvent, code: int, layout: _RowsLayout) -> Entry:
        """A rows event's ROWDATA entry."""
        data, offset, event_type = raw.data, raw.log_pos - raw.event_size, layout[0]
        table, parts, rows = self._rows_event(
            data, raw.body_end, code, layout, offset, raw.timestamp
        )
        header = self._header_at(
            raw.timestamp,
            raw.server_id,
            raw.event_size,
            raw.log_pos,
            table.schema,
            table.table,
            event_type,
        )
        written = rows if parts is None else EncodedAhead(parts[0], parts)
        return Entry(header, ROWDATA, RowChange(event_type, False, "", "", written), "")

    def convert_read(
        self, events: list[bytes], checksum: bool, *, flat: bool
    ) -> Iterator[Sequence[Entry | FlatEntry]]:
        """The entries of one read's events, in groups of about ``GROUP_ENTRIES`` (a
        compressed transaction's made lazily, ``_payload_groups``): the binlog reader's process
        sends a group on while it converts the rest of a read (a read holds up to a megabyte
        of binlog). ``flat``: those ``flat_entries`` makes as it makes them, through the
        compiled loop first where there is one (``flat_read``). A TABLE_MAP already mapped is
        dropped before any object is made for it."""
        compiled_read = self.flat_read if flat and self.reads_compiled else None
        flat_entries, convert, repeats_table_map = (
            self.flat_entries,
            self.convert_raw,
            self.repeats_table_map,
        )
        group: list[Entry | FlatEntry] = []
        at, count = 0, len(events)
        try:
            while at < count:
                if len(group) >= GROUP_ENTRIES:
                    yield group
                    group = []
                if compiled_read is not None:  # the compiled loop; the event it leaves here
                    at = compiled_read(events, at, checksum, group)
                    if at == count or len(group) >= GROUP_ENTRIES:
                        continue
                data = events[at]
                at += 1
                code = data[TYPE_CODE_AT]
                if code == _TABLE_MAP and repeats_table_map(data, checksum):
                    continue
                if flat and code == _PAYLOAD:
                    if group:
                        yield group
                        group = []
                    yield from self._payload_groups(RawEvent(data, checksum))
                    continue
                made = flat_entries(data, checksum) if flat else None
                if made is None:
                    converted = convert(RawEvent(data, checksum))
                    if not isinstance(converted, tuple):  # a compressed transaction's
                        if group:
                            yield group
                            group = []
                        for entry in converted:
                            yield (entry,)
                        continue
                    made = converted
                group += made
        except Exception:
            # An event that cannot be converted: what came before it is handed over first
            # (the transactions it holds are delivered, and the cursor moves past them).
            if group:
                yield group
            raise
        if group:
            yield group

    def _payload_groups(self, raw: RawEvent) -> Iterator[Sequence[Entry | FlatEntry]]:
        """A compressed transaction's entries, made as ``convert_read`` makes a read's (its
        compiled loop included), from its inner events unpacked ``PAYLOAD_CHUNK`` at a time:
        a transaction of a million rows is never unpacked whole."""
        inner = inner_event_bytes(raw)
        while chunk := list(islice(inner, PAYLOAD_CHUNK)):
            yield from self.convert_read(chunk, False, flat=True)

    @property
    def _query_post_header(self) -> int:
        """The QUERY event's post-header length under the current format description (the
        compiled loop reads it too)."""
        return self._format.post_header(_E.QUERY_EVENT, 13)

    @property
    def reads_compiled(self) -> bool:
        """Whether ``flat_read`` has a compiled loop: the compiled module is loaded and rows
        are written by the compiled encoder (``encode_event``'s ``compiled_limit``)."""
        return native.module is not None and self._compiled_limit is not None

    def flat_read(
        self, events: list[bytes], at: int, checksum: bool, out: list[Entry | FlatEntry]
    ) -> int:
        """``flat_entries`` of ``events`` from ``at`` on, appended to ``out``, by the compiled
        loop (``native.flat_events``; only where ``reads_compiled``): it takes GTIDs (MariaDB's,
        MySQL's untagged), BEGINs, XIDs, TABLE_MAPs already mapped and rows events the compiled
        encoder writes, in one
        call, and returns the index of the first event it left (to ``flat_entries`` or
        ``convert_raw``, event by event), or of the next one once ``out`` holds
        ``GROUP_ENTRIES``."""
        compiled, limit = native.module, self._compiled_limit
        assert compiled is not None and limit is not None, "only where reads_compiled"
        return compiled.flat_events(self, events, at, checksum, limit, out, GROUP_ENTRIES)

    def flat_entries(self, data: bytes, checksum: bool) -> tuple[Entry | FlatEntry, ...] | None:
        """What ``convert_raw`` makes of a rows, XID, GTID (MariaDB's, MySQL's untagged) or
        BEGIN event, from its bytes, with the entries as ``bridge.parse.entry_codec`` carries
        them (``FlatEntry``) wherever their rows were written ahead; None for any other event
        (``convert_raw`` converts it). The binlog reader's process meets these once per
        transaction each: the event, header and entry objects ``convert_raw`` and
        ``EntryEncoder`` would make for them are most of what it spends per one-row
        transaction."""
        code = data[TYPE_CODE_AT]
        kind: str | None
        if code == _QUERY:
            return self._flat_begin(data, checksum)
        if code in _MYSQL_GTIDS:
            end = len(data) - CHECKSUM_SIZE if checksum else len(data)
            gtid = decode_gtid_event(code, data[HEADER_SIZE:end])
            self._gtid = "" if gtid is None or gtid.anonymous else gtid.text
            log_pos = HEADER.unpack_from(data)[4]
            if log_pos:
                self._last_log_pos = log_pos
            return _NO_ENTRIES
        if code == _XID:
            timestamp, _, server_id, size, log_pos, _, xid = _XID_EVENT.unpack_from(data)
            kind, transaction_id = _TRANSACTION_END, str(xid)
        elif code == _MARIADB_GTID:
            timestamp, _, server_id, size, log_pos, _, seq_no, domain_id, flags = (
                _MARIADB_GTID_EVENT.unpack_from(data)
            )
            self._gtid = f"{domain_id}-{server_id}-{seq_no}"
            # A standalone GTID (a DDL's) opens no transaction: its statement is the entry.
            begins = self._begins and not flags & MARIADB_GTID_STANDALONE
            kind = _TRANSACTION_BEGIN if begins else None
            transaction_id = ""
        else:
            layout = self._rows_layouts.get(code)
            if layout is None:
                return None
            return self._flat_rows(data, checksum, code, layout)
        if log_pos:
            self._last_log_pos = log_pos
        if kind is None:
            return _NO_ENTRIES
        return (self._flat_marker(timestamp, server_id, size, log_pos, kind, transaction_id),)

    def _flat_marker(  # noqa: PLR0917  (the event's header fields, as unpacked)
        self,
        timestamp: int,
        server_id: int,
        size: int,
        log_pos: int,
        kind: str,
        transaction_id: str,
    ) -> FlatEntry:
        """A TRANSACTIONBEGIN or TRANSACTIONEND entry, flat."""
        return (
            self._journal,
            log_pos - size,
            server_id,
            timestamp * 1000,
            "",
            "",
            None,
            self._gtid,
            size,
            kind,
            transaction_id,
            None,
        )

    def _flat_begin(self, data: bytes, checksum: bool) -> tuple[Entry | FlatEntry, ...] | None:
        """A QUERY event's ``flat_entries``: the BEGIN that opens a MySQL transaction; None for
        any other statement (``convert_raw`` converts it)."""
        end = len(data) - CHECKSUM_SIZE if checksum else len(data)
        if not events.is_begin(data, end, self._query_post_header):
            return None
        timestamp, _, server_id, size, log_pos, _ = HEADER.unpack_from(data)
        if log_pos:
            self._last_log_pos = log_pos
        if not self._begins:
            return _NO_ENTRIES
        return (self._flat_marker(timestamp, server_id, size, log_pos, _TRANSACTION_BEGIN, ""),)

    def _flat_rows(
        self, data: bytes, checksum: bool, code: int, layout: _RowsLayout
    ) -> tuple[Entry | FlatEntry, ...]:
        """``flat_entries`` of a rows event: no header, entry or rows object where
        ``encode_event`` writes its rows."""
        timestamp, _, server_id, size, log_pos, _ = HEADER.unpack_from(data)
        end = len(data) - CHECKSUM_SIZE if checksum else len(data)
        offset, event_type = log_pos - size, layout[0]
        table, parts, rows = self._rows_event(data, end, code, layout, offset, timestamp)
        if parts is None:
            header = self._header_at(
                timestamp, server_id, size, log_pos, table.schema, table.table, event_type
            )
            return (Entry(header, ROWDATA, RowChange(event_type, False, "", "", rows), ""),)
        kind = event_type._value_
        return (
            (
                self._journal,
                offset,
                server_id,
                timestamp * 1000,
                table.schema,
                table.table,
                kind,
                self._gtid,
                size,
                _ROWDATA,
                "",
                (kind, False, "", "", parts),
            ),
        )

    def _rows_event(  # noqa: PLR0917  (the event and its header fields, as unpacked)
        self,
        data: bytes,
        end: int,
        code: int,
        layout: _RowsLayout,
        offset: int,
        timestamp: int,
    ) -> tuple[TableMeta, tuple[Any, ...] | None, tuple[RowData, ...]]:
        """A rows event's table, and its rows: the parts ``encode_event`` writes from the
        event's bytes where it does (and no rows), else None and the rows decoded. Every row
        change of the source passes here: the pieces are inlined."""
        table_id = int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 6], "little")
        cached = self._raw_tables.get(table_id)
        if cached is None:
            raise SchemaMismatch(
                f"a {events.event_name(code)} for table id {table_id} without its TABLE_MAP "
                f"at {self._journal}:{offset}: the dump started inside a transaction; "
                "start from a transaction boundary (clear the cursor or use a GTID start)"
            )
        event_type, kind, pos, v2 = layout
        if v2:
            extra = int.from_bytes(data[HEADER_SIZE + 8 : HEADER_SIZE + 10], "little")
            pos += max(0, extra - 2)
        columns, pos = read_packed_int(data, pos, end)
        decoder = cached.decoder
        table = decoder.table
        body = data[pos:end]
        try:
            before, after, at = decoder.images(kind, body, columns)
            encode = self._encode_event
            if encode is not None:
                if kind == "partial_update":  # JSON diffs, which only Python applies
                    body = decoder.update_body(body, at, before, after)
                    kind = "update"
                parts = encode(
                    table.schema,
                    table.table,
                    event_type,
                    timestamp * 1000,
                    self._gtid,
                    before,
                    after,
                    body,
                    at,
                )
                if parts is not None:
                    return table, parts, ()
            return table, None, decoder.decode_images(kind, body, before, after, at)
        except SchemaMismatch as exc:
            raise SchemaMismatch(f"{exc} (binlog position {self._journal}:{offset})") from exc

    # -------------------------------------------------------------------- pieces

    def _header(
        self,
        raw: RawEvent,
        schema_name: str = "",
        table_name: str = "",
        event_type: EventType | None = None,
    ) -> Header:
        return self._header_at(
            raw.timestamp,
            raw.server_id,
            raw.event_size,
            raw.log_pos,
            schema_name,
            table_name,
            event_type,
        )

    def _header_at(  # noqa: PLR0917  (the event's header fields, as unpacked)
        self,
        timestamp: int,
        server_id: int,
        size: int,
        log_pos: int,
        schema_name: str,
        table_name: str,
        event_type: EventType | None,
    ) -> Header:
        """The header of an entry of the event with these header fields: where it starts in
        the current file, with the current GTID."""
        return Header(
            self._journal,
            log_pos - size,
            server_id,
            timestamp * 1000,
            schema_name,
            table_name,
            event_type,
            self._gtid,
            size,
        )

    def _entry(self, raw: RawEvent, entry_type: EntryType, transaction_id: str = "") -> Entry:
        return Entry(self._header(raw), entry_type, None, transaction_id)

    def _heartbeat(self, raw: RawEvent) -> Entry:
        """A HEARTBEAT at the position the source is at: the event's own ``log_pos`` (v1), or
        the last one seen (v2, whose position is inside its body and always equals it)."""
        header = Header(
            logfile_name=self._journal,
            logfile_offset=raw.log_pos or self._last_log_pos,
            server_id=raw.server_id,
            execute_time=raw.timestamp * 1000,
            gtid=self._gtid,
        )
        return Entry(header, EntryType.HEARTBEAT)

    def _query_entries(self, raw: RawEvent) -> tuple[Entry, ...]:
        query = events.query(raw.data, raw.body_end, self._query_post_header)
        sql, schema = query.sql, query.schema
        control = is_transaction_control(sql)
        if control == "BEGIN":
            return (self._entry(raw, EntryType.TRANSACTIONBEGIN),) if self._begins else ()
        if control == "COMMIT":
            return (self._entry(raw, EntryType.TRANSACTIONEND),)
        if is_statement_dml(sql):
            log.warning(
                "statement-based change at %s:%s in schema %r passed on as a QUERY entry: "
                "the session used binlog_format=STATEMENT; set it to ROW",
                self._journal,
                raw.start,
                schema,
            )
        else:
            self._history.apply(sql, schema, f"{self._journal}:{raw.start}")
            self._forget_tables()
        ddl = classify_ddl(sql, schema)
        header = self._header(
            raw, schema_name=ddl.schema, table_name=ddl.table, event_type=ddl.event_type
        )
        change = RowChange(ddl.event_type, is_ddl=True, sql=sql, ddl_schema_name=schema)
        return (Entry(header, EntryType.ROWDATA, row_change=change),)

    def _build_decoder(self, table: TableMapDef) -> _CachedTable:
        meta = build_table_meta(
            table.schema,
            table.table,
            table.columns,
            table.null_bitmask,
            self._history.definition(table.schema, table.table),
            display_widths=prints_display_widths(self._format.server_version),
            strict=self._history.selects(table.schema, table.table),
        )
        return _CachedTable(table, RowDecoder(meta, self._time_zone, self._values))


def _is_mariadb(server_version: str) -> bool:
    """Whether a MariaDB server wrote the binlog (its TABLE_MAP counts GEOMETRY columns among
    the character columns whose charsets it lists)."""
    return "mariadb" in server_version.lower()


def prints_display_widths(server_version: str) -> bool:
    """Whether the server prints integer display widths (``int(11)``): MariaDB and MySQL before
    8.0.19 do, MySQL from 8.0.19 on does not."""
    if _is_mariadb(server_version):
        return True
    numbers = server_version.split("-", 1)[0].split(".")
    try:
        return tuple(int(n) for n in numbers[:3]) < (8, 0, 19)
    except ValueError:
        return True
