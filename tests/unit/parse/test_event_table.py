"""The converter's event table: decoded, passed-by and refused types; unknown types stop the
dump with their name and position; compressed transactions unpack lazily to the same entries
as the plain events they hold."""

from __future__ import annotations

import datetime as dt
import inspect
import marshal
import struct
from typing import Any

import pymysql
import pytest
import zstandard

from bridge.entry import EncodedAhead, EntryType, EventEncode, EventType
from bridge.mq.rendering import EventRenderer
from bridge.parse.binlog import events
from bridge.parse.binlog.codes import EventCode as E
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.dump import PYMYSQL_PRIVATE_NAMES
from bridge.parse.binlog.events import EVENT_TYPES, HEADER, Handling
from bridge.parse.binlog.framing import RawEvent
from bridge.parse.binlog.payload import COMPRESSION_NONE, COMPRESSION_ZSTD, inner_events
from bridge.parse.convert import GROUP_ENTRIES, PAYLOAD_CHUNK, EventConverter
from bridge.parse.entry_codec import FLAT_ENTRY_TYPE, EntryEncoder
from bridge.parse.exceptions import CorruptPayload, SchemaMismatch, UnsupportedBinlogEvent
from bridge.schema.definitions import Schemas
from bridge.schema.history import SchemaHistory
from tests.native_paths import compiled_module

from .rowbytes import packed_int
from .test_table_map_event import COLUMN_NAME, Body, strings


def _converter(encode_event: EventEncode | None = None, *, begins: bool = True) -> EventConverter:
    """A converter whose history holds no table: the TABLE_MAPs here carry the names."""
    return EventConverter(
        SchemaHistory(Schemas()),
        dt.UTC,
        "mysql-bin.000007",
        encode_event=encode_event,
        begins=begins,
    )


def _event(code: int, body: bytes, log_pos: int, checksum: bool = False) -> bytes:
    size = events.HEADER_SIZE + len(body) + (4 if checksum else 0)
    data = HEADER.pack(1_700_000_000, code, 1, size, log_pos, 0) + body
    return data + (b"\0\0\0\0" if checksum else b"")


def _raw(code: int, body: bytes, log_pos: int = 1000) -> RawEvent:
    return RawEvent(_event(code, body, log_pos), checksum=False)


def _query(sql: str, schema: str = "") -> bytes:
    post = struct.pack("<IIBHH", 1, 0, len(schema), 0, 0)
    return post + schema.encode() + b"\0" + sql.encode()


def _xid(xid: int) -> bytes:
    return struct.pack("<Q", xid)


def test_an_unknown_event_type_stops_with_its_name_and_position() -> None:
    converter = _converter()
    with pytest.raises(UnsupportedBinlogEvent) as caught:
        converter.convert_raw(_raw(99, b"\x01\x02", log_pos=4321))
    message = str(caught.value)
    assert "unknown event type 99" in message
    assert "mysql-bin.000007:4300" in message
    assert "\n" not in message
    assert caught.value.code == 99


@pytest.mark.parametrize(
    "code", sorted(c for c, t in EVENT_TYPES.items() if t.handling is Handling.REFUSE)
)
def test_refused_types_stop_with_the_reason(code: int) -> None:
    with pytest.raises(UnsupportedBinlogEvent) as caught:
        _converter().convert_raw(_raw(code, b"\0" * 8))
    assert EVENT_TYPES[code].name in str(caught.value)
    assert EVENT_TYPES[code].why in str(caught.value)


@pytest.mark.parametrize(
    "code", sorted(c for c, t in EVENT_TYPES.items() if t.handling is Handling.PASS)
)
def test_passed_types_give_nothing_and_say_why(code: int) -> None:
    assert list(_converter().convert_raw(_raw(code, b"\0" * 8))) == []
    assert EVENT_TYPES[code].why


def test_every_decoded_type_is_handled_by_the_converter() -> None:
    """A type marked DECODE that the converter forgot would fall to the refusal path."""
    decoded = {c for c, t in EVENT_TYPES.items() if t.handling is Handling.DECODE}
    handled_elsewhere = {  # TABLE_MAP and rows: own tests
        E.TABLE_MAP_EVENT,
        E.WRITE_ROWS_EVENT_V1,
        E.UPDATE_ROWS_EVENT_V1,
        E.DELETE_ROWS_EVENT_V1,
        E.WRITE_ROWS_EVENT,
        E.UPDATE_ROWS_EVENT,
        E.DELETE_ROWS_EVENT,
        E.PARTIAL_UPDATE_ROWS_EVENT,
    }
    assert decoded - handled_elsewhere == {
        E.QUERY_EVENT,
        E.ROTATE_EVENT,
        E.FORMAT_DESCRIPTION_EVENT,
        E.XID_EVENT,
        E.HEARTBEAT_LOG_EVENT,
        E.GTID_LOG_EVENT,
        E.ANONYMOUS_GTID_LOG_EVENT,
        E.XA_PREPARE_LOG_EVENT,
        E.TRANSACTION_PAYLOAD_EVENT,
        E.HEARTBEAT_LOG_EVENT_V2,
        E.GTID_TAGGED_LOG_EVENT,
        E.MARIADB_GTID_EVENT,
    }


def _payload(
    inner: list[bytes], compression: int = COMPRESSION_ZSTD, declared: int | None = None
) -> bytes:
    """A TRANSACTION_PAYLOAD body; ``declared`` overrides the compression the header names."""
    plain = b"".join(inner)
    data = zstandard.ZstdCompressor().compress(plain) if compression == COMPRESSION_ZSTD else plain

    def field(kind: int, value: int) -> bytes:
        encoded = packed_int(value)
        return bytes([kind, len(encoded)]) + encoded

    named = compression if declared is None else declared
    header = field(2, named) + field(3, len(plain)) + field(1, len(data)) + b"\0"
    return header + data


def _transaction(count: int) -> list[bytes]:
    """BEGIN, ``count`` DDL-free QUERY statements standing in for rows, COMMIT by XID."""
    body = [_event(E.QUERY_EVENT, _query("BEGIN"), 0)]
    body += [
        _event(E.QUERY_EVENT, _query(f"CREATE TABLE t{i} (a INT)", "db"), 0) for i in range(count)
    ]
    return [*body, _event(E.XID_EVENT, _xid(77), 0)]


@pytest.mark.parametrize("compression", [COMPRESSION_ZSTD, COMPRESSION_NONE])
def test_a_compressed_transaction_gives_the_entries_of_its_events_at_the_payload_position(
    compression: int,
) -> None:
    raw = _raw(E.TRANSACTION_PAYLOAD_EVENT, _payload(_transaction(3), compression), log_pos=9000)
    entries = list(_converter().convert_raw(raw))
    kinds = [e.entry_type for e in entries]
    assert kinds == [EntryType.TRANSACTIONBEGIN] + [EntryType.ROWDATA] * 3 + [
        EntryType.TRANSACTIONEND
    ]
    assert {e.header.logfile_offset for e in entries} == {raw.start}
    assert {e.header.event_length for e in entries} == {raw.event_size}
    assert entries[-1].transaction_id == "77"
    assert [e.header.table_name for e in entries[1:4]] == ["t0", "t1", "t2"]


def test_a_large_payload_unpacks_one_event_at_a_time() -> None:
    """The iterator holds the compressed bytes and one inner event, not the whole plain text;
    each inner event is placed where the payload is (its header says so too)."""
    inner = _transaction(20_000)
    raw = _raw(E.TRANSACTION_PAYLOAD_EVENT, _payload(inner))
    unpacked = inner_events(raw)
    first = next(unpacked)
    assert first.data[:9] == inner[0][:9] and first.data[17:] == inner[0][17:]
    assert (first.event_size, first.log_pos) == (raw.event_size, raw.log_pos)
    assert sum(1 for _ in unpacked) == len(inner) - 1


@pytest.mark.parametrize("cut", [1, 7, 30])
def test_a_truncated_payload_is_refused_not_skipped(cut: int) -> None:
    body = _payload(_transaction(2))
    with pytest.raises(CorruptPayload):
        list(_converter().convert_raw(_raw(E.TRANSACTION_PAYLOAD_EVENT, body[:-cut])))


def test_an_unknown_compression_is_refused() -> None:
    body = _payload(_transaction(1), COMPRESSION_NONE, declared=7)
    with pytest.raises(CorruptPayload, match="compression type 7"):
        list(inner_events(_raw(E.TRANSACTION_PAYLOAD_EVENT, body)))


def test_gtid_and_xa_prepare_frame_transactions() -> None:
    converter = _converter()
    mariadb_gtid = struct.pack("<QIB", 42, 0, 0) + b"\0" * 6
    begin = list(converter.convert_raw(_raw(E.MARIADB_GTID_EVENT, mariadb_gtid)))
    end = list(converter.convert_raw(_raw(E.XA_PREPARE_LOG_EVENT, b"\0" * 16)))
    assert [e.entry_type for e in begin + end] == [
        EntryType.TRANSACTIONBEGIN,
        EntryType.TRANSACTIONEND,
    ]
    assert begin[0].header.gtid == "0-1-42"


def test_pymysql_still_has_the_internals_the_dump_uses() -> None:
    """Fails by name when a PyMySQL upgrade renames what ``bridge.parse.binlog.dump`` and
    ``EventReader`` rely on (PyMySQL has no public API for a replication command)."""
    source = inspect.getsource(pymysql.connections.Connection)
    missing = [name for name in PYMYSQL_PRIVATE_NAMES if f"self.{name}" not in source]
    assert missing == [], (
        f"PyMySQL {pymysql.__version__} lacks {missing}: adapt bridge.parse.binlog.dump"
    )


def test_the_parser_no_longer_imports_mysql_replication() -> None:
    import pathlib

    parse = pathlib.Path(__file__).parents[3] / "bridge" / "parse"
    users = [p.name for p in parse.glob("*.py") if "pymysqlreplication" in p.read_text()]
    assert users == []


def _one_bigint_table() -> list[RawEvent]:
    """A TABLE_MAP of ``shop.orders (id BIGINT)`` and a WRITE_ROWS (v1) of rows 1 and 2."""
    table_map = bytes(Body([(T.LONGLONG, b"")], [(COLUMN_NAME, strings(b"id"))]))
    rows = (0x0000_1234_5678).to_bytes(6, "little") + b"\1\0" + packed_int(1) + b"\x01"
    rows += b"\0" + struct.pack("<q", 1) + b"\0" + struct.pack("<q", 2)
    return [_raw(E.TABLE_MAP_EVENT, table_map), _raw(E.WRITE_ROWS_EVENT_V1, rows, log_pos=2000)]


def _rows_entries(encode_event: EventEncode | None, events: list[RawEvent]) -> list[Any]:
    converter = _converter(encode_event)
    return [entry for raw in events for entry in converter.convert_raw(raw)]


def test_a_rows_event_is_offered_undecoded_and_carries_what_encode_event_wrote() -> None:
    offered: list[tuple[Any, ...]] = []
    written = (2, b"parts")

    def encode_event(*fields: Any) -> tuple[Any, ...]:
        offered.append(fields)
        return written

    (entry,) = _rows_entries(encode_event, _one_bigint_table())
    assert entry.row_change.row_datas == EncodedAhead(2, written)
    ((schema, table, event_type, execute_time, gtid, before, after, body, pos),) = offered
    h = entry.header
    assert (schema, table, event_type, execute_time, gtid) == (
        h.schema_name,
        h.table_name,
        h.event_type,
        h.execute_time,
        h.gtid,
    )
    assert table == "orders" and event_type is EventType.INSERT
    assert (before.names, after is before, pos, len(body)) == (("id",), True, 1, 19)


def _declines(*_fields: Any) -> None:
    return None


def test_a_rows_event_encode_event_declines_is_decoded_as_without_it() -> None:
    events_ = _one_bigint_table()
    (declined,) = _rows_entries(_declines, events_)
    (plain,) = _rows_entries(None, events_)
    assert declined == plain
    assert [row.after[0].value for row in declined.row_change.row_datas] == ["1", "2"]


def test_a_rows_event_that_does_not_fit_its_table_fails_with_its_position_either_way() -> None:
    table_map, rows = _one_bigint_table()
    short = _raw(E.WRITE_ROWS_EVENT_V1, rows.data[events.HEADER_SIZE : -3], log_pos=2000)
    for encode_event in (None, _declines):
        with pytest.raises(SchemaMismatch, match=r"mysql-bin\.000007:\d+"):
            _rows_entries(encode_event, [table_map, short])


@pytest.mark.parametrize("declined", [False, True], ids=["written", "declined"])
def test_a_partial_update_is_offered_to_encode_event_as_the_update_it_logs(declined: bool) -> None:
    # Its value options are dropped (and JSON diffs applied) before the encoder sees it; an
    # encoder that declines leaves it to the Python path, which reads the same row.
    table_map, _ = _one_bigint_table()
    head = (0x0000_1234_5678).to_bytes(6, "little") + b"\0\0" + struct.pack("<H", 2)
    head += packed_int(1) + b"\x01\x01"  # one column, in both images
    before, after = b"\0" + struct.pack("<q", 1), b"\0" + struct.pack("<q", 7)
    offered: list[tuple[Any, ...]] = []

    def encode_event(*fields: Any) -> tuple[Any, ...] | None:
        offered.append(fields)
        return None if declined else (1, b"written")

    partial = _raw(E.PARTIAL_UPDATE_ROWS_EVENT, head + before + packed_int(0) + after, 2000)
    (entry,) = _rows_entries(encode_event, [table_map, partial])
    ((_, _, event_type, _, _, _, _, body, at),) = offered
    assert event_type is EventType.UPDATE
    assert (body[:at], body[at:]) == (b"\x01\x01", before + after)
    if declined:
        ((row),) = entry.row_change.row_datas
        assert (row.before[0].value, row.after[0].value) == ("1", "7")
    else:
        assert entry.row_change.row_datas == EncodedAhead(rows=1, parts=(1, b"written"))


def _without_the_loop(renderer: EventRenderer) -> EventEncode:
    """``renderer``'s records without its ``compiled_limit``: a converter given this has no
    compiled loop, so it converts event by event."""

    def encode(*fields: Any) -> tuple[Any, ...] | None:
        return renderer(*fields)

    return encode


def _rows_v2(v1: RawEvent) -> bytes:
    """The body of ``v1`` (a v1 rows event) as a v2 event's: its extra data (none) after the
    flags."""
    body = v1.data[events.HEADER_SIZE :]
    return body[:8] + struct.pack("<H", 2) + body[8:]


def _stream(checksum: bool) -> list[bytes]:
    """A MariaDB transaction (GTID, TABLE_MAP, v1 and v2 rows, XID), a standalone GTID, with a
    heartbeat v2 (which takes the last event's log_pos) after each."""
    table_map, rows = _one_bigint_table()
    beat = _event(E.HEARTBEAT_LOG_EVENT_V2, b"", 0, checksum)
    return [
        _event(E.MARIADB_GTID_EVENT, struct.pack("<QIB", 42, 3, 0) + b"\0" * 6, 100, checksum),
        beat,
        _event(E.TABLE_MAP_EVENT, table_map.data[events.HEADER_SIZE :], 150, checksum),
        _event(E.WRITE_ROWS_EVENT_V1, rows.data[events.HEADER_SIZE :], 200, checksum),
        beat,
        _event(E.WRITE_ROWS_EVENT, _rows_v2(rows), 250, checksum),
        _event(E.XID_EVENT, _xid(2**63 + 5), 300, checksum),
        beat,
        _event(E.MARIADB_GTID_EVENT, struct.pack("<QIB", 43, 3, 1) + b"\0" * 6, 400, checksum),
        beat,
    ]


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("written", [True, False], ids=["rows written ahead", "rows decoded"])
def test_flat_entries_are_what_convert_raw_and_the_encoder_make(
    checksum: bool, written: bool
) -> None:
    # The binlog reader's process converts rows, XID and MariaDB GTID events with
    # flat_entries: the same data must cross, and the converter must be left in the same
    # state (the heartbeats' positions are its last log_pos).
    def encode_event(*fields: Any) -> tuple[Any, ...] | None:
        table, pos = fields[1], fields[8]
        return (2, table.encode(), pos) if written else None

    flat, plain = _converter(encode_event), _converter(encode_event)
    made_flat: list[Any] = []
    made: list[Any] = []
    for data in _stream(checksum):
        converted = flat.flat_entries(data, checksum)
        made_flat += flat.convert_raw(RawEvent(data, checksum)) if converted is None else converted
        made += plain.convert_raw(RawEvent(data, checksum))
    # (the values: marshal's bytes differ where equal strings are or are not one object)
    assert marshal.loads(EntryEncoder().encode(made_flat)) == marshal.loads(
        EntryEncoder().encode(made)
    )
    assert [type(e) is tuple for e in made_flat] == [
        *(True, False),  # BEGIN, heartbeat
        *(written, False),  # v1 rows, heartbeat
        *(written, True, False),  # v2 rows, END, heartbeat
        False,  # the standalone GTID makes no entry; heartbeat
    ]
    # a rows event leaves the last log_pos where the TABLE_MAP before it put it
    beats = [e.header.logfile_offset for e in made if e.entry_type is EntryType.HEARTBEAT]
    assert beats == [100, 150, 300, 400]
    state = ("_journal", "_gtid", "_last_log_pos", "_last_table_map")
    assert [getattr(flat, name) for name in state] == [getattr(plain, name) for name in state]


def _one_bigint_changes(checksum: bool) -> list[bytes]:
    """An UPDATE (1 -> 7) and a DELETE (7) of ``_one_bigint_table``'s row, v1 events."""
    head = (0x0000_1234_5678).to_bytes(6, "little") + b"\1\0" + packed_int(1)
    image = b"\0" + struct.pack("<q", 1), b"\0" + struct.pack("<q", 7)
    update = head + b"\x01\x01" + image[0] + image[1]
    delete = head + b"\x01" + image[1]
    return [
        _event(E.UPDATE_ROWS_EVENT_V1, update, 500, checksum),
        _event(E.DELETE_ROWS_EVENT_V1, delete, 550, checksum),
    ]


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("limit", [1 << 20, 60], ids=["written", "over the limit: decoded"])
def test_a_read_through_the_compiled_loop_is_what_flat_entries_make(
    checksum: bool, limit: int
) -> None:
    # The compiled loop (EventConverter.flat_read) takes GTIDs, XIDs, repeated TABLE_MAPs and
    # the rows events it writes, and leaves every other event to the Python path: one read
    # through it gives the data and converter state that flat_entries, event by event, give.
    compiled_module()
    transaction = _stream(checksum)
    read = [*transaction, *transaction[:2], *_one_bigint_changes(checksum), *transaction[2:]]
    looped = _converter(EventRenderer(limit))
    renderer = EventRenderer(limit)

    plain = _converter(_without_the_loop(renderer))
    assert looped.reads_compiled and not plain.reads_compiled
    python_path = _PythonPath(looped)
    made_looped, made = _both_ways(looped, plain, read, checksum)
    assert [type(e) is tuple for e in made_looped] == [type(e) is tuple for e in made]
    state = ("_journal", "_gtid", "_last_log_pos", "_last_table_map")
    assert [getattr(looped, name) for name in state] == [getattr(plain, name) for name in state]
    # Left to Python: the 8 heartbeats, the new TABLE_MAP, and the first rows event after
    # it (the Python path works out its plan), or all 6 rows events when over the limit.
    assert python_path.events == 8 + 1 + (1 if limit > 60 else 6)


class _PythonPath:
    """Counts the events a converter's compiled loop leaves to ``flat_entries``."""

    def __init__(self, converter: EventConverter) -> None:
        self.events = 0
        self._converter = converter
        converter.flat_entries = self._counted  # type: ignore[method-assign]

    def _counted(self, data: bytes, checksum: bool) -> Any:
        self.events += 1
        return EventConverter.flat_entries(self._converter, data, checksum)


def _both_ways(
    looped: EventConverter, plain: EventConverter, read: list[bytes], checksum: bool
) -> tuple[list[Any], list[Any]]:
    """``read`` converted by ``looped`` (through its compiled loop) and by ``plain`` (event by
    event), checked to give the same data."""
    made_looped = [e for group in looped.convert_read(read, checksum, flat=True) for e in group]
    made = [e for group in plain.convert_read(read, checksum, flat=True) for e in group]
    assert marshal.loads(EntryEncoder().encode(made_looped)) == marshal.loads(
        EntryEncoder().encode(made)
    )
    return made_looped, made


@pytest.mark.parametrize("loop", [True, False], ids=["compiled loop", "event by event"])
def test_a_read_comes_in_groups_of_group_entries(loop: bool) -> None:
    # The binlog reader's process sends a group as a frame while it converts the rest of the
    # read: a read of 300 transactions (2,100 entries) is not held whole.
    compiled_module()
    renderer = EventRenderer(1 << 20)

    converter = _converter(renderer if loop else _without_the_loop(renderer))
    assert converter.reads_compiled is loop
    groups = list(converter.convert_read(_stream(False)[:8] * 300, False, flat=True))
    assert [len(group) for group in groups] == [GROUP_ENTRIES, GROUP_ENTRIES, 2100 - 2048]


def _mysql_transaction() -> list[bytes]:
    """A MySQL-style transaction: a QUERY BEGIN (MySQL's GTID event is no entry) and an XID."""
    return [_event(E.QUERY_EVENT, _query("BEGIN"), 600), _event(E.XID_EVENT, _xid(9), 650)]


@pytest.mark.parametrize("path", ["compiled loop", "event by event", "convert_raw"])
def test_without_begins_a_read_gives_every_entry_but_the_begins(path: str) -> None:
    # A destination whose output has no use for TRANSACTIONBEGIN (FlatMessage) has its
    # binlog reader leave them out, on each path through the converter: the rest is the same.
    compiled_module()
    renderer = EventRenderer(1 << 20)

    read = [*_stream(False), *_mysql_transaction()]

    def made(begins: bool) -> list[Any]:
        converter = _converter(
            renderer if path == "compiled loop" else _without_the_loop(renderer), begins=begins
        )
        assert converter.reads_compiled is (path == "compiled loop")
        if path == "convert_raw":
            return [e for data in read for e in converter.convert_raw(RawEvent(data, False))]
        return [e for group in converter.convert_read(read, False, flat=True) for e in group]

    with_begins, without = made(True), made(False)
    kinds = [_kind(e) for e in with_begins]
    assert kinds.count("TRANSACTIONBEGIN") == 2
    kept = [e for e, kind in zip(with_begins, kinds, strict=True) if kind != "TRANSACTIONBEGIN"]
    assert marshal.loads(EntryEncoder().encode(without)) == marshal.loads(
        EntryEncoder().encode(kept)
    )


def _kind(entry: Any) -> str:
    """A flat or plain entry's type value."""
    return str(entry[FLAT_ENTRY_TYPE] if isinstance(entry, tuple) else entry.entry_type.value)


def _two_tables(checksum: bool) -> list[bytes]:
    """A multi-table statement's events: the TABLE_MAPs of ``shop.orders`` and ``shop.audit``
    (two columns, another table id), then rows of one, the other, and the first again."""
    orders = bytes(Body([(T.LONGLONG, b"")], [(COLUMN_NAME, strings(b"id"))]))
    audit_id = 0x0000_0000_0042
    audit = bytes(
        Body(
            [(T.LONGLONG, b""), (T.LONG, b"")],
            [(COLUMN_NAME, strings(b"id", b"n"))],
            table_id=audit_id,
            table=b"audit",
        )
    )
    head = (0x0000_1234_5678).to_bytes(6, "little") + b"\1\0" + packed_int(1) + b"\x01"
    orders_rows = head + b"\0" + struct.pack("<q", 3)
    head = audit_id.to_bytes(6, "little") + b"\1\0" + packed_int(2) + b"\x03"
    audit_rows = head + b"\0" + struct.pack("<qi", 4, 5)
    return [
        _event(E.TABLE_MAP_EVENT, orders, 100, checksum),
        _event(E.TABLE_MAP_EVENT, audit, 150, checksum),
        _event(E.WRITE_ROWS_EVENT_V1, orders_rows, 200, checksum),
        _event(E.WRITE_ROWS_EVENT_V1, audit_rows, 250, checksum),
        _event(E.DELETE_ROWS_EVENT_V1, orders_rows, 300, checksum),
        _event(E.XID_EVENT, _xid(7), 330, checksum),
    ]


@pytest.mark.parametrize("checksum", [False, True])
def test_the_compiled_loop_follows_the_table_of_each_rows_event(checksum: bool) -> None:
    # The loop keeps the last table and rows layout it looked up: events of two tables in
    # turn still each get their own table's names and plan. Read twice: the second time
    # the plans are known and the loop takes every rows event, in one call.
    compiled_module()
    renderer = EventRenderer(1 << 20)

    read = _two_tables(checksum)
    looped, plain = _converter(renderer), _converter(_without_the_loop(renderer))
    _both_ways(looped, plain, read, checksum)
    python_path = _PythonPath(looped)
    made_looped, _ = _both_ways(looped, plain, read, checksum)
    assert python_path.events == 2  # the two TABLE_MAPs (each new to the loop); the rest looped
    tables = [e[5] for e in made_looped if isinstance(e, tuple) and e[11] is not None]
    assert tables == ["orders", "audit", "orders"]


def _mysql_gtid(gno: int, *, tail: bool = True, anonymous: bool = False) -> bytes:
    """A GTID_LOG_EVENT body (MySQL 8/9): flags, uuid, gno, then (``tail``) every optional
    group: logical clock, both commit timestamps, transaction length, both server versions,
    commit group ticket."""
    uuid = bytes(range(0xA0, 0xB0))
    body = b"\x01" + (b"\0" * 16 if anonymous else uuid) + struct.pack("<q", gno)
    if tail:
        body += b"\x02" + struct.pack("<qq", 5, 6)
        body += (1_700_000_000_000_001 | 1 << 55).to_bytes(7, "little")
        body += (1_700_000_000_000_000).to_bytes(7, "little")
        body += b"\xfc" + struct.pack("<H", 300)
        body += struct.pack("<II", 90_100 | 1 << 31, 80_400) + struct.pack("<Q", 7)
    return body


def _mysql_stream(checksum: bool) -> list[bytes]:
    """MySQL transactions: GTID, BEGIN, TABLE_MAP, rows, XID; the same with an anonymous GTID
    and a GTID without its optional groups; a COMMIT statement; a heartbeat after each."""
    table_map, rows = _one_bigint_table()
    beat = _event(E.HEARTBEAT_LOG_EVENT_V2, b"", 0, checksum)

    def transaction(gtid: bytes, code: int, at: int) -> list[bytes]:
        return [
            _event(code, gtid, at, checksum),
            _event(E.QUERY_EVENT, _query("BEGIN", "shop"), at + 10, checksum),
            beat,
            _event(E.TABLE_MAP_EVENT, table_map.data[events.HEADER_SIZE :], at + 20, checksum),
            _event(E.WRITE_ROWS_EVENT, _rows_v2(rows), at + 30, checksum),
            _event(E.XID_EVENT, _xid(at), at + 40, checksum),
            beat,
        ]

    return [
        *transaction(_mysql_gtid(42), E.GTID_LOG_EVENT, 100),
        *transaction(_mysql_gtid(0, anonymous=True), E.ANONYMOUS_GTID_LOG_EVENT, 200),
        *transaction(_mysql_gtid(43, tail=False), E.GTID_LOG_EVENT, 300),
        _event(E.QUERY_EVENT, _query("COMMIT"), 400, checksum),
        beat,
    ]


@pytest.mark.parametrize("checksum", [False, True])
def test_mysql_gtids_and_begins_are_taken_by_every_path_alike(checksum: bool) -> None:
    # MySQL frames a transaction with a GTID event and a BEGIN statement: flat_entries and the
    # compiled loop take both (and leave other statements to convert_raw), giving the entries
    # and GTIDs convert_raw gives.
    compiled_module()
    renderer = EventRenderer(1 << 20)

    read = _mysql_stream(checksum)
    raw = _converter(renderer)
    made = [e for data in read for e in raw.convert_raw(RawEvent(data, checksum))]
    looped, plain = _converter(renderer), _converter(_without_the_loop(renderer))
    python_path = _PythonPath(looped)
    _, made_flat = _both_ways(looped, plain, read, checksum)
    assert marshal.loads(EntryEncoder().encode(made_flat)) == marshal.loads(
        EntryEncoder().encode(made)
    )
    gtids = [e.header.gtid for e in made if e.entry_type is EntryType.TRANSACTIONBEGIN]
    uuid = "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"
    assert gtids == [f"{uuid}:42", "", f"{uuid}:43"]
    state = ("_journal", "_gtid", "_last_log_pos", "_last_table_map")
    for converter in (looped, plain):
        assert [getattr(converter, n) for n in state] == [getattr(raw, n) for n in state]
    # Left to Python: the 7 heartbeats, the first TABLE_MAP and rows event, the COMMIT.
    assert python_path.events == 7 + 2 + 1


def _compressed_stream(checksum: bool, rows_events: int) -> list[bytes]:
    """A MySQL compressed transaction (GTID, then a TRANSACTION_PAYLOAD of BEGIN, TABLE_MAP,
    ``rows_events`` rows events and XID, inner events without checksums or positions), and
    a plain transaction after it."""
    table_map, rows = _one_bigint_table()
    inner = [
        _event(E.QUERY_EVENT, _query("BEGIN", "shop"), 0),
        _event(E.TABLE_MAP_EVENT, table_map.data[events.HEADER_SIZE :], 0),
        *[_event(E.WRITE_ROWS_EVENT, _rows_v2(rows), 0)] * rows_events,
        _event(E.XID_EVENT, _xid(9), 0),
    ]
    return [
        _event(E.GTID_LOG_EVENT, _mysql_gtid(41), 100, checksum),
        _event(E.TRANSACTION_PAYLOAD_EVENT, _payload(inner), 5000, checksum),
        *_mysql_stream(checksum)[:7],
    ]


@pytest.mark.parametrize("checksum", [False, True])
def test_a_compressed_transaction_is_taken_by_every_path_alike(checksum: bool) -> None:
    # Inner events go through the compiled loop as a read's do, a chunk at a time, and give
    # the entries (at the payload's position) convert_raw gives.
    compiled_module()
    renderer = EventRenderer(1 << 20)

    rows_events = PAYLOAD_CHUNK + 10  # the payload unpacks in two chunks
    read = _compressed_stream(checksum, rows_events)
    raw = _converter(renderer)
    made = [e for data in read for e in raw.convert_raw(RawEvent(data, checksum))]
    looped, plain = _converter(renderer), _converter(_without_the_loop(renderer))
    python_path = _PythonPath(looped)
    converted_raw: list[int] = []

    def convert_raw(event: RawEvent) -> Any:
        converted_raw.append(event.type_code)
        return EventConverter.convert_raw(looped, event)

    looped.convert_raw = convert_raw  # type: ignore[method-assign]
    _, made_flat = _both_ways(looped, plain, read, checksum)
    assert marshal.loads(EntryEncoder().encode(made_flat)) == marshal.loads(
        EntryEncoder().encode(made)
    )
    payload_start = 5000 - len(read[1])
    rows = [e for e in made if e.entry_type is EntryType.ROWDATA]
    assert len(rows) == rows_events + 1
    assert {e.header.logfile_offset for e in rows[:-1]} == {payload_start}
    # The payload never reached convert_raw as a whole, and the compiled loop took its rows
    # events: left to Python are a few where a plan is worked out, and the heartbeat.
    assert E.TRANSACTION_PAYLOAD_EVENT not in converted_raw
    assert python_path.events <= 5


@pytest.mark.parametrize("path", ["compiled loop", "event by event"])
@pytest.mark.parametrize(
    "body",
    [_mysql_gtid(0), _mysql_gtid(42)[:-3], _mysql_gtid(42)[:30]],
    ids=["gno 0", "ticket cut short", "clock cut short"],
)
def test_a_malformed_mysql_gtid_fails_as_convert_raw_fails(path: str, body: bytes) -> None:
    compiled_module()
    renderer = EventRenderer(1 << 20)

    converter = _converter(renderer if path == "compiled loop" else _without_the_loop(renderer))
    with pytest.raises(ValueError, match="GTID_LOG_EVENT") as raised:
        list(converter.convert_raw(_raw(E.GTID_LOG_EVENT, body)))
    with pytest.raises(ValueError) as flat:
        for _ in converter.convert_read([_event(E.GTID_LOG_EVENT, body, 100)], False, flat=True):
            pass
    assert str(flat.value) == str(raised.value)


@pytest.mark.parametrize("checksum", [False, True], ids=["plain", "checksum"])
def test_is_begin_matches_the_decoded_statement_exactly(checksum: bool) -> None:
    # What the binlog scans pass over without decoding must be what decoding calls BEGIN.
    cases = [("BEGIN", ""), ("BEGIN", "shop"), ("begin", ""), ("BEGIN WORK", "")]
    cases += [("ALTER TABLE t RENAME TO BEGIN", "shop"), ("XBEGIN", ""), ("COMMIT", "db")]
    for sql, schema in cases:
        data = _event(E.QUERY_EVENT, _query(sql, schema), 500, checksum)
        body_end = len(data) - (events.CHECKSUM_SIZE if checksum else 0)
        assert events.query(data, body_end).sql == sql
        assert events.is_begin(data, body_end) is (sql == "BEGIN"), sql
    short = _event(E.QUERY_EVENT, b"\0" * 6, 500, checksum)
    assert not events.is_begin(short, len(short) - (events.CHECKSUM_SIZE if checksum else 0))
