"""Snapshot rows equal the binlog reader's rows, Column by Column, on MariaDB and MySQL.

The twin test: tables over the type corpus of ``test_parser_types`` (its values reused) get
rows; the rows are read from the binlog by the real parser and through ``describe_table`` +
``SELECT`` + ``row_data``, in both value modes and both binary encodings, TIMESTAMPs rendered
in a zone with daylight saving time; every Column (value, sqlType, mysqlType, isKey, isNull,
updated, index, name) must be equal. The comparison is shown to fail when the snapshot renders
with other options. Keyset pagination with ``key_values`` reads composite, binary, collated
text and temporal keys whole, each row once.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from bridge.entry import Column
from bridge.parse.binlog.values import BinaryEncoding, DecodeOptions, ValueMode
from bridge.parse.parser import BinlogParser
from bridge.parse.source import binlog_status, parse_time_zone, server_version
from bridge.snapshot.rows import (
    SnapshotTable,
    TableWithoutKey,
    decode_key,
    describe_table,
    encode_key,
    key_values,
    prepare_connection,
    row_data,
)
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import (
    Connection,
    execute,
    master_position,
    read_entries,
    rows_of,
    source_config,
)
from tests.integration.test_parser_types import (
    BIG,
    BIG_VECTOR,
    JSON_DOC,
    LABELS_300,
    MAX65,
    MEGABYTE,
    MEMBERS_9,
    MEMBERS_64,
    TEMPORAL_INSERTS,
    _labels,
    _temporal_table,
)

pytestmark = pytest.mark.both_servers

ZONE = "America/New_York"  # not UTC, with daylight saving time
Insert = str | tuple[str, tuple[Any, ...]]

# name -> (CREATE TABLE, inserts, servers). The values are test_parser_types' where it has them.
CORPUS: dict[str, tuple[str, list[Insert], tuple[str, ...]]] = {
    "ints": (
        "CREATE TABLE ints (id INT NOT NULL PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, "
        "si SMALLINT, su SMALLINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, "
        "iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, z INT(5) ZEROFILL, flag BOOLEAN)",
        [
            "INSERT INTO ints VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, "
            "-9223372036854775808, 0, 0, FALSE)",
            "INSERT INTO ints VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, "
            "4294967295, 9223372036854775807, 18446744073709551615, 42, TRUE)",
            "INSERT INTO ints VALUES (3, -1, 128, -1, 32768, -1, 8388608, -1, 2147483648, -1, "
            "9223372036854775808, 99999, 7)",
            "INSERT INTO ints (id) VALUES (4)",
        ],
        ("mariadb", "mysql"),
    ),
    "decs": (
        "CREATE TABLE decs (id INT PRIMARY KEY, d1 DECIMAL(12,2), d2 DECIMAL(10,0), "
        "d3 DECIMAL(5,5), d4 DECIMAL(65,30), d5 DECIMAL(20,9), d6 DECIMAL(3,1), "
        "du DECIMAL(10,4) UNSIGNED)",
        [
            f"INSERT INTO decs VALUES (1, 5, 1234567890, 0.12345, {BIG}, 123456789.000000001, "
            "-0.5, 1)",
            f"INSERT INTO decs VALUES (2, -1234567890.12, -9999999999, -0.00001, -{MAX65}, "
            "-1.000000000, -99.9, 999999.9999)",
            "INSERT INTO decs VALUES (3, 0, 0, 0, 0, 0, 0, 0)",
            "INSERT INTO decs VALUES (4, 9999999999.99, 1, 0.99999, "
            "0.000000000000000000000000000001, 99999999999.999999999, 0.1, 0.0001)",
            "INSERT INTO decs (id) VALUES (5)",
        ],
        ("mariadb", "mysql"),
    ),
    "fl": (
        "CREATE TABLE fl (id INT PRIMARY KEY, f FLOAT, d DOUBLE, f73 FLOAT(7,3), "
        "d102 DOUBLE(10,2))",
        [
            "INSERT INTO fl VALUES (1, 1.5, 100, 1.5, 3.14)",
            "INSERT INTO fl VALUES (2, 1e10, 1e-5, -1234.567, -99999999.99)",
            "INSERT INTO fl VALUES (3, 0.1, 0.001, 0.001, 0.01)",
            "INSERT INTO fl VALUES (4, -3.4028234e38, 1.7976931348623157e308, 0, 0)",
            "INSERT INTO fl VALUES (5, 1e7, 1234567.125, 1, 1)",
            "INSERT INTO fl VALUES (6, 1.17549435e-38, -2.5e-300, 2, 2)",
            "INSERT INTO fl VALUES (7, 16777217, 4.9e-324, 3, 3)",
            "INSERT INTO fl VALUES (8, 0.3333333, 0.1, 4, 4)",
            "INSERT INTO fl VALUES (9, NULL, NULL, NULL, NULL)",
        ],
        ("mariadb", "mysql"),
    ),
    "tm": (
        _temporal_table()[0],
        [*TEMPORAL_INSERTS, "INSERT INTO tm (id) VALUES (6)"],
        ("mariadb", "mysql"),
    ),
    "tz": (  # in July and January: New York's two offsets; the hour repeated in November
        "CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, ts0 TIMESTAMP NULL)",
        [
            "INSERT INTO tz VALUES (1, '2024-07-04 12:00:00.250', '2024-01-15 12:00:00')",
            "INSERT INTO tz VALUES (2, '2024-11-03 05:30:00.5', '2024-11-03 06:30:00')",
            "INSERT INTO tz VALUES (3, '1970-01-01 00:00:01', '2038-01-19 03:14:07')",
        ],
        ("mariadb", "mysql"),
    ),
    "txt": (
        "CREATE TABLE txt (id INT PRIMARY KEY, vc VARCHAR(64), c10 CHAR(10), "
        "l1 CHAR(10) CHARACTER SET latin1, lv VARCHAR(20) CHARACTER SET latin1, tx TEXT, "
        "js JSON, g VARCHAR(10) CHARACTER SET gbk, cy CHAR(5) CHARACTER SET cp1251, "
        "bi VARCHAR(8) COLLATE utf8mb4_bin, u16 VARCHAR(8) CHARACTER SET utf16) "
        "CHARACTER SET utf8mb4",
        [
            (
                "INSERT INTO txt VALUES (1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    "😀 emoji 中文 ü",
                    "ab",
                    "café €",
                    "Ÿ‰ latin1 ",
                    "line1\nline2\ttab",
                    JSON_DOC,
                    "中文",
                    "Жаба",
                    "Bin",
                    "𝄞 x",
                ),
            ),
            ("INSERT INTO txt VALUES (2, '', '', '', '', '', '[]', '', '', '', '')", ()),
            (
                "INSERT INTO txt VALUES (3, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    "🦄" * 64,
                    "🦄" * 10,
                    "ab  ",
                    "x",
                    "'quoted' \\ back",
                    '"just a string"',
                    "a  ",
                    "я ",
                    "tail  ",
                    "y ",
                ),
            ),
            "INSERT INTO txt (id) VALUES (4)",
        ],
        ("mariadb", "mysql"),
    ),
    "bin": (
        "CREATE TABLE bin (id INT PRIMARY KEY, vb VARBINARY(16), bn BINARY(4), bl MEDIUMBLOB)",
        [
            ("INSERT INTO bin VALUES (1, %s, %s, %s)", (b"\x00\xff\x7f\x80", b"ab", MEGABYTE)),
            ("INSERT INTO bin VALUES (2, %s, %s, %s)", (b"", b"\x00a\x00b", b"")),
            ("INSERT INTO bin VALUES (3, %s, %s, %s)", (b"\x00\x00", b"\xe9\x00\x00\x00", b"\x00")),
            ("INSERT INTO bin VALUES (4, %s, %s, %s)", (b"x \x00", b"\x00\x00\x00\x00", b" ")),
            "INSERT INTO bin (id) VALUES (5)",
        ],
        ("mariadb", "mysql"),
    ),
    "es": (
        "CREATE TABLE es (id INT PRIMARY KEY, e ENUM('a','it''s','c'), s SET('x','y','z'), "
        "b1 BIT(1), b64 BIT(64), el ENUM('é','ü') CHARACTER SET latin1)",
        [
            "INSERT INTO es VALUES (1, 'it''s', 'x,z', b'1', b'" + "1" * 64 + "', 'ü')",
            "INSERT INTO es VALUES (2, 'a', '', b'0', 1, 'é')",
            "INSERT INTO es VALUES (3, 'c', 'z,y,x', 0, 9223372036854775808, NULL)",
            "INSERT INTO es VALUES (4, 'nope', 'y', 1, 0, 'x')",  # sql_mode='': the '' value
            "INSERT INTO es (id) VALUES (5)",
        ],
        ("mariadb", "mysql"),
    ),
    "sz": (
        f"CREATE TABLE sz (id INT PRIMARY KEY, e2 ENUM({_labels(LABELS_300)}), "
        f"s2 SET({_labels(MEMBERS_9)}), s8 SET({_labels(MEMBERS_64)}), b9 BIT(9), b17 BIT(17), "
        "c63 CHAR(63), c255 CHAR(255), v63 VARCHAR(63), v300 VARCHAR(300), "
        "lv300 VARCHAR(300) CHARACTER SET latin1, tt TINYTEXT, tb TINYBLOB, mt MEDIUMTEXT, "
        "lt LONGTEXT, lb LONGBLOB) CHARACTER SET utf8mb4",
        [
            (
                "INSERT INTO sz VALUES (1, 'v299', 'm0,m8', %s, b'111111111', "
                "b'10000000000000001', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    ",".join(MEMBERS_64),
                    "é" * 63,
                    "😀" * 255,
                    "ß" * 63,
                    "中" * 300,
                    "ÿ" * 300,
                    "t" * 255,
                    bytes(range(255)),
                    "m" * 70000,
                    "l" * 100,
                    b"\xff" * 70000,
                ),
            ),
            "INSERT INTO sz (id, e2, s8) VALUES (2, 'v000', 's63')",
        ],
        ("mariadb", "mysql"),
    ),
    "geo": (
        "CREATE TABLE geo (id INT PRIMARY KEY, g GEOMETRY, p POINT, y YEAR)",
        [
            "INSERT INTO geo VALUES (1, ST_GeomFromText('POINT(1 2)'), "
            "ST_GeomFromText('POINT(1 2)'), 1999)",
            "INSERT INTO geo VALUES (2, ST_GeomFromText('LINESTRING(0 0, 1.5 -1.5)', 4326), "
            "NULL, 2155)",
            "INSERT INTO geo VALUES (3, NULL, NULL, 0)",
        ],
        ("mariadb", "mysql"),
    ),
    "ck": (  # a composite primary key: is_key on its columns only
        "CREATE TABLE ck (a VARCHAR(8) NOT NULL, n INT, b BIGINT NOT NULL, u INT UNIQUE, "
        "PRIMARY KEY (b, a), KEY (n))",
        ["INSERT INTO ck VALUES ('k', 1, 2, 3)", "INSERT INTO ck VALUES ('K2', 1, 2, 4)"],
        ("mariadb", "mysql"),
    ),
    "uq": (  # no primary key: the unique NOT NULL index chunks it
        "CREATE TABLE uq (a INT NULL, code VARCHAR(8) NOT NULL, v INT, UNIQUE KEY (a), "
        "UNIQUE KEY by_code (code))",
        ["INSERT INTO uq VALUES (1, 'x', 10)", "INSERT INTO uq VALUES (NULL, 'y', 20)"],
        ("mariadb", "mysql"),
    ),
    "jd": (  # MySQL's binary JSON
        "CREATE TABLE jd (id INT PRIMARY KEY, j JSON)",
        [
            (
                "INSERT INTO jd VALUES (1, %s)",
                (
                    '{"n": [0, -1, 32767, 32768, -32769, 2147483648, -9223372036854775808, '
                    "18446744073709551615, 18446744073709551616, 1e20, 3.0, -0.0, 1e-7, 0.1, "
                    '123456789.125], "s": "\\u0000\\n\\t\\"\\\\ é 😀", "z": {}, "a": [], '
                    '"l": [true, false, null], "中文": {"deep": [[[{"x": 1}]]]}}',
                ),
            ),
            ("INSERT INTO jd VALUES (2, %s)", ('"top-level string"',)),
            ("INSERT INTO jd VALUES (3, '12345678901234')", ()),
            ("INSERT INTO jd VALUES (4, 'null')", ()),
            ("INSERT INTO jd VALUES (5, %s)", ('{"big": "' + "x" * 70000 + '", "k": [1, 2]}',)),
            (
                "INSERT INTO jd VALUES (6, %s)",
                ("[" + ",".join(f'{{"k{i}": {i}.5}}' for i in range(3000)) + "]",),
            ),
            (
                "INSERT INTO jd VALUES (7, "
                "JSON_OBJECT('dt', CAST('2024-01-02 03:04:05' AS DATETIME)))",
                (),
            ),
            "INSERT INTO jd VALUES (8, NULL)",
        ],
        ("mysql",),
    ),
    "vec": (
        "CREATE TABLE vec (id INT PRIMARY KEY, v VECTOR(3), big VECTOR, s VARCHAR(4))",
        [
            "INSERT INTO vec VALUES (1, STRING_TO_VECTOR('[1,2,3.5]'), NULL, 'ä')",
            (
                "INSERT INTO vec VALUES (2, STRING_TO_VECTOR('[-0.1,1e30,1.17549435e-38]'), "
                "STRING_TO_VECTOR(%s), 'x')",
                ("[" + ",".join(map(str, BIG_VECTOR)) + "]",),
            ),
            ("INSERT INTO vec VALUES (3, x'01000000', STRING_TO_VECTOR('[-0]'), NULL)", ()),
        ],
        ("mysql",),
    ),
    "inv": (
        "CREATE TABLE inv (id INT PRIMARY KEY, c INT INVISIBLE, a INT, d VARCHAR(4) INVISIBLE)",
        ["INSERT INTO inv VALUES (1, 10)", "INSERT INTO inv (id, a, c, d) VALUES (2, 20, 30, 'x')"],
        ("mysql",),
    ),
}

OPTIONS = [(mode, encoding) for mode in ("faithful", "canal") for encoding in ("latin1", "base64")]


def _create_and_fill(
    mysql: MysqlEndpoint, conn: Connection, schema: str
) -> tuple[list[str], Any, Any]:
    """Create the corpus tables of this server and insert their rows (a transaction each):
    the tables, and the binlog positions before and after the inserts."""
    conn.select_db(schema)
    execute(conn, "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'")
    mine = [name for name, (_, _, servers) in CORPUS.items() if mysql.flavor in servers]
    for name in mine:
        execute(conn, CORPUS[name][0])
    start = master_position(conn)
    with conn.cursor() as cur:
        for name in mine:
            for insert in CORPUS[name][1]:
                if isinstance(insert, tuple):
                    cur.execute(insert[0], insert[1])
                else:
                    cur.execute(insert)
    return mine, start, master_position(conn)


def _stream_rows(
    mysql: MysqlEndpoint, schema: str, start: Any, end: Any, options: DecodeOptions
) -> dict[str, list[tuple[Column, ...]]]:
    reader = functools.partial(BinlogParser, values=options)
    entries = read_entries(source_config(mysql), start, end, time_zone=ZONE, reader=reader)
    by_table: dict[str, list[tuple[Column, ...]]] = {}
    for entry in rows_of(entries):
        if entry.header.schema_name != schema:
            continue
        assert entry.row_change is not None
        for row in entry.row_change.row_datas:
            assert row.before == ()
            by_table.setdefault(entry.header.table_name, []).append(row.after)
    return by_table


def _snapshot_rows(
    conn: Connection, schema: str, name: str, options: DecodeOptions
) -> tuple[SnapshotTable, list[tuple[Column, ...]]]:
    table = describe_table(conn, schema, name, options)
    assert table is not None
    order = ", ".join(f"`{column}`" for column in table.key_columns)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {table.select_list} FROM `{schema}`.`{name}` ORDER BY {order}")
        raws = cur.fetchall()
    return table, [row_data(table, raw).after for raw in raws]


def _by_key(table: SnapshotTable, rows: list[tuple[Column, ...]]) -> dict[tuple[str, ...], Any]:
    keyed = {}
    for row in rows:
        values = {c.name: c.value for c in row}
        keyed[tuple(values[name] for name in table.key_columns)] = row
    assert len(keyed) == len(rows), "keys are unique"
    return keyed


@pytest.mark.parametrize(("value_mode", "binary_encoding"), OPTIONS)
def test_snapshot_rows_equal_the_binlog_rows(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    value_mode: ValueMode,
    binary_encoding: BinaryEncoding,
) -> None:
    tables, start, end = _create_and_fill(mysql, admin_connection, scratch_schema)
    options = DecodeOptions(parse_time_zone(ZONE), value_mode, binary_encoding)
    stream = _stream_rows(mysql, scratch_schema, start, end, options)
    prepare_connection(admin_connection, options)
    other = DecodeOptions(
        parse_time_zone(ZONE),
        "faithful" if value_mode == "canal" else "canal",
        "latin1" if binary_encoding == "base64" else "base64",
    )
    compared = differing = 0
    for name in tables:
        table, snapshot = _snapshot_rows(admin_connection, scratch_schema, name, options)
        expected = _by_key(table, stream[name])
        got = _by_key(table, snapshot)
        assert got.keys() == expected.keys(), f"rows of {name}"
        for key, row in got.items():
            for mine, theirs in zip(row, expected[key], strict=True):
                assert mine == theirs, f"{name} {key}: {mine} != stream's {theirs}"
                compared += 1
        # The comparison can fail: rendered with the other options, rows differ.
        _, others = _snapshot_rows(admin_connection, scratch_schema, name, other)
        differing += sum(
            a != b for a, b in zip(_by_key(table, others).values(), got.values(), strict=True)
        )
    assert compared > 300
    assert differing > 5


# ------------------------------------------------------------------ keys and keyset pagination

KEYED = {
    "bk": (
        "CREATE TABLE bk (k VARBINARY(16) NOT NULL, b BINARY(4) NOT NULL, v INT, "
        "PRIMARY KEY (k, b))",
        [
            (b"\x00", b"\x00\x00\x00\x00"),
            (b"\x00", b"\x00\x00\x00\x01"),
            (b"\x00\x00", b"a"),
            (b"\x7f", b"\xff"),
            (b"\x80", b""),
            (b"\xff\xff", b"zz"),
        ],
    ),
    "ci": (  # case- and accent-insensitive text, and latin1
        "CREATE TABLE ci (k VARCHAR(8) NOT NULL, l VARCHAR(8) CHARACTER SET latin1 NOT NULL, "
        "v INT, PRIMARY KEY (k, l))",
        [("a", "é"), ("B", "e"), ("c", "É"), ("ä", "z"), ("Z", "ÿ"), ("😀", "a")],
    ),
    "tk": (  # temporal and decimal keys, TIMESTAMP read in the session's +00:00
        "CREATE TABLE tk (t TIMESTAMP(3) NOT NULL, d DATETIME(6) NOT NULL, "
        "m DECIMAL(30,10) NOT NULL, v INT, PRIMARY KEY (t, d, m))",
        [
            ("2024-11-03 05:30:00.5", "2024-01-01 00:00:00", "12345678901234567890.0000000001"),
            ("2024-11-03 05:30:00.5", "2024-01-01 00:00:00.000001", "-1"),
            ("2024-11-03 06:30:00", "1000-01-01 00:00:00", "0"),
            ("1970-01-01 00:00:01", "9999-12-31 23:59:59.999999", "1"),
        ],
    ),
}


@pytest.mark.parametrize("name", list(KEYED))
def test_keyset_pages_read_every_row_once_in_key_order(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str, name: str
) -> None:
    create, keys = KEYED[name]
    admin_connection.select_db(scratch_schema)
    execute(admin_connection, "SET SESSION time_zone = '+00:00'", create)
    with admin_connection.cursor() as cur:
        for number, key in enumerate(keys):
            cur.execute(
                f"INSERT INTO {name} VALUES ({', '.join(['%s'] * len(key))}, %s)", (*key, number)
            )
        cur.execute(f"SELECT v FROM {name} ORDER BY {_key_list(name)}")
        expected = [row[0] for row in cur.fetchall()]
    options = DecodeOptions()
    prepare_connection(admin_connection, options)
    table = describe_table(admin_connection, scratch_schema, name, options)
    assert table is not None
    seen: list[int] = []
    after: tuple[Any, ...] | None = None
    order = ", ".join(f"`{c}`" for c in table.key_columns)
    with admin_connection.cursor() as cur:
        for _ in range(len(keys) + 1):
            where = ""
            if after is not None:
                where = f"WHERE ({order}) > ({', '.join(['%s'] * len(after))})"
            cur.execute(
                f"SELECT {table.select_list} FROM {name} {where} ORDER BY {order} LIMIT 2",
                after,
            )
            page = cur.fetchall()
            if not page:
                break
            for raw in page:
                row = {c.name: c.value for c in row_data(table, raw).after}
                seen.append(int(row["v"]))
            after = decode_key(encode_key(key_values(table, page[-1])))
            assert decode_key(encode_key(after)) == after
    assert seen == expected
    assert len(seen) == len(keys)


def _key_list(name: str) -> str:
    return {"bk": "k, b", "ci": "k, l", "tk": "t, d, m"}[name]


def test_a_keyless_table_is_refused_with_its_one_line(
    admin_connection: Connection, scratch_schema: str
) -> None:
    admin_connection.select_db(scratch_schema)
    execute(
        admin_connection,
        "CREATE TABLE heap (a INT, b INT, UNIQUE KEY (a))",  # unique but nullable: no key
        "CREATE TABLE pre (t VARCHAR(20) NOT NULL, UNIQUE KEY (t(4)))",  # a prefix: no key
    )
    prepare_connection(admin_connection, DecodeOptions())
    for table in ("heap", "pre"):
        with pytest.raises(TableWithoutKey) as raised:
            describe_table(admin_connection, scratch_schema, table, DecodeOptions())
        message = str(raised.value)
        assert "\n" not in message
        assert message.startswith(f"table {scratch_schema}.{table} has no primary key")
        assert message.endswith("add one, or narrow snapshot.tables")
    assert describe_table(admin_connection, scratch_schema, "gone", DecodeOptions()) is None


def test_the_binlog_end_on_a_prepared_connection_names_its_file_as_text(
    admin_connection: Connection, mysql: MysqlEndpoint
) -> None:
    # The high watermark is read on the snapshot's connection, whose results are binary: the
    # file name came back as bytes and was compared as "b'mariadb-bin.000001'", which sorts
    # before every real name, so a chunk went in before the stream reached its watermark.
    server = server_version(admin_connection)  # as the reader does: asked before preparing
    plain = binlog_status(admin_connection, server)
    prepare_connection(admin_connection, DecodeOptions())
    prepared = binlog_status(admin_connection, server)
    assert prepared.position.journal_name == plain.position.journal_name
    assert isinstance(prepared.position.journal_name, str)
    assert not prepared.position.journal_name.startswith("b'")
    assert prepared.gtid_set == plain.gtid_set and not prepared.gtid_set.startswith("b'")
