"""TABLE_MAP events of real MariaDB and MySQL servers, decoded by ``decode_table_map``.

Two oracles, each run on every event of every table:

- information_schema: the server's own view of each column (type, sizes, charset, labels,
  nullability, signedness, key, visibility), independent of any binlog reader;
- mysql-replication's ``TableMapEvent``, built exactly as ``LibraryEvents.build`` built it
  (the private ``BinLogPacketWrapper``, allowed here as the differential oracle): every
  attribute ``build_table_meta`` reads must be equal, and so must the ``TableMeta``. Where the
  library is wrong the table's spec names the (column, attribute) pairs, and those must differ:
  a fix in the library, or a regression here, shows up as a failure.

The binlog is read with a dump connection of our own (COM_BINLOG_DUMP, non-blocking), not with
``bridge.parse``, so nothing under test frames the bytes it is tested on.
"""

from __future__ import annotations

import os
import random
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pymysql
import pytest
from pymysql.constants import COMMAND
from pymysql.protocol import MysqlPacket
from pymysqlreplication.event import FormatDescriptionEvent
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import TableMapEvent

from bridge.parse.binlog import table_meta as table_map
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_map import ColumnDef, TableMapDef, decode_table_map
from bridge.parse.binlog.table_meta import TableMeta, build_table_meta
from bridge.schema.definitions import ColumnDefinition, TableDefinition

pytestmark = [pytest.mark.services]

Connection = pymysql.connections.Connection
HOW_TO = 'run `eval "$(deploy/local/services.sh env)"` after `deploy/local/services.sh up`'
SCHEMA = "t_table_map_event"
BINLOG_DUMP_NON_BLOCK = 1

# ------------------------------------------------------------------------------ the tables


@dataclass(frozen=True)
class Spec:
    """A table: its column definitions, the servers that have them, and how the library reads
    its TABLE_MAP: ``library_wrong`` lists (column, attribute) pairs where it is wrong, and
    ``library_unreadable`` says why it cannot read the event at all."""

    name: str
    columns: str
    servers: tuple[str, ...] = ("mariadb", "mysql")
    library_wrong: frozenset[tuple[str, str]] = frozenset()
    library_unreadable: str = ""


_ENUM_300 = ",".join(f"'l{i}'" for i in range(300))
_WIDE = ", ".join(
    f"c{i} "
    + ("INT UNSIGNED", "VARCHAR(4) CHARACTER SET latin1 NOT NULL DEFAULT ''", "TINYINT")[i % 3]
    for i in range(260)
)
_LONG_NAME = "列" * 64  # 192 bytes: its length byte is 0xC0

SPECS = (
    Spec(
        "numbers",
        "id INT AUTO_INCREMENT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED NOT NULL DEFAULT 0,"
        " si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT,"
        " iu INT UNSIGNED, bi BIGINT NOT NULL DEFAULT 0, biu BIGINT UNSIGNED, y YEAR,"
        " d DECIMAL(10,2), du DECIMAL(65,30) UNSIGNED, d0 DECIMAL(5,0), f FLOAT,"
        " fu FLOAT UNSIGNED, db DOUBLE, dbu DOUBLE UNSIGNED, b1 BIT(1), b13 BIT(13), b64 BIT(64),"
        " bo BOOL",
    ),
    Spec(
        "temporal",
        "d DATE, t TIME, t3 TIME(3), t6 TIME(6), dt DATETIME, dt1 DATETIME(1), dt6 DATETIME(6),"
        " ts TIMESTAMP NULL, ts4 TIMESTAMP(4) NULL, y YEAR NOT NULL DEFAULT 2000",
    ),
    Spec(
        "strings",
        "c CHAR(10) CHARACTER SET latin1, vg VARCHAR(300) CHARACTER SET gbk,"
        " v3 VARCHAR(50) CHARACTER SET utf8mb3, v4 VARCHAR(20) CHARACTER SET utf8mb4,"
        " b BINARY(8), vb VARBINARY(500), c255 CHAR(255) CHARACTER SET utf8mb4,"
        " c100 CHAR(100) CHARACTER SET utf8mb3, c200 CHAR(200) CHARACTER SET latin1,"
        " cu CHAR(64) CHARACTER SET ucs2, v16 VARCHAR(10) CHARACTER SET utf16,"
        " bg CHAR(3) CHARACTER SET big5, sj VARCHAR(5) CHARACTER SET sjis,"
        " lb VARCHAR(5) COLLATE latin1_bin, uc VARCHAR(5) COLLATE utf8mb4_unicode_ci,"
        " ub VARCHAR(5) COLLATE utf8mb4_bin, ug VARCHAR(5) COLLATE utf8mb4_general_ci,"
        " u3 VARCHAR(5) COLLATE utf8mb3_bin, cr CHAR(5) COLLATE utf8mb4_croatian_ci",
    ),
    Spec(
        "mysql_collations",
        "a VARCHAR(5) COLLATE utf8mb4_0900_ai_ci, b VARCHAR(5) COLLATE utf8mb4_0900_as_cs,"
        " c VARCHAR(5) COLLATE utf8mb4_0900_bin, d CHAR(5) COLLATE utf8mb4_ja_0900_as_cs,"
        " e TEXT COLLATE utf8mb4_zh_0900_as_cs, g VARCHAR(5) CHARACTER SET gb18030",
        servers=("mysql",),
    ),
    Spec(
        "mariadb_collations",
        "a VARCHAR(5) COLLATE utf8mb4_unicode_520_nopad_ci, b VARCHAR(5) COLLATE utf8mb4_nopad_bin,"
        " c CHAR(5) COLLATE latin1_swedish_nopad_ci, d VARCHAR(5) COLLATE utf8mb3_myanmar_ci",
        servers=("mariadb",),
    ),
    Spec(
        "blobs",
        "tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB, tt TINYTEXT CHARACTER SET latin1,"
        " tx TEXT CHARACTER SET gbk, mt MEDIUMTEXT CHARACTER SET utf8mb3,"
        " lt LONGTEXT CHARACTER SET utf8mb4, j JSON",
    ),
    Spec(
        "enums",
        "e ENUM('红','绿','蓝 blue') CHARACTER SET utf8mb4, s SET('日','月','星')"
        f" CHARACTER SET utf8mb4, e3 ENUM('ä','ö') CHARACTER SET utf8mb3, big ENUM({_ENUM_300}),"
        " s10 SET('a','b','c','d','e','f','g','h','i','j'), n INT UNSIGNED",
    ),
    Spec(
        "geometry",
        "g GEOMETRY, p POINT, l LINESTRING, pg POLYGON, mp MULTIPOINT, ml MULTILINESTRING,"
        " mpg MULTIPOLYGON, gc GEOMETRYCOLLECTION, after_g VARCHAR(10) CHARACTER SET latin1,"
        " u INT UNSIGNED",
    ),
    Spec(
        "composite_key",
        "a INT NOT NULL DEFAULT 1, b VARCHAR(20) NOT NULL DEFAULT 'x', c INT, PRIMARY KEY (b, a)",
    ),
    Spec(
        "prefix_key",
        "a VARCHAR(100) NOT NULL DEFAULT 'x', b INT NOT NULL DEFAULT 1, c TEXT,"
        " PRIMARY KEY (a(10), b)",
        # mysql-replication parses PRIMARY_KEY_WITH_PREFIX but never applies it.
        library_wrong=frozenset({("a", "is_primary"), ("b", "is_primary")}),
    ),
    Spec("no_key", "x INT, y VARCHAR(5)"),
    Spec("wide", _WIDE),
    Spec("invisible", "id INT AUTO_INCREMENT PRIMARY KEY, h INT INVISIBLE, v VARCHAR(5)"),
    Spec(
        "labels",
        "id INT AUTO_INCREMENT PRIMARY KEY, e ENUM('é','ü') CHARACTER SET latin1,"
        " f ENUM('中','文') CHARACTER SET gbk, s SET('ä','b') CHARACTER SET utf16",
        # The library decodes labels as UTF-8 and gives '' for what is not.
        library_wrong=frozenset({("e", "enum_values"), ("f", "enum_values"), ("s", "set_values")}),
    ),
    Spec(
        "long_names",
        f"id INT AUTO_INCREMENT PRIMARY KEY, `{_LONG_NAME}` INT UNSIGNED,"
        f" e ENUM('{'x' * 130}', 'y')",
        library_unreadable="it reads name and label lengths as 7-bit varints, not length-encoded",
    ),
    Spec(
        "vector",
        "id INT AUTO_INCREMENT PRIMARY KEY, v VECTOR(3), h INT INVISIBLE, v2 VECTOR(700),"
        " c CHAR(2) CHARACTER SET gbk",
        servers=("mysql",),
        library_unreadable="it knows neither the VECTOR type nor the VECTOR_DIMENSIONALITY field",
    ),
    Spec(
        "mariadb_types",
        "id INT AUTO_INCREMENT PRIMARY KEY, g POINT,"
        " c VARCHAR(100) COMPRESSED CHARACTER SET latin1, b TEXT COMPRESSED CHARACTER SET gbk,"
        " h INT INVISIBLE, u UUID, i6 INET6, x CHAR(3) COLLATE utf8mb4_uca1400_ai_ci,"
        " after_x CHAR(2) CHARACTER SET gbk",
        servers=("mariadb",),
        library_unreadable="it knows neither the compressed column types nor UCA 14.0.0 ids",
    ),
)

# ---------------------------------------------------------------------------- the servers


@dataclass(frozen=True)
class Server:
    flavor: str
    host: str
    port: int

    @property
    def mariadb(self) -> bool:
        return self.flavor == "mariadb"

    def connect(self, *, admin: bool = True) -> Connection:
        env = os.environ
        user, password = (
            (env["CANAL_BRIDGE_MYSQL_ADMIN_USER"], env["CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD"])
            if admin
            else (env["CANAL_BRIDGE_MYSQL_USER"], env["CANAL_BRIDGE_MYSQL_PASSWORD"])
        )
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=user,
            password=password,
            autocommit=True,
            charset="utf8mb4",
        )


@pytest.fixture(scope="module", params=["mariadb", "mysql"])
def server(request: pytest.FixtureRequest) -> Server:
    variable = {"mariadb": "CANAL_BRIDGE_MYSQL_PORT", "mysql": "CANAL_BRIDGE_ORACLE_MYSQL_PORT"}
    port = os.environ.get(variable[request.param])
    if not port or not os.environ.get("CANAL_BRIDGE_MYSQL_ADMIN_USER"):
        pytest.fail(f"{variable[request.param]} is not set: {HOW_TO}", pytrace=False)
    return Server(request.param, os.environ.get("CANAL_BRIDGE_MYSQL_HOST", "127.0.0.1"), int(port))


def binlog_end(conn: Connection) -> tuple[str, int]:
    with conn.cursor() as cur:
        try:
            cur.execute("SHOW BINARY LOG STATUS")  # MySQL 8.2+
        except pymysql.err.ProgrammingError:
            cur.execute("SHOW MASTER STATUS")  # MariaDB
        row = cur.fetchone()
    assert row is not None, "binary logging is off"
    return row[0], int(row[1])


@dataclass(frozen=True)
class Binlog:
    """The events from a position to the end of the file, and how to read them."""

    events: list[bytes]
    post_header_lengths: bytes
    mysql_version: Any

    def table_maps(self, schema: str) -> Iterator[bytes]:
        """The TABLE_MAP events (header + body + checksum) of ``schema``'s tables."""
        marker = len(schema).to_bytes(1, "little") + schema.encode() + b"\0"
        for event in self.events:
            if event[4] == EventCode.TABLE_MAP_EVENT and event[27 : 28 + len(schema) + 1] == marker:
                yield event


def dump(server: Server, start: tuple[str, int]) -> Binlog:
    """COM_BINLOG_DUMP from ``start`` to the current end (non-blocking), as a replica asks."""
    conn = server.connect(admin=False)
    try:
        with conn.cursor() as cur:
            cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
            cur.execute("SET @mariadb_slave_capability = 4")
        server_id = random.randrange(1 << 31, 1 << 32)  # no replica's: it would be disconnected
        command = (
            struct.pack("<IHI", start[1], BINLOG_DUMP_NON_BLOCK, server_id) + start[0].encode()
        )
        # PyMySQL has no public call for a replication command or its raw packets.
        conn._execute_command(COMMAND.COM_BINLOG_DUMP, command)  # type: ignore[attr-defined]
        events = []
        while True:
            packet = conn._read_packet()  # type: ignore[no-untyped-call]
            if packet.is_eof_packet():
                break
            events.append(packet.get_all_data()[1:])
    finally:
        conn.close()
    fde = next(e for e in events if e[4] == EventCode.FORMAT_DESCRIPTION_EVENT)
    library_fde = library_event(fde, FormatDescriptionEvent, server, b"", None)
    return Binlog(events, bytes(library_fde.post_header_len), library_fde.mysql_version)


# ------------------------------------------------------------------------------ the oracles


class _Control:
    """What the library reads of the stream's control connection while parsing an event: its
    charset, and ``_get_dbms`` (which the stream reader sets from the server's version)."""

    def __init__(self, server: Server) -> None:
        self.charset = "utf8mb4"
        self._dbms = server.flavor

    def _get_dbms(self) -> str:
        return self._dbms


def library_event(
    event: bytes, kind: type[Any], server: Server, post_header_lengths: bytes, version: Any
) -> Any:
    """The library's event object, built with LibraryEvents.build's arguments: checksum on,
    freeze_schema on, optional metadata on (the server runs binlog_row_metadata=FULL)."""
    wrapper = BinLogPacketWrapper(
        MysqlPacket(b"\x00" + event, "utf8mb4"),
        {},
        _Control(server),
        version,
        True,
        frozenset({kind}),
        None,
        None,
        None,
        None,
        True,
        False,
        False,
        True,
        False,
        False,
        post_header_lengths or None,
    )
    return wrapper.event


ATTRIBUTES = (
    "type",
    "name",
    "unsigned",
    "collation_name",
    "precision",
    "decimals",
    "bits",
    "fsp",
    "max_length",
    "length_size",
    "size",
    "enum_values",
    "set_values",
    "is_primary",
)


def library_view(column: Any) -> dict[str, Any]:
    """A library column's attributes as ours name them: plain ENUM labels (the library puts a
    placeholder first), tuples, "" for no name, 0 for sizes it does not set."""
    view = {name: getattr(column, name, 0) for name in ATTRIBUTES}
    view["name"] = column.name or ""
    view["collation_name"] = column.collation_name
    view["enum_values"] = tuple((column.enum_values or [""])[1:])
    view["set_values"] = tuple(column.set_values or ())
    return view


def our_view(column: ColumnDef) -> dict[str, Any]:
    return {name: getattr(column, name) for name in ATTRIBUTES}


def library_differences(ours: TableMapDef, library: Any, mariadb: bool) -> set[tuple[str, str]]:
    """(column, attribute) pairs where our decode and the library's disagree."""
    found = {
        ("", name)
        for name in ("table_id", "schema", "table", "null_bitmask")
        if getattr(ours, name) != getattr(library, name)
    }
    if len(ours.columns) != len(library.columns):
        return found | {("", "column count")}
    for column, theirs in zip(ours.columns, library.columns, strict=True):
        mine, other = our_view(column), library_view(theirs)
        found |= {(column.name, name) for name in ATTRIBUTES if mine[name] != other[name]}
        # The library's visibility is False where the event has no COLUMN_VISIBILITY (MariaDB).
        if not mariadb and column.visible != theirs.visibility:
            found.add((column.name, "visible"))
    return found


class _PlainLabels:
    """A library column whose ``enum_values`` are plain labels, like ours."""

    def __init__(self, column: Any) -> None:
        self._column = column

    def __getattr__(self, name: str) -> Any:
        if name == "enum_values":
            return list((self._column.enum_values or [""])[1:])
        return getattr(self._column, name)


def table_metas(
    ours: TableMapDef, library: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[TableMeta, TableMeta]:
    """``build_table_meta`` of both decodes, ENUM labels taken as plain labels (ours; the
    library's are stripped of their placeholder)."""
    if hasattr(table_map, "_enum_labels"):
        monkeypatch.setattr(table_map, "_enum_labels", lambda values: tuple(values or ()))
    mine = build_table_meta(ours.schema, ours.table, ours.columns, ours.null_bitmask, None)
    columns = [_PlainLabels(c) for c in library.columns]
    theirs = build_table_meta(library.schema, library.table, columns, library.null_bitmask, None)
    return mine, theirs


# information_schema DATA_TYPE -> binlog type code (MariaDB's JSON is a LONGTEXT)
BINLOG_TYPES = {
    "tinyint": T.TINY,
    "smallint": T.SHORT,
    "mediumint": T.INT24,
    "int": T.LONG,
    "bigint": T.LONGLONG,
    "year": T.YEAR,
    "decimal": T.NEWDECIMAL,
    "float": T.FLOAT,
    "double": T.DOUBLE,
    "bit": T.BIT,
    "date": T.DATE,
    "time": T.TIME2,
    "datetime": T.DATETIME2,
    "timestamp": T.TIMESTAMP2,
    "char": T.STRING,
    "binary": T.STRING,
    "uuid": T.STRING,
    "inet6": T.STRING,
    "varchar": T.VARCHAR,
    "varbinary": T.VARCHAR,
    "json": T.JSON,
    "enum": T.ENUM,
    "set": T.SET,
    "vector": T.VECTOR,
    **dict.fromkeys(("tinyblob", "blob", "mediumblob", "longblob"), T.BLOB),
    **dict.fromkeys(("tinytext", "text", "mediumtext", "longtext"), T.BLOB),
}
GEOMETRY_TYPES = {
    "geometry": 0,
    "point": 1,
    "linestring": 2,
    "polygon": 3,
    "multipoint": 4,
    "multilinestring": 5,
    "multipolygon": 6,
    "geometrycollection": 7,
    "geomcollection": 7,
}
LENGTH_SIZES = {"tiny": 1, "": 2, "medium": 3, "long": 4}


def schema_columns(conn: Connection, table: str) -> list[dict[str, Any]]:
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(
            "SELECT COLUMN_NAME AS name, DATA_TYPE AS data_type, COLUMN_TYPE AS column_type,"
            " IS_NULLABLE AS nullable, COLUMN_KEY AS column_key, COLLATION_NAME AS collation,"
            " CHARACTER_OCTET_LENGTH AS octets, NUMERIC_PRECISION AS num_precision,"
            " NUMERIC_SCALE AS num_scale, DATETIME_PRECISION AS fsp, EXTRA AS extra"
            " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
            " ORDER BY ORDINAL_POSITION",
            (SCHEMA, table),
        )
        columns = list(cur.fetchall())
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s"
            " AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
            (SCHEMA, table),
        )
        key = [row["COLUMN_NAME"] for row in cur.fetchall()]
    names = [c["name"] for c in columns]
    for column in columns:
        column["key_order"] = tuple(names.index(k) for k in key)
    return columns


def _labels(column_type: str) -> tuple[str, ...]:
    return tuple(v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", column_type))


def expected_column(info: dict[str, Any], mariadb: bool) -> dict[str, Any]:
    """What the TABLE_MAP must say of a column, from information_schema alone."""
    data_type, column_type = info["data_type"], info["column_type"].lower()
    code = BINLOG_TYPES.get(data_type, T.GEOMETRY if data_type in GEOMETRY_TYPES else -1)
    compressed = "compressed" in column_type
    if compressed:
        code = T.VARCHAR_COMPRESSED if data_type == "varchar" else T.BLOB_COMPRESSED
    expected: dict[str, Any] = {
        "type": code,
        "name": info["name"],
        "unsigned": "unsigned" in column_type or data_type == "year",
        "enum_values": _labels(column_type) if data_type == "enum" else (),
        "set_values": _labels(column_type) if data_type == "set" else (),
        "is_primary": info["column_key"] == "PRI",
        # MariaDB does not log visibility: every column reads as visible.
        "visible": mariadb or "invisible" not in info["extra"].lower(),
        "geometry_type": GEOMETRY_TYPES.get(data_type, 0),
        "vector_dimensions": int(column_type[7:-1]) if data_type == "vector" else 0,
    }
    if code in (T.STRING, T.VARCHAR, T.VARCHAR_COMPRESSED) and info["octets"] is not None:
        expected["max_length"] = int(info["octets"]) + (1 if compressed else 0)
    if code in (T.BLOB, T.BLOB_COMPRESSED, T.JSON, T.GEOMETRY, T.VECTOR):
        stem = (
            re.sub(r"(blob|text)$", "", data_type) if data_type.endswith(("blob", "text")) else ""
        )
        expected["length_size"] = (
            LENGTH_SIZES.get(stem, 4) if code in (T.BLOB, T.BLOB_COMPRESSED) else 4
        )
    if code == T.NEWDECIMAL:
        expected["precision"], expected["decimals"] = info["num_precision"], info["num_scale"]
    if code == T.BIT:
        expected["bits"] = info["num_precision"]
    if code in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        expected["fsp"] = info["fsp"]
    if code in (T.FLOAT, T.DOUBLE):
        expected["size"] = 4 if code == T.FLOAT else 8
    if code in (T.ENUM, T.SET):
        count = len(expected["enum_values"] or expected["set_values"])
        expected["size"] = (1 if count < 256 else 2) if code == T.ENUM else min((count + 7) // 8, 8)
    return expected


def schema_differences(
    ours: TableMapDef, columns: list[dict[str, Any]], mariadb: bool
) -> list[str]:
    """Where our decode disagrees with information_schema (names compared only if logged)."""
    problems = []
    if len(ours.columns) != len(columns):
        return [f"{len(ours.columns)} columns decoded, {len(columns)} in the table"]
    for index, (column, info) in enumerate(zip(ours.columns, columns, strict=True)):
        for name, value in expected_column(info, mariadb).items():
            if name == "name" and not ours.has_names:
                continue
            if getattr(column, name) != value:
                problems.append(f"{info['name']}.{name}: {getattr(column, name)!r} != {value!r}")
        nullable = bool(ours.null_bitmask[index // 8] & (1 << index % 8))
        if nullable != (info["nullable"] == "YES"):
            problems.append(f"{info['name']}.nullable: {nullable}")
        if info["collation"] is not None and column.collation_name != info["collation"]:
            problems.append(f"{info['name']}.collation: {column.collation_name!r}")
        if info["collation"] is None and column.collation_name not in (None, "binary"):
            problems.append(f"{info['name']}.collation: {column.collation_name!r} (none)")
    if columns and ours.has_names and ours.primary_key != columns[0]["key_order"]:
        problems.append(f"primary key {ours.primary_key} != {columns[0]['key_order']}")
    return problems


# ----------------------------------------------------------------------------- the captures


@dataclass(frozen=True)
class Captured:
    spec: Spec
    event: bytes
    ours: TableMapDef
    library: Any  # None when the spec says the library cannot read it
    columns: list[dict[str, Any]]


@dataclass(frozen=True)
class Capture:
    server: Server
    binlog: Binlog
    tables: dict[str, Captured]

    def decode(self, event: bytes) -> TableMapDef:
        post_header = self.binlog.post_header_lengths[EventCode.TABLE_MAP_EVENT - 1]
        return decode_table_map(event[19:-4], post_header, mariadb=self.server.mariadb)

    def library(self, event: bytes) -> Any:
        binlog = self.binlog
        return library_event(
            event, TableMapEvent, self.server, binlog.post_header_lengths, binlog.mysql_version
        )


@pytest.fixture(scope="module")
def capture(server: Server) -> Iterator[Capture]:
    """Every spec's table created, one row inserted into each, their TABLE_MAPs decoded."""
    specs = [s for s in SPECS if server.flavor in s.servers]
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
            cur.execute(f"CREATE DATABASE {SCHEMA} CHARACTER SET utf8mb4")
            for spec in specs:
                cur.execute(f"CREATE TABLE {SCHEMA}.{spec.name} ({spec.columns})")
            start = binlog_end(conn)
            for spec in specs:
                cur.execute(f"INSERT INTO {SCHEMA}.{spec.name} () VALUES ()")
        binlog = dump(server, start)
        partial = Capture(server, binlog, {})
        events = {partial.decode(e).table: e for e in binlog.table_maps(SCHEMA)}
        assert sorted(events) == sorted(s.name for s in specs)
        tables = {
            spec.name: Captured(
                spec,
                events[spec.name],
                partial.decode(events[spec.name]),
                None if spec.library_unreadable else partial.library(events[spec.name]),
                schema_columns(conn, spec.name),
            )
            for spec in specs
        }
        yield Capture(server, binlog, tables)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        conn.close()


# ------------------------------------------------------------------------------- the tests


def test_every_table_map_agrees_with_information_schema(capture: Capture) -> None:
    problems = {
        name: found
        for name, table in capture.tables.items()
        if (found := schema_differences(table.ours, table.columns, capture.server.mariadb))
    }
    assert problems == {}
    assert all(t.ours.has_names for t in capture.tables.values())


def test_every_table_map_agrees_with_the_library_where_it_is_right(
    capture: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = 0
    for name, table in capture.tables.items():
        if table.library is None:
            continue
        found = library_differences(table.ours, table.library, capture.server.mariadb)
        assert found == table.spec.library_wrong, name
        mine, theirs = table_metas(table.ours, table.library, monkeypatch)
        wrong = {column for column, _ in table.spec.library_wrong}
        assert [c for c in mine.columns if c.name not in wrong] == [
            c for c in theirs.columns if c.name not in wrong
        ], name
        assert len(mine.columns) == len(theirs.columns) == len(table.ours.columns)
        compared += 1
    assert compared == sum(1 for t in capture.tables.values() if not t.spec.library_unreadable)
    assert compared >= 10


def test_what_the_library_gets_wrong_we_get_right(capture: Capture) -> None:
    labels = capture.tables["labels"].ours.columns
    assert [c.enum_values for c in labels[1:3]] == [("é", "ü"), ("中", "文")]
    assert labels[3].set_values == ("ä", "b")
    prefixed = capture.tables["prefix_key"].ours
    assert prefixed.primary_key == (0, 1)
    long_names = capture.tables["long_names"].ours.columns
    assert long_names[1].name == _LONG_NAME
    assert long_names[2].enum_values == ("x" * 130, "y")


def test_the_multibyte_column_count_and_long_char(capture: Capture) -> None:
    wide = capture.tables["wide"]
    assert wide.event[19 + 8 + (2 + len(SCHEMA)) + (2 + len("wide"))] == 0xFC  # then 2 bytes
    assert len(wide.ours.columns) == 260
    strings = {c.name: c for c in capture.tables["strings"].ours.columns}
    assert (strings["c255"].type, strings["c255"].max_length) == (254, 1020)
    assert (strings["c100"].type, strings["c100"].max_length) == (254, 300)


def test_server_differences(capture: Capture) -> None:
    """MariaDB logs a charset for GEOMETRY, its JSON is a LONGTEXT, it logs no visibility."""
    geometry = capture.tables["geometry"].ours.columns
    invisible = capture.tables["invisible"].ours.columns
    json = capture.tables["blobs"].ours.columns[-1]
    if capture.server.mariadb:
        assert {c.collation_name for c in geometry[:8]} == {"binary"}
        assert (json.type, json.collation_name) == (252, "utf8mb4_bin")
        assert [c.visible for c in invisible] == [True, True, True]
    else:
        assert {c.collation_name for c in geometry[:8]} == {None}
        assert (json.type, json.collation_name) == (245, None)
        assert [c.visible for c in invisible] == [True, False, True]
    assert geometry[8].collation_name == "latin1_swedish_ci"


def test_the_comparisons_catch_a_mismatch(capture: Capture) -> None:
    """The checks above can fail: a decode with one wrong flag and one wrong label is caught by
    both oracles, naming the column and the attribute."""
    table = capture.tables["enums"]
    columns = list(table.ours.columns)
    columns[5] = replace(columns[5], unsigned=False)
    columns[0] = replace(columns[0], enum_values=("红", "绿", "blue"))
    broken = replace(table.ours, columns=tuple(columns))
    assert library_differences(broken, table.library, capture.server.mariadb) == {
        ("n", "unsigned"),
        ("e", "enum_values"),
    }
    assert schema_differences(broken, table.columns, capture.server.mariadb) == [
        "e.enum_values: ('红', '绿', 'blue') != ('红', '绿', '蓝 blue')",
        "n.unsigned: False != True",
    ]


def test_collation_names_match_the_server(capture: Capture) -> None:
    """Every collation id the server has, named as the server names it."""
    from bridge.parse.binlog.table_map import collation_name

    conn = capture.server.connect()
    try:
        with conn.cursor() as cur:
            if capture.server.mariadb:  # UCA 14.0.0 collations apply to several charsets
                cur.execute(
                    "SELECT ID, FULL_COLLATION_NAME"
                    " FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY"
                )
            else:
                cur.execute("SELECT ID, COLLATION_NAME FROM information_schema.COLLATIONS")
            rows = cur.fetchall()
    finally:
        conn.close()
    wrong = {
        row[0]: (row[1], collation_name(row[0], mariadb=capture.server.mariadb))
        for row in rows
        if collation_name(row[0], mariadb=capture.server.mariadb) != row[1]
    }
    assert wrong == {}
    assert len(rows) > 250


def global_row_metadata(cur: Any) -> str:
    cur.execute("SELECT @@GLOBAL.binlog_row_metadata")
    row = cur.fetchone()
    assert row is not None
    return str(row[0])


def test_minimal_metadata_has_no_names(capture: Capture) -> None:
    """binlog_row_metadata is GLOBAL only on both servers: set for one insert, then restored.
    MINIMAL still logs signedness and charsets (the library dropped them without names)."""
    server = capture.server
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            before = global_row_metadata(cur)
            start = binlog_end(conn)
            cur.execute("SET GLOBAL binlog_row_metadata = MINIMAL")
            try:
                cur.execute(f"INSERT INTO {SCHEMA}.numbers () VALUES ()")
                cur.execute(f"INSERT INTO {SCHEMA}.enums () VALUES ()")
            finally:
                cur.execute(f"SET GLOBAL binlog_row_metadata = {before}")
            assert global_row_metadata(cur) == before
    finally:
        conn.close()
    binlog = dump(server, start)
    events = list(binlog.table_maps(SCHEMA))
    minimal = Capture(server, binlog, {})
    numbers, enums = (minimal.decode(e) for e in events)
    assert (numbers.table, enums.table) == ("numbers", "enums")
    assert not numbers.has_names and not enums.has_names
    assert {c.name for c in numbers.columns + enums.columns} == {""}
    assert {c.is_primary for c in numbers.columns} == {False}
    assert {c.enum_values for c in enums.columns} == {()}
    assert {c.collation_name for c in enums.columns} == {None}  # ENUM/SET charsets are FULL's
    full = capture.tables["numbers"].ours.columns
    assert [c.unsigned for c in numbers.columns] == [c.unsigned for c in full]
    library = minimal.library(events[0])
    assert {c.name for c in library.columns} == {None}
    assert not any(c.unsigned for c in library.columns)  # the library drops SIGNEDNESS
    columns = capture.tables["numbers"].columns
    definition = TableDefinition(
        numbers.schema,
        numbers.table,
        tuple(ColumnDefinition(c["name"], c["column_type"]) for c in columns),
        tuple(c["name"] for c in columns if c["column_key"] == "PRI"),
    )
    meta = build_table_meta(
        numbers.schema, numbers.table, numbers.columns, numbers.null_bitmask, definition
    )
    assert [c.name for c in meta.columns] == [c["name"] for c in capture.tables["numbers"].columns]
    assert [c.unsigned for c in meta.columns] == [c.unsigned for c in full]
