"""PARTIAL_UPDATE_ROWS_EVENT (type 39) on a real MySQL: partial JSON updates rebuild the full
document, equal to the same change logged with full images.

Every statement runs twice: on table ``p`` in a session with
``binlog_row_value_options=PARTIAL_JSON`` (after images hold JSON diffs where they are
smaller) and on its twin ``f`` in a plain session (after images hold the documents). Both
tables start equal, so each ``p`` row must decode to the very RowData of its ``f`` row:
before image, after image (the document as the server stored it, rendered by our decoder)
and ``updated`` flags.

The binlog is read with a plain COM_BINLOG_DUMP and the rows bodies go straight to
``RowDecoder``, independent of the parser and its converter.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pymysql
import pytest
from pymysql.constants import COMMAND

from bridge import native
from bridge.entry import RowData
from bridge.parse.binlog import json_diff, rows
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.events import HEADER_SIZE
from bridge.parse.binlog.json_diff import JsonDiff, PartialJsonWithoutBase
from bridge.parse.binlog.rows import RowDecoder, RowsKind
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from tests.conftest import MysqlEndpoint, connect_admin
from tests.native_paths import compiled_module

pytestmark = [
    pytest.mark.services,
    pytest.mark.only_on("mysql", reason="PARTIAL_JSON and binary JSON are MySQL's, not MariaDB's"),
]

Connection = pymysql.connections.Connection  # type: ignore[type-arg]

# The server logs a diff only where it is smaller than the document: PAD keeps some
# documents long.
PAD = "x" * 300
TABLE = "(id INT PRIMARY KEY, j JSON, s VARCHAR(64), k JSON, n JSON) CHARACTER SET utf8mb4"
INITIAL = [
    (1, {"a": 1, "bb": [1, 2, 3], "c": {"x": "hello", "y": [True, None]}, "d": "text"}, "x",
     [1, 2, 3, PAD], None),
    (2, {"list": [{"id": 1}, {"id": 2}], "m": {"deep": {"deeper": {"v": 1.5}}}}, "y",
     {"k": "v", "pad": PAD}, '"scalar"'),
    (3, [1, "two", {"three": 3}, PAD], None, {"pad": PAD}, {"x": 1, "pad": PAD}),
    (4, {"é": "ü", "a b": 1, "key.with.dots": 2}, "z", [PAD], "null"),
    (5, {"v": 1}, "w", {}, None),
]  # fmt: skip
STATEMENTS = [
    "SET j = JSON_SET(j, '$.a', 2) WHERE id = 1",
    "SET j = JSON_SET(j, '$.b', 'new') WHERE id = 1",  # a new key between a and bb
    "SET j = JSON_SET(j, '$.bb[1]', 20) WHERE id = 1",
    "SET j = JSON_SET(j, '$.bb[10]', 40) WHERE id = 1",  # past the end: appended
    "SET j = JSON_ARRAY_INSERT(j, '$.bb[0]', 0) WHERE id = 1",  # no diff: a full image
    "SET j = JSON_REMOVE(j, '$.c.x') WHERE id = 1",
    "SET j = JSON_REPLACE(j, '$.c.y[1]', 'was null') WHERE id = 1",
    "SET j = JSON_SET(j, '$.c.new', JSON_OBJECT('q', 1, 'r', JSON_ARRAY())) WHERE id = 1",
    "SET j = JSON_SET(j, '$.d', 3.25) WHERE id = 1",
    "SET j = JSON_SET(j, '$.\"we ird key\"', 'v') WHERE id = 1",
    "SET j = JSON_SET(j, '$.\"ключ\"', 'значение 😀') WHERE id = 1",
    "SET j = JSON_REMOVE(j, '$.bb[0]', '$.bb[last]') WHERE id = 1",
    "SET j = JSON_SET(j, '$.bb[last]', 'L') WHERE id = 1",
    "SET j = JSON_SET(j, '$.a', CAST('12.50' AS DECIMAL(6,2))) WHERE id = 1",
    "SET j = JSON_SET(j, '$.when', CAST('2024-01-02 03:04:05.123456' AS DATETIME(6))) WHERE id = 1",
    "SET j = JSON_SET(j, '$.t', true, '$.f', false, '$.nul', NULL) WHERE id = 1",
    "SET j = JSON_SET(j, '$.long', REPEAT('y', 300)) WHERE id = 1",  # a 2-byte value length
    "SET j = JSON_SET(j, '$.d[0]', 'wrapped') WHERE id = 1",  # auto-wrap: replaces $.d
    "SET j = JSON_SET(j, '$.d[1]', 'second') WHERE id = 1",  # scalar becomes an array
    "SET j = JSON_SET(j, '$.a.b', 1) WHERE id = 1",  # through a scalar: nothing to do
    "SET j = JSON_REMOVE(j, '$.nowhere') WHERE id = 1",
    "SET j = JSON_SET(j, '$.list[1].id', 22) WHERE id = 2",
    "SET j = JSON_SET(j, '$.list[5]', JSON_OBJECT('id', 5)) WHERE id = 2",
    "SET j = JSON_SET(j, '$.m.deep.deeper.v', 2.75) WHERE id = 2",
    "SET j = JSON_REMOVE(j, '$.m.deep') WHERE id = 2",
    "SET k = JSON_SET(k, '$.k2', 'v2') WHERE id = 2",
    "SET j = JSON_SET(j, '$[1]', 'TWO') WHERE id = 3",
    "SET j = JSON_SET(j, '$[2].three', 33, '$[2].four', 4) WHERE id = 3",
    "SET j = JSON_REMOVE(j, '$[0]') WHERE id = 3",
    "SET j = JSON_SET(j, '$[7]', 'appended') WHERE id = 3",
    "SET n = JSON_SET(n, '$.x', 2), k = JSON_REMOVE(k, '$.pad') WHERE id = 3",
    "SET j = JSON_SET(j, '$.\"é\"', 'É') WHERE id = 4",
    "SET j = JSON_SET(j, '$.\"a b\"', JSON_ARRAY(1, 2), '$.\"key.with.dots\"', 'd') WHERE id = 4",
    "SET j = JSON_SET(j, '$.aa', 1, '$.zz', 2, '$.B', 3) WHERE id = 4",
    "SET j = JSON_SET(j, '$.v', 9), k = JSON_REPLACE(k, '$[0]', 'k0'), s = 's' WHERE id = 1",
    "SET j = JSON_SET(j, '$.multi', id) WHERE id IN (1, 2, 4)",  # three rows in one event
    "SET j = JSON_SET(j, '$.multi', id + 1), s = CONCAT(IFNULL(s, ''), '!') WHERE id < 5",
    "SET n = JSON_SET(n, '$.a', 1) WHERE id = 1",  # NULL stays NULL
    "SET s = 'only s' WHERE id = 2",  # no JSON change: value_options 0
    'SET j = \'{"replaced": "whole"}\' WHERE id = 5',  # a full value
    "SET j = JSON_SET(j, '$', JSON_OBJECT('root', 1)) WHERE id = 5",  # the root: full
    "SET j = JSON_SET(j, '$.root', j) WHERE id = 5",
]


@pytest.fixture(params=["python", "compiled"])
def reader_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Plans read images without diffs with the compiled reader where it is built."""
    path: str = request.param
    monkeypatch.setattr(native, "module", compiled_module() if path == "compiled" else None)
    return path


# --------------------------------------------------------------------------- the binlog


@dataclass(frozen=True)
class RowsEvent:
    table: TableMeta
    code: int  # 31 UPDATE_ROWS v2, 39 PARTIAL_UPDATE_ROWS
    body: bytes  # from the columns-present bitmap, without the checksum
    columns: int


def _packed(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos]
    if first < 251:
        return first, pos + 1
    size = {252: 2, 253: 3, 254: 8}[first]
    return int.from_bytes(data[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def binlog_status(conn: Connection) -> tuple[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS")
        row = cur.fetchone()
    return str(row[0]), int(row[1])


def _raw_events(server: MysqlEndpoint, start: tuple[str, int]) -> Iterator[bytes]:
    """The events from ``start`` to the end of the binlog (COM_BINLOG_DUMP, non-blocking).

    pymysql has no public binlog API: ``_execute_command`` and ``_read_packet`` are the two
    internals mysql-replication builds its stream on; a pymysql without them fails here."""
    conn = pymysql.connect(
        host=server.host, port=server.port, user=server.user, password=server.password
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SET @source_binlog_checksum = @@global.binlog_checksum")
        server_id = 900_000 + os.getpid() % 100_000
        payload = struct.pack("<IHI", start[1], 1, server_id) + start[0].encode()
        conn._execute_command(COMMAND.COM_BINLOG_DUMP, payload)
        while True:
            packet = conn._read_packet()
            if packet.is_eof_packet():
                return
            yield packet.get_all_data()[1:]  # after the OK byte
    finally:
        conn.close()


def rows_events(server: MysqlEndpoint, start: tuple[str, int], schema: str) -> list[RowsEvent]:
    """The UPDATE / PARTIAL_UPDATE rows events of ``schema`` from ``start`` on."""
    checksum, tables, found = 0, {}, []
    for event in _raw_events(server, start):
        code = event[4]
        if code == EventCode.FORMAT_DESCRIPTION_EVENT:  # checksum algorithm byte + 4 checksum bytes
            checksum = 4 if event[-5] == 1 else 0
            continue
        body = event[HEADER_SIZE : len(event) - checksum]
        if code == EventCode.TABLE_MAP_EVENT and body[9 : 9 + body[8]].decode() == schema:
            table_id, table = _table_map(body)
            tables[table_id] = table
        elif (
            code in (EventCode.UPDATE_ROWS_EVENT, EventCode.PARTIAL_UPDATE_ROWS_EVENT)
            and int.from_bytes(body[:6], "little") in tables
        ):
            extra = int.from_bytes(body[8:10], "little")
            columns, pos = _packed(body, 8 + extra)
            table = tables[int.from_bytes(body[:6], "little")]
            found.append(RowsEvent(table, code, body[pos:], columns))
    return found


def _table_map(body: bytes) -> tuple[int, TableMeta]:
    """A TABLE_MAP of this module's tables (INT, VARCHAR, JSON columns; metadata FULL)."""
    pos = 8
    schema = body[pos + 1 : pos + 1 + body[pos]].decode()
    pos += 2 + body[pos]
    table = body[pos + 1 : pos + 1 + body[pos]].decode()
    pos += 2 + body[pos]
    count, pos = _packed(body, pos)
    types, pos = body[pos : pos + count], pos + count
    size, pos = _packed(body, pos)
    metadata, pos = body[pos : pos + size], pos + size
    nullable = int.from_bytes(body[pos : pos + (count + 7) // 8], "little")
    pos += (count + 7) // 8
    names: list[str] = []
    keys: set[int] = set()
    while pos < len(body):  # optional metadata: type, packed length, value
        kind, (length, pos) = body[pos], _packed(body, pos + 1)
        value, pos = body[pos : pos + length], pos + length
        at = 0
        while at < len(value) and kind in (4, 8):  # COLUMN_NAME, SIMPLE_PRIMARY_KEY
            item, at = _packed(value, at)
            if kind == 4:
                names.append(value[at : at + item].decode())
                at += item
            else:
                keys.add(item)
    columns, meta_at = [], 0
    for i, code in enumerate(types):
        common: dict[str, Any] = {"is_key": i in keys, "nullable": bool(nullable >> i & 1)}
        if code == T.LONG:
            columns.append(ColumnMeta(i, names[i], code, "int", **common))
        elif code == T.VARCHAR:
            length = int.from_bytes(metadata[meta_at : meta_at + 2], "little")
            meta_at += 2
            columns.append(
                ColumnMeta(
                    i, names[i], code, "varchar(64)", charset="utf-8", max_length=length, **common
                )
            )
        else:
            assert code == T.JSON, f"column type {code} is not in this module's tables"
            columns.append(
                ColumnMeta(i, names[i], code, "json", max_length=metadata[meta_at], **common)
            )
            meta_at += 1
    return int.from_bytes(body[:6], "little"), TableMeta(schema, table, tuple(columns))


# --------------------------------------------------------------------------- the twins


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


Twins = Callable[..., tuple[Connection, Connection]]


@pytest.fixture
def twins(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> Iterator[Twins]:
    """Makes tables p and f with the same rows, and a session for each (p's: PARTIAL_JSON);
    ``primary_key=False`` leaves out the key."""
    opened: list[Connection] = []

    def make(primary_key: bool = True) -> tuple[Connection, Connection]:
        columns = TABLE if primary_key else TABLE.replace(" PRIMARY KEY", "")
        with admin_connection.cursor() as cur:
            for name in ("p", "f"):
                cur.execute(f"CREATE TABLE `{scratch_schema}`.{name} {columns}")
                for row in INITIAL:
                    values = ", ".join(_literal(value) for value in row)
                    cur.execute(f"INSERT INTO `{scratch_schema}`.{name} VALUES ({values})")
        for options in ("PARTIAL_JSON", ""):
            conn = connect_admin(mysql)
            opened.append(conn)
            conn.select_db(scratch_schema)
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION binlog_row_value_options = '{options}'")
        return opened[-2], opened[-1]

    yield make
    for conn in opened:
        conn.close()


def _run_twice(partial: Connection, full: Connection, statements: list[str]) -> None:
    for statement in statements:
        for conn, table in ((partial, "p"), (full, "f")):
            with conn.cursor() as cur:
                cur.execute(f"UPDATE {table} {statement}")


def _decoded(events: list[RowsEvent], table: str) -> list[tuple[RowData, ...]]:
    mine = [e for e in events if e.table.table == table]
    decoder = RowDecoder(mine[0].table)
    kinds: dict[int, RowsKind] = {
        EventCode.UPDATE_ROWS_EVENT: "update",
        EventCode.PARTIAL_UPDATE_ROWS_EVENT: "partial_update",
    }
    return [decoder.decode(kinds[e.code], e.body, e.columns) for e in mine]


class CountingDiffs:
    """Wraps the row decoder's ``applied_document``: the diffs it really applied (by the
    compiled module or by Python, as the reader path has it); ``ignore`` leaves each
    document as it was before its diffs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, ignore: bool = False) -> None:
        self.applied: list[JsonDiff] = []
        self._ignore = ignore
        monkeypatch.setattr(rows, "applied_document", self)

    def __call__(self, before: bytes, data: bytes, pos: int) -> tuple[bytes, int]:
        diffs, end = json_diff.read_diffs(data, pos)
        self.applied += diffs
        if self._ignore:
            return before, end
        return json_diff.applied_document(before, data, pos)


# --------------------------------------------------------------------------- tests


@pytest.mark.usefixtures("reader_path")
def test_partial_updates_equal_full_updates(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    twins: Twins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    partial, full = twins()
    start = binlog_status(admin_connection)
    _run_twice(partial, full, STATEMENTS)
    events = rows_events(mysql, start, scratch_schema)

    assert {e.code for e in events if e.table.table == "p"} == {EventCode.PARTIAL_UPDATE_ROWS_EVENT}
    assert {e.code for e in events if e.table.table == "f"} == {31}
    counting = CountingDiffs(monkeypatch)
    p_rows, f_rows = _decoded(events, "p"), _decoded(events, "f")
    assert len(p_rows) == len(f_rows) >= len(STATEMENTS) - 5
    for got, expected in zip(p_rows, f_rows, strict=True):
        assert got == expected
    assert max(len(r) for r in p_rows) == 4, "the multi-row events"
    # the diffs really were there: every operation, on most statements
    assert len(counting.applied) >= 30
    assert {d.operation for d in counting.applied} == set(json_diff.DiffOp)
    # the decoded documents are the ones the server holds
    for conn, table in ((partial, "p"), (full, "f")):
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, j FROM {table} WHERE id = 4")
            assert cur.fetchone() == (4, _after_value(p_rows, "4", "j"))


def _after_value(decoded: list[tuple[RowData, ...]], key: str, name: str) -> str:
    """The last after-image value of column ``name`` in the rows of id ``key``."""
    values = [
        c.value
        for rows_ in decoded
        for row in rows_
        if row.after and row.after[0].value == key
        for c in row.after
        if c.name == name
    ]
    return values[-1]


def test_without_applying_the_diffs_the_documents_differ(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    twins: Twins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The comparison above can fail: ignoring the diffs leaves stale documents."""
    partial, full = twins()
    start = binlog_status(admin_connection)
    _run_twice(partial, full, STATEMENTS)
    events = rows_events(mysql, start, scratch_schema)
    ignoring = CountingDiffs(monkeypatch, ignore=True)
    p_rows, f_rows = _decoded(events, "p"), _decoded(events, "f")
    differing = sum(got != expected for got, expected in zip(p_rows, f_rows, strict=True))
    assert differing >= 25
    assert len(ignoring.applied) >= 30


@pytest.mark.parametrize(
    ("row_image", "primary_key", "rebuilt"),
    [
        ("NOBLOB", True, True),  # the changed JSON column is in the before image too
        ("MINIMAL", False, True),  # no key: the before image holds every column
        ("MINIMAL", True, False),  # the before image is the key alone
    ],
)
def test_row_images(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    twins: Twins,
    monkeypatch: pytest.MonkeyPatch,
    *,
    row_image: str,
    primary_key: bool,
    rebuilt: bool,
) -> None:
    partial, full = twins(primary_key)
    for conn in (partial, full):
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION binlog_row_image = '{row_image}'")
    start = binlog_status(admin_connection)
    _run_twice(partial, full, STATEMENTS[:4] + STATEMENTS[21:26])
    events = rows_events(mysql, start, scratch_schema)
    if rebuilt:
        counting = CountingDiffs(monkeypatch)
        assert _decoded(events, "p") == _decoded(events, "f")
        assert len(counting.applied) >= 8
    else:
        with pytest.raises(PartialJsonWithoutBase) as caught:
            _decoded(events, "p")
        assert str(caught.value).startswith(f"table {scratch_schema}.p: column `j` is logged ")
        assert "set binlog_row_image=FULL" in str(caught.value)
        _decoded(events, "f")  # the full images of the same changes decode
