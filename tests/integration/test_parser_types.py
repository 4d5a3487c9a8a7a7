"""The parser on real MariaDB and MySQL servers: one table per type family, values rendered as
canal text.

Every expected value below is written out literally, worked out from MySQL's storage rules and
canal's renderings (``RowsLogBuffer.fetchValue`` + ``LogEventConvert.parseOneRow``), never by
calling the decoder. Per column: the text (``None`` for NULL), the JDBC ``sql_type``, the
declared ``mysql_type`` and ``is_key``. Where the servers differ (display widths, JSON, ...) the
expectation says so per server; the MySQL 8/9 types (0900 collations, invisible and hidden
columns, VECTOR) have tests of their own.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import pytest

from bridge import native
from bridge.entry import Column, Entry, EventType
from bridge.mq.rendering import EventRenderer
from bridge.parse.exceptions import SchemaMismatch
from bridge.parse.parser import BinlogParser
from bridge.types import JdbcType as J
from tests.conftest import MysqlEndpoint, declared
from tests.integration.binlog_helpers import (
    Connection,
    execute,
    master_position,
    read_entries,
    rows_of,
    source_config,
)
from tests.native_paths import (
    assert_compiled_records_match,
    assert_event_records_match,
    compiled_module,
    read_by_compiled_reader,
)

Expected = dict[str, tuple[str | None, int]]

pytestmark = pytest.mark.both_servers


@pytest.fixture(autouse=True, params=["python", "compiled"])
def parse_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every expectation below holds for the pure-Python decoders and the compiled reader."""
    path: str = request.param
    monkeypatch.setattr(native, "module", compiled_module() if path == "compiled" else None)
    return path


def _inserted(
    mysql: MysqlEndpoint,
    conn: Connection,
    schema: str,
    create: str,
    inserts: list[str | tuple[str, tuple[Any, ...]]],
    *,
    time_zone: str = "UTC",
    session: tuple[str, ...] = (),
) -> list[Entry]:
    """Run the ``session`` statements, create the table, run the inserts (one transaction
    each) and read back their rows entries for ``schema``, one per insert."""
    conn.select_db(schema)
    execute(conn, *session, create)
    start = master_position(conn)
    with conn.cursor() as cur:
        for insert in inserts:
            if isinstance(insert, tuple):
                cur.execute(insert[0], insert[1])
            else:
                cur.execute(insert)
    end = master_position(conn)
    entries = read_entries(source_config(mysql), start, end, time_zone=time_zone)
    mine = [e for e in rows_of(entries) if e.header.schema_name == schema]
    assert len(mine) == len(inserts)
    for entry in mine:
        assert entry.header.event_type is EventType.INSERT
    assert_compiled_records_match(mine)
    if native.module is not None:
        assert read_by_compiled_reader(mine)
        # The same events written from their bytes by the parser: the same records.
        parser = functools.partial(BinlogParser, encode_event=EventRenderer(1 << 30))
        ahead = read_entries(source_config(mysql), start, end, time_zone=time_zone, reader=parser)
        assert_event_records_match(
            mine, [e for e in rows_of(ahead) if e.header.schema_name == schema]
        )
    return mine


def _after(entry: Entry) -> dict[str, Column]:
    assert entry.row_change is not None
    (row,) = entry.row_change.row_datas
    assert row.before == ()
    return {c.name: c for c in row.after}


def _check(
    mysql: MysqlEndpoint,
    entries: list[Entry],
    expected_rows: list[Expected],
    mysql_types: dict[str, str],
    keys: tuple[str, ...] = ("id",),
) -> None:
    """``mysql_types`` as MariaDB prints them (``declared``)."""
    mysql_types = {name: declared(mysql, text) for name, text in mysql_types.items()}
    for entry, expected in zip(entries, expected_rows, strict=True):
        columns = _after(entry)
        assert list(columns) == list(mysql_types), "column names and order"
        assert [c.index for c in columns.values()] == list(range(len(columns)))
        for name, (value, sql_type) in expected.items():
            column = columns[name]
            got = (None if column.is_null else column.value, column.sql_type)
            assert got == (value, sql_type), f"column {name}"
            if value is None:
                assert column.value == ""
            assert column.updated, f"INSERT marks {name} updated"
        for name, mysql_type in mysql_types.items():
            assert columns[name].mysql_type == mysql_type, f"mysql_type of {name}"
            assert columns[name].is_key is (name in keys), f"is_key of {name}"


# --------------------------------------------------------------------------- integers

INT_TYPES = {
    "id": "int(11)",
    "ti": "tinyint(4)",
    "tu": "tinyint(3) unsigned",
    "si": "smallint(6)",
    "su": "smallint(5) unsigned",
    "mi": "mediumint(9)",
    "mu": "mediumint(8) unsigned",
    "i": "int(11)",
    "iu": "int(10) unsigned",
    "bi": "bigint(20)",
    "bu": "bigint(20) unsigned",
}


def test_integers_min_max_signed_unsigned(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    create = (
        "CREATE TABLE ints ("
        + ", ".join(
            f"{name} {decl.split('(')[0]}{' UNSIGNED' if 'unsigned' in decl else ''}"
            + (" NOT NULL PRIMARY KEY" if name == "id" else "")
            for name, decl in INT_TYPES.items()
        )
        + ")"
    )
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
        [
            "INSERT INTO ints VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, "
            "-9223372036854775808, 0)",
            "INSERT INTO ints VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, "
            "4294967295, 9223372036854775807, 18446744073709551615)",
            "INSERT INTO ints VALUES (3, -1, 128, -1, 32768, -1, 8388608, -1, 2147483648, -1, "
            "9223372036854775808)",
            "INSERT INTO ints VALUES (4, 0, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, "
            "9223372036854775807)",
            "INSERT INTO ints (id) VALUES (5)",
        ],
    )
    _check(
        mysql,
        entries,
        [
            {
                "id": ("1", J.INTEGER),
                "ti": ("-128", J.TINYINT),
                "tu": ("0", J.TINYINT),
                "si": ("-32768", J.SMALLINT),
                "su": ("0", J.SMALLINT),
                "mi": ("-8388608", J.INTEGER),
                "mu": ("0", J.INTEGER),
                "i": ("-2147483648", J.INTEGER),
                "iu": ("0", J.INTEGER),
                "bi": ("-9223372036854775808", J.BIGINT),
                "bu": ("0", J.BIGINT),
            },
            {  # unsigned values past the signed range: canal widens the JDBC type
                "ti": ("127", J.TINYINT),
                "tu": ("255", J.SMALLINT),
                "si": ("32767", J.SMALLINT),
                "su": ("65535", J.INTEGER),
                "mi": ("8388607", J.INTEGER),
                "mu": ("16777215", J.INTEGER),
                "i": ("2147483647", J.INTEGER),
                "iu": ("4294967295", J.BIGINT),
                "bi": ("9223372036854775807", J.BIGINT),
                "bu": ("18446744073709551615", J.DECIMAL),
            },
            {
                "ti": ("-1", J.TINYINT),
                "tu": ("128", J.SMALLINT),
                "su": ("32768", J.INTEGER),
                "mi": ("-1", J.INTEGER),
                "mu": ("8388608", J.INTEGER),
                "iu": ("2147483648", J.BIGINT),
                "bi": ("-1", J.BIGINT),
                "bu": ("9223372036854775808", J.DECIMAL),
            },
            {  # the largest unsigned values that still fit the signed type keep it
                "tu": ("127", J.TINYINT),
                "su": ("32767", J.SMALLINT),
                "iu": ("2147483647", J.INTEGER),
                "bu": ("9223372036854775807", J.BIGINT),
            },
            {
                "id": ("5", J.INTEGER),
                "ti": (None, J.TINYINT),
                "tu": (None, J.TINYINT),
                "si": (None, J.SMALLINT),
                "su": (None, J.SMALLINT),
                "mi": (None, J.INTEGER),
                "mu": (None, J.INTEGER),
                "i": (None, J.INTEGER),
                "iu": (None, J.INTEGER),
                "bi": (None, J.BIGINT),
                "bu": (None, J.BIGINT),
            },
        ],
        INT_TYPES,
    )


# --------------------------------------------------------------------------- DECIMAL

DECIMAL_TYPES = {
    "id": "int(11)",
    "d1": "decimal(12,2)",
    "d2": "decimal(10,0)",
    "d3": "decimal(5,5)",
    "d4": "decimal(65,30)",
    "d5": "decimal(20,9)",
    "d6": "decimal(3,1)",
}
BIG = "12345678901234567890123456789012345.123456789012345678901234567890"
MAX65 = "99999999999999999999999999999999999.999999999999999999999999999999"


def test_decimal_exact_with_scale(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    create = (
        "CREATE TABLE decs (id INT PRIMARY KEY, d1 DECIMAL(12,2), d2 DECIMAL(10,0), "
        "d3 DECIMAL(5,5), d4 DECIMAL(65,30), d5 DECIMAL(20,9), d6 DECIMAL(3,1))"
    )
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
        [
            f"INSERT INTO decs VALUES (1, 5, 1234567890, 0.12345, {BIG}, 123456789.000000001, "
            "-0.5)",
            f"INSERT INTO decs VALUES (2, -1234567890.12, -9999999999, -0.00001, -{MAX65}, "
            "-1.000000000, -99.9)",
            "INSERT INTO decs VALUES (3, 0, 0, 0, 0, 0, 0)",
            "INSERT INTO decs VALUES (4, 9999999999.99, 1, 0.99999, "
            "0.000000000000000000000000000001, 99999999999.999999999, 0.1)",
            "INSERT INTO decs (id) VALUES (5)",
        ],
    )
    d = J.DECIMAL
    _check(
        mysql,
        entries,
        [
            {
                "d1": ("5.00", d),
                "d2": ("1234567890", d),
                "d3": ("0.12345", d),
                "d4": (BIG, d),
                "d5": ("123456789.000000001", d),
                "d6": ("-0.5", d),
            },
            {
                "d1": ("-1234567890.12", d),
                "d2": ("-9999999999", d),
                "d3": ("-0.00001", d),
                "d4": ("-" + MAX65, d),
                "d5": ("-1.000000000", d),
                "d6": ("-99.9", d),
            },
            {  # zero keeps its scale and has no sign
                "d1": ("0.00", d),
                "d2": ("0", d),
                "d3": ("0.00000", d),
                "d4": ("0." + "0" * 30, d),
                "d5": ("0.000000000", d),
                "d6": ("0.0", d),
            },
            {
                "d1": ("9999999999.99", d),
                "d2": ("1", d),
                "d3": ("0.99999", d),
                "d4": ("0." + "0" * 29 + "1", d),
                "d5": ("99999999999.999999999", d),
                "d6": ("0.1", d),
            },
            {name: (None, d) for name in DECIMAL_TYPES if name != "id"},
        ],
        DECIMAL_TYPES,
    )


# --------------------------------------------------------------------------- FLOAT / DOUBLE


def test_float_double_java_to_string(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE fl (id INT PRIMARY KEY, f FLOAT, d DOUBLE)",
        [
            "INSERT INTO fl VALUES (1, 1.5, 100)",
            "INSERT INTO fl VALUES (2, 1e10, 1e-5)",
            "INSERT INTO fl VALUES (3, 0.1, 0.001)",
            "INSERT INTO fl VALUES (4, -3.4028234e38, 1.7976931348623157e308)",
            "INSERT INTO fl VALUES (5, 1e7, 1234567.125)",
            "INSERT INTO fl VALUES (6, 0, -2.5e-300)",
            "INSERT INTO fl VALUES (7, NULL, NULL)",
        ],
    )
    r, d = J.REAL, J.DOUBLE
    _check(
        mysql,
        entries,
        [
            {"f": ("1.5", r), "d": ("100.0", d)},
            {"f": ("1.0E10", r), "d": ("1.0E-5", d)},
            {"f": ("0.1", r), "d": ("0.001", d)},
            {"f": ("-3.4028235E38", r), "d": ("1.7976931348623157E308", d)},
            {"f": ("1.0E7", r), "d": ("1234567.125", d)},
            {"f": ("0.0", r), "d": ("-2.5E-300", d)},
            {"f": (None, r), "d": (None, d)},
        ],
        {"id": "int(11)", "f": "float", "d": "double"},
    )


# --------------------------------------------------------------------------- dates and times

FSPS = range(7)


def _temporal_table() -> tuple[str, dict[str, str]]:
    types = {"id": "int(11)"}
    for n in FSPS:
        suffix = f"({n})" if n else ""
        types[f"dt{n}"] = f"datetime{suffix}"
        types[f"ts{n}"] = f"timestamp{suffix}"
        types[f"t{n}"] = f"time{suffix}"
    types["d"] = "date"
    types["y"] = "year(4)"
    columns = ", ".join(
        f"{name} {decl.upper()}" + (" NULL" if name.startswith("ts") else "")
        for name, decl in types.items()
        if name != "id"
    ).replace("YEAR(4)", "YEAR")
    return f"CREATE TABLE tm (id INT PRIMARY KEY, {columns})", types


def _temporal_insert(id_: int, dt: str, ts: str, t: str, *date_year: str) -> str:
    """The same value cut to each column's fsp (no rounding or truncation by the server)."""
    values = [str(id_)]
    for n in FSPS:
        for text, width in ((dt, 19), (ts, 19), (t, t.index(".") if "." in t else len(t))):
            values.append(f"'{text[: width + (n + 1 if n else 0)]}'")
    values += date_year
    return f"INSERT INTO tm VALUES ({', '.join(values)})"


def _temporal_expected(
    dt: list[str], ts: list[str], t: list[str], d: str | None, y: str | None
) -> Expected:
    """Expected values per fsp 0..6."""
    expected: Expected = {}
    for n in FSPS:
        expected[f"dt{n}"] = (dt[n], J.TIMESTAMP)
        expected[f"ts{n}"] = (ts[n], J.TIMESTAMP)
        expected[f"t{n}"] = (t[n], J.TIME)
    expected["d"] = (d, J.DATE)
    expected["y"] = (y, J.VARCHAR)
    return expected


TEMPORAL_INSERTS = [
    _temporal_insert(
        1,
        "2024-02-29 13:14:15.123456",
        "2024-02-29 13:14:15.123456",
        "-12:34:56.123456",
        "'2024-02-29'",
        "2155",
    ),
    _temporal_insert(
        2,
        "1000-01-01 00:00:00.100000",
        "1970-01-01 00:00:01.000000",
        "-838:59:59.999999",
        "'9999-12-31'",
        "1901",
    ),
    # sql_mode='' lets zero dates in
    _temporal_insert(
        3,
        "0000-00-00 00:00:00.000000",
        "0000-00-00 00:00:00.000000",
        "00:00:00.000000",
        "'0000-00-00'",
        "0",
    ),
    _temporal_insert(
        4,
        "9999-12-31 23:59:59.999999",
        "2038-01-19 03:14:07.999999",
        "838:59:59.000000",
        "'2020-00-00'",
        "2000",
    ),
    # a negative TIME under one second; fractions of one microsecond
    _temporal_insert(
        5,
        "2000-01-01 00:00:00.000001",
        "2000-01-01 00:00:00.000001",
        "-00:00:00.500000",
        "NULL",
        "NULL",
    ),
]

TEMPORAL_EXPECTED = [
    _temporal_expected(
        [
            "2024-02-29 13:14:15",
            "2024-02-29 13:14:15.1",
            "2024-02-29 13:14:15.12",
            "2024-02-29 13:14:15.123",
            "2024-02-29 13:14:15.1234",
            "2024-02-29 13:14:15.12345",
            "2024-02-29 13:14:15.123456",
        ],
        [
            "2024-02-29 13:14:15",
            "2024-02-29 13:14:15.1",
            "2024-02-29 13:14:15.12",
            "2024-02-29 13:14:15.123",
            "2024-02-29 13:14:15.1234",
            "2024-02-29 13:14:15.12345",
            "2024-02-29 13:14:15.123456",
        ],
        [
            "-12:34:56",
            "-12:34:56.1",
            "-12:34:56.12",
            "-12:34:56.123",
            "-12:34:56.1234",
            "-12:34:56.12345",
            "-12:34:56.123456",
        ],
        "2024-02-29",
        "2155",
    ),
    _temporal_expected(
        [
            "1000-01-01 00:00:00",
            "1000-01-01 00:00:00.1",
            "1000-01-01 00:00:00.10",
            "1000-01-01 00:00:00.100",
            "1000-01-01 00:00:00.1000",
            "1000-01-01 00:00:00.10000",
            "1000-01-01 00:00:00.100000",
        ],
        [
            "1970-01-01 00:00:01",
            "1970-01-01 00:00:01.0",
            "1970-01-01 00:00:01.00",
            "1970-01-01 00:00:01.000",
            "1970-01-01 00:00:01.0000",
            "1970-01-01 00:00:01.00000",
            "1970-01-01 00:00:01.000000",
        ],
        [
            "-838:59:59",
            "-838:59:59.9",
            "-838:59:59.99",
            "-838:59:59.999",
            "-838:59:59.9999",
            "-838:59:59.99999",
            "-838:59:59.999999",
        ],
        "9999-12-31",
        "1901",
    ),
    _temporal_expected(
        [
            "0000-00-00 00:00:00",
            "0000-00-00 00:00:00.0",
            "0000-00-00 00:00:00.00",
            "0000-00-00 00:00:00.000",
            "0000-00-00 00:00:00.0000",
            "0000-00-00 00:00:00.00000",
            "0000-00-00 00:00:00.000000",
        ],
        [
            "0000-00-00 00:00:00",
            "0000-00-00 00:00:00.0",
            "0000-00-00 00:00:00.00",
            "0000-00-00 00:00:00.000",
            "0000-00-00 00:00:00.0000",
            "0000-00-00 00:00:00.00000",
            "0000-00-00 00:00:00.000000",
        ],
        [
            "00:00:00",
            "00:00:00.0",
            "00:00:00.00",
            "00:00:00.000",
            "00:00:00.0000",
            "00:00:00.00000",
            "00:00:00.000000",
        ],
        "0000-00-00",
        "0000",
    ),
    _temporal_expected(
        [
            "9999-12-31 23:59:59",
            "9999-12-31 23:59:59.9",
            "9999-12-31 23:59:59.99",
            "9999-12-31 23:59:59.999",
            "9999-12-31 23:59:59.9999",
            "9999-12-31 23:59:59.99999",
            "9999-12-31 23:59:59.999999",
        ],
        [
            "2038-01-19 03:14:07",
            "2038-01-19 03:14:07.9",
            "2038-01-19 03:14:07.99",
            "2038-01-19 03:14:07.999",
            "2038-01-19 03:14:07.9999",
            "2038-01-19 03:14:07.99999",
            "2038-01-19 03:14:07.999999",
        ],
        [
            "838:59:59",
            "838:59:59.0",
            "838:59:59.00",
            "838:59:59.000",
            "838:59:59.0000",
            "838:59:59.00000",
            "838:59:59.000000",
        ],
        "2020-00-00",
        "2000",
    ),
    _temporal_expected(
        [
            "2000-01-01 00:00:00",
            "2000-01-01 00:00:00.0",
            "2000-01-01 00:00:00.00",
            "2000-01-01 00:00:00.000",
            "2000-01-01 00:00:00.0000",
            "2000-01-01 00:00:00.00000",
            "2000-01-01 00:00:00.000001",
        ],
        [
            "2000-01-01 00:00:00",
            "2000-01-01 00:00:00.0",
            "2000-01-01 00:00:00.00",
            "2000-01-01 00:00:00.000",
            "2000-01-01 00:00:00.0000",
            "2000-01-01 00:00:00.00000",
            "2000-01-01 00:00:00.000001",
        ],
        [
            "00:00:00",  # '-00:00:00' is zero
            "-00:00:00.5",
            "-00:00:00.50",
            "-00:00:00.500",
            "-00:00:00.5000",
            "-00:00:00.50000",
            "-00:00:00.500000",
        ],
        None,
        None,
    ),
]

MYSQL_TIME_MIN = [
    (0, "-838:59:59"),
    (1, "-838:59:59.0"),
    (2, "-838:59:59.00"),
    (3, "-838:59:59.000"),
    (4, "-838:59:59.0000"),
    (5, "-838:59:59.00000"),
    (6, "-838:59:59.000000"),
]


def test_temporal_fsp_zero_dates_negative_time(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    create, types = _temporal_table()
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
        [*TEMPORAL_INSERTS, "INSERT INTO tm (id) VALUES (6)"],
        session=("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'"),
    )
    expected = list(TEMPORAL_EXPECTED)
    if mysql.flavor == "mysql":
        # MySQL's TIME range ends at -838:59:59.000000 (MariaDB's at -838:59:59.999999): the
        # server clips '-838:59:59.9...' to it (warning 1264 under sql_mode='').
        expected[1] = expected[1] | {f"t{n}": (text, J.TIME) for n, text in MYSQL_TIME_MIN}
    nulls: Expected = {name: (None, sql) for name, (_, sql) in TEMPORAL_EXPECTED[0].items()}
    _check(mysql, entries, [*expected, nulls], types)


def test_timestamp_rendered_in_the_parser_time_zone(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """The same instant, written from a +00:00 session, read in Asia/Shanghai (UTC+8)."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, dt DATETIME(3))",
        [
            "INSERT INTO tz VALUES (1, '2024-02-29 20:14:15.250', '2024-02-29 20:14:15.250')",
            "INSERT INTO tz VALUES (2, '0000-00-00 00:00:00', '0000-00-00 00:00:00')",
        ],
        time_zone="Asia/Shanghai",
        session=("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'"),
    )
    _check(
        mysql,
        entries,
        [
            {  # DATETIME has no zone: it stays as written
                "ts": ("2024-03-01 04:14:15.250", J.TIMESTAMP),
                "dt": ("2024-02-29 20:14:15.250", J.TIMESTAMP),
            },
            {
                "ts": ("0000-00-00 00:00:00.000", J.TIMESTAMP),
                "dt": ("0000-00-00 00:00:00.000", J.TIMESTAMP),
            },
        ],
        {"id": "int(11)", "ts": "timestamp(3)", "dt": "datetime(3)"},
    )


# --------------------------------------------------------------------------- text

TEXT_TYPES = {
    "id": "int(11)",
    "vc": "varchar(64)",
    "c10": "char(10)",
    "l1": "char(10)",
    "lv": "varchar(20)",
    "tx": "text",
    "js": "longtext",
}
JSON_DOC = '{"a": [1, 2.5, {"b": "ü😀 \\"q\\""}], "c": null, "中": {"d": [true, false, []]}}'


def test_text_charsets_emoji_latin1_json(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """MariaDB's JSON is a LONGTEXT: canal shows the text as written, typed CLOB. MySQL's is
    binary JSON (type 245): canal's JsonConversion text (keys as MySQL sorts them: shorter
    first, which leaves this document's order), typed VARCHAR, a NULL OTHER.

    CHAR values: both servers write CHAR(n) images without their trailing pad spaces (utf8mb4 and
    latin1 alike), and canal shows the binlog bytes as they are.
    """
    create = (
        "CREATE TABLE txt (id INT PRIMARY KEY, vc VARCHAR(64), c10 CHAR(10), "
        "l1 CHAR(10) CHARACTER SET latin1, lv VARCHAR(20) CHARACTER SET latin1, tx TEXT, "
        "js JSON) CHARACTER SET utf8mb4"
    )
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
        [
            (
                "INSERT INTO txt VALUES (1, %s, %s, %s, %s, %s, %s)",
                ("😀 emoji 中文 ü", "ab", "café €", "Ÿ‰ latin1 ", "line1\nline2\ttab", JSON_DOC),
            ),
            ("INSERT INTO txt VALUES (2, '', '', '', '', '', '[]')", ()),
            (
                "INSERT INTO txt VALUES (3, %s, %s, %s, %s, %s, %s)",
                ("🦄" * 64, "🦄" * 10, "ab  ", "x", "'quoted' \\ back", '"just a string"'),
            ),
            ("INSERT INTO txt (id) VALUES (4)", ()),
        ],
    )
    v, c, clob = J.VARCHAR, J.CHAR, J.CLOB
    js, js_null, js_declared = (
        (clob, clob, "longtext") if mysql.flavor == "mariadb" else (v, J.OTHER, "json")
    )
    _check(
        mysql,
        entries,
        [
            {
                "vc": ("😀 emoji 中文 ü", v),
                "c10": ("ab", c),
                "l1": ("café €", c),
                "lv": ("Ÿ‰ latin1 ", v),
                "tx": ("line1\nline2\ttab", clob),
                "js": (JSON_DOC, js),
            },
            {
                "vc": ("", v),
                "c10": ("", c),
                "l1": ("", c),
                "lv": ("", v),
                "tx": ("", clob),
                "js": ("[]", js),
            },
            {
                "vc": ("🦄" * 64, v),
                "c10": ("🦄" * 10, c),
                "l1": ("ab", c),
                "lv": ("x", v),
                "tx": ("'quoted' \\ back", clob),
                "js": ('"just a string"', js),
            },
            {  # canal 1.1.8's NULL types: TEXT reports CLOB
                "vc": (None, v),
                "c10": (None, c),
                "l1": (None, c),
                "lv": (None, v),
                "tx": (None, clob),
                "js": (None, js_null),
            },
        ],
        TEXT_TYPES | {"js": js_declared},
    )


# --------------------------------------------------------------------------- binary

MEGABYTE = bytes(range(256)) * 4096


def test_binary_varbinary_and_a_megabyte_blob(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """Bytes become ISO-8859-1 text (one char per byte), typed BLOB.

    BINARY(4) pads with 0x00; for single-byte charsets (binary included) the server drops
    trailing pad bytes from the binlog image, and canal shows what the binlog carries.
    """
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE bin (id INT PRIMARY KEY, vb VARBINARY(16), bn BINARY(4), bl MEDIUMBLOB)",
        [
            ("INSERT INTO bin VALUES (1, %s, %s, %s)", (b"\x00\xff\x7f\x80", b"ab", MEGABYTE)),
            ("INSERT INTO bin VALUES (2, %s, %s, %s)", (b"", b"\x00a\x00b", b"")),
            ("INSERT INTO bin VALUES (3, %s, %s, %s)", (b"\x00\x00", b"\xe9\x00\x00\x00", b"\x00")),
            ("INSERT INTO bin (id) VALUES (4)", ()),
        ],
    )
    b = J.BLOB
    _check(
        mysql,
        entries,
        [
            {
                "vb": ("\x00\xff\x7f\x80", b),
                "bn": ("ab", b),
                "bl": ("".join(map(chr, range(256))) * 4096, b),
            },
            {"vb": ("", b), "bn": ("\x00a\x00b", b), "bl": ("", b)},
            {"vb": ("\x00\x00", b), "bn": ("é", b), "bl": ("\x00", b)},
            {"vb": (None, b), "bn": (None, b), "bl": (None, b)},  # canal 1.1.8: BLOB
        ],
        {"id": "int(11)", "vb": "varbinary(16)", "bn": "binary(4)", "bl": "mediumblob"},
    )
    assert len(_after(entries[0])["bl"].value) == 1 << 20


# --------------------------------------------------------------------------- ENUM, SET, BIT


def test_enum_set_labels_and_bits(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """ENUM/SET are rendered as labels (faithful mode) with canal's sql_types (INTEGER, BIT;
    a NULL SET BLOB); BIT as the unsigned number."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE es (id INT PRIMARY KEY, e ENUM('a','it''s','c'), s SET('x','y','z'), "
        "b1 BIT(1), b64 BIT(64))",
        [
            "INSERT INTO es VALUES (1, 'it''s', 'x,z', b'1', b'" + "1" * 64 + "')",
            "INSERT INTO es VALUES (2, 'a', '', b'0', 1)",
            "INSERT INTO es VALUES (3, 'c', 'z,y,x', 0, 9223372036854775808)",
            "INSERT INTO es VALUES (4, 'nope', 'y', 1, 0)",  # sql_mode='': the '' ENUM value
            "INSERT INTO es (id) VALUES (5)",
        ],
        session=("SET SESSION sql_mode = ''",),
    )
    en, bit, blob = J.INTEGER, J.BIT, J.BLOB  # canal's: ENUM INTEGER, SET BIT
    _check(
        mysql,
        entries,
        [
            {
                "e": ("it's", en),
                "s": ("x,z", bit),
                "b1": ("1", bit),
                "b64": ("18446744073709551615", bit),
            },
            {"e": ("a", en), "s": ("", bit), "b1": ("0", bit), "b64": ("1", bit)},
            {
                "e": ("c", en),
                "s": ("x,y,z", bit),
                "b1": ("0", bit),
                "b64": ("9223372036854775808", bit),
            },
            {"e": ("", en), "s": ("y", bit), "b1": ("1", bit), "b64": ("0", bit)},
            {"e": (None, en), "s": (None, blob), "b1": (None, bit), "b64": (None, bit)},
        ],
        {
            "id": "int(11)",
            "e": "enum('a','it''s','c')",
            "s": "set('x','y','z')",
            "b1": "bit(1)",
            "b64": "bit(64)",
        },
    )


# --------------------------------------------------------------------------- GEOMETRY

POINT_1_2 = (
    b"\x00\x00\x00\x00"  # SRID 0
    + b"\x01"  # little-endian WKB
    + b"\x01\x00\x00\x00"  # wkbPoint
    + struct.pack("<dd", 1.0, 2.0)
)
LINE_4326 = (
    struct.pack("<I", 4326)
    + b"\x01"
    + b"\x02\x00\x00\x00"  # wkbLineString
    + struct.pack("<I", 2)
    + struct.pack("<dddd", 0.0, 0.0, 1.5, -1.5)
)
# MySQL 8+ reads the WKT of a geographic SRID (4326) as latitude-longitude and stores longitude
# first (HEX(g) shows the same bytes); MariaDB keeps the WKT's x y.
LINE_4326_MYSQL = LINE_4326[:-32] + struct.pack("<dddd", 0.0, 0.0, -1.5, 1.5)


def test_geometry_srid_and_wkb(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE geo (id INT PRIMARY KEY, g GEOMETRY)",
        [
            "INSERT INTO geo VALUES (1, ST_GeomFromText('POINT(1 2)'))",
            "INSERT INTO geo VALUES (2, ST_GeomFromText('LINESTRING(0 0, 1.5 -1.5)', 4326))",
            "INSERT INTO geo VALUES (3, NULL)",
        ],
    )
    line = LINE_4326 if mysql.flavor == "mariadb" else LINE_4326_MYSQL
    _check(
        mysql,
        entries,
        [
            {"g": (POINT_1_2.decode("latin-1"), J.BLOB)},
            {"g": (line.decode("latin-1"), J.BLOB)},
            {"g": (None, J.BLOB)},
        ],
        {"id": "int(11)", "g": "geometry"},
    )


def test_composite_key_and_key_flags(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """is_key follows the primary key (not unique or secondary indexes)."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE ck (a VARCHAR(8) NOT NULL, n INT, b BIGINT NOT NULL, u INT UNIQUE, "
        "PRIMARY KEY (b, a), KEY (n))",
        ["INSERT INTO ck VALUES ('k', 1, 2, 3)"],
    )
    _check(
        mysql,
        entries,
        [{"a": ("k", J.VARCHAR), "n": ("1", J.INTEGER), "b": ("2", J.BIGINT)}],
        {"a": "varchar(8)", "n": "int(11)", "b": "bigint(20)", "u": "int(11)"},
        keys=("a", "b"),
    )


# --------------------------------------------------------------------------- storage sizes

LABELS_300 = [f"v{i:03d}" for i in range(300)]
MEMBERS_9 = [f"m{i}" for i in range(9)]
MEMBERS_64 = [f"s{i:02d}" for i in range(64)]


def _labels(values: list[str]) -> str:
    return ",".join(f"'{v}'" for v in values)


SIZES_TYPES = {
    "id": "int(11)",
    "e2": f"enum({_labels(LABELS_300)})",
    "s2": f"set({_labels(MEMBERS_9)})",
    "s8": f"set({_labels(MEMBERS_64)})",
    "b9": "bit(9)",
    "b17": "bit(17)",
    "c63": "char(63)",
    "c255": "char(255)",
    "v63": "varchar(63)",
    "v300": "varchar(300)",
    "lv300": "varchar(300)",
    "tt": "tinytext",
    "tb": "tinyblob",
    "mt": "mediumtext",
    "lt": "longtext",
    "lb": "longblob",
}


def test_storage_sizes_and_length_prefixes(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """Two-byte ENUM, two- and eight-byte SET, odd BIT widths, CHAR/VARCHAR whose byte length
    needs a two-byte length prefix (and the metadata packing of CHAR(n) above 255 bytes),
    and every BLOB/TEXT length-prefix size."""
    create = (
        f"CREATE TABLE sz (id INT PRIMARY KEY, e2 ENUM({_labels(LABELS_300)}), "
        f"s2 SET({_labels(MEMBERS_9)}), s8 SET({_labels(MEMBERS_64)}), b9 BIT(9), b17 BIT(17), "
        "c63 CHAR(63), c255 CHAR(255), v63 VARCHAR(63), v300 VARCHAR(300), "
        "lv300 VARCHAR(300) CHARACTER SET latin1, tt TINYTEXT, tb TINYBLOB, mt MEDIUMTEXT, "
        "lt LONGTEXT, lb LONGBLOB) CHARACTER SET utf8mb4"
    )
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
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
                    b"\xff" * 255,
                    "m" * 70000,
                    "l" * 70000,
                    b"\x01" * 70000,
                ),
            ),
            (
                "INSERT INTO sz VALUES (2, 'v000', 'm8', 's63', 256, 65536, 'a', 'b', 'c', 'd', "
                "'e', '', '', '', '', '')",
                (),
            ),
            ("INSERT INTO sz (id) VALUES (3)", ()),
        ],
    )
    ch, bit, v, clob, blob = J.CHAR, J.BIT, J.VARCHAR, J.CLOB, J.BLOB
    _check(
        mysql,
        entries,
        [
            {
                "e2": ("v299", J.INTEGER),
                "s2": ("m0,m8", J.BIT),
                "s8": (",".join(MEMBERS_64), J.BIT),
                "b9": ("511", bit),
                "b17": ("65537", bit),
                "c63": ("é" * 63, ch),
                "c255": ("😀" * 255, ch),
                "v63": ("ß" * 63, v),
                "v300": ("中" * 300, v),
                "lv300": ("ÿ" * 300, v),
                "tt": ("t" * 255, clob),
                "tb": ("\xff" * 255, blob),
                "mt": ("m" * 70000, clob),
                "lt": ("l" * 70000, clob),
                "lb": ("\x01" * 70000, blob),
            },
            {
                "e2": ("v000", J.INTEGER),
                "s2": ("m8", J.BIT),
                "s8": ("s63", J.BIT),
                "b9": ("256", bit),
                "b17": ("65536", bit),
                "c63": ("a", ch),
                "c255": ("b", ch),
                "v63": ("c", v),
                "v300": ("d", v),
                "lv300": ("e", v),
                "tt": ("", clob),
                "tb": ("", blob),
                "mt": ("", clob),
                "lt": ("", clob),
                "lb": ("", blob),
            },
            {
                "e2": (None, J.INTEGER),
                "s8": (None, J.BLOB),
                "b17": (None, bit),
                "c255": (None, ch),
                "v300": (None, v),
                "tt": (None, clob),  # canal 1.1.8: NULL TEXT is CLOB, NULL BLOB is BLOB
                "tb": (None, blob),
                "mt": (None, clob),
                "lb": (None, blob),
            },
        ],
        SIZES_TYPES,
    )


def test_declared_types_with_decorations_the_binlog_does_not_carry(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """canal shows the declared type of the table (``SHOW CREATE TABLE``): ZEROFILL, the
    (M,D) of FLOAT/DOUBLE, BOOLEAN's tinyint(1) and the spatial subtype are not in the binlog,
    so they come from the live table while its column still matches the event."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE deco (id INT PRIMARY KEY, z INT(5) ZEROFILL, d DOUBLE(10,2), "
        "f FLOAT(7,3), flag BOOLEAN, p POINT, y YEAR)",
        ["INSERT INTO deco VALUES (1, 42, 3.14, 1.5, TRUE, ST_GeomFromText('POINT(1 2)'), 1999)"],
    )
    _check(
        mysql,
        entries,
        [
            {
                "z": ("42", J.INTEGER),
                "d": ("3.14", J.DOUBLE),
                "f": ("1.5", J.REAL),
                "flag": ("1", J.TINYINT),
                "p": (POINT_1_2.decode("latin-1"), J.BLOB),
                "y": ("1999", J.VARCHAR),
            }
        ],
        {
            "id": "int(11)",
            "z": "int(5) unsigned zerofill",
            "d": "double(10,2)",
            "f": "float(7,3)",
            "flag": "tinyint(1)",
            "p": "point",
            "y": "year(4)",
        },
    )


# --------------------------------------------------------------------------- collations

# Charsets neither server build nor Python can decode: their columns are refused by name.
NO_DECODER = ("armscii8", "dec8", "geostd8", "keybcs2", "swe7")
SAMPLE = "Aé€Жß中"  # each charset keeps what it can encode; the server writes '?' for the rest


def _collations(conn: Connection, mysql: MysqlEndpoint) -> list[tuple[int, str, str]]:
    """(id, collation, charset) of every collation the server has, ``binary`` aside. MariaDB
    lists its UCA 14 collations (ids 2048+) per charset in COLLATION_CHARACTER_SET_APPLICABILITY
    only."""
    sql = (
        "SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME "
        "FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY"
        if mysql.flavor == "mariadb"
        else "SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS"
    )
    with conn.cursor() as cur:
        cur.execute(sql + " WHERE CHARACTER_SET_NAME <> 'binary' ORDER BY ID")
        return [(int(i), str(name), str(charset)) for i, name, charset in cur.fetchall()]


def test_every_collation_of_the_server(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """One VARCHAR per collation id the server knows (MySQL 8's utf8mb4_0900_* at 255 and
    above, MariaDB's UCA 14 ones at 2048 and above): the TABLE_MAP names each column's
    collation id, canal derives the charset from the collation, and the text must read as
    the server itself reads it back (the SELECT below is the expectation)."""
    collations = [c for c in _collations(admin_connection, mysql) if c[2] not in NO_DECODER]
    assert any(i > 255 for i, *_ in collations)
    mismatches: list[str] = []
    chunk = 200  # columns per table: well inside InnoDB's row size
    for n, at in enumerate(range(0, len(collations), chunk)):
        part = collations[at : at + chunk]
        columns = ", ".join(f"c{i} VARCHAR(8) COLLATE {name}" for i, name, _ in part)
        table = f"coll{n}"
        entries = _inserted(
            mysql,
            admin_connection,
            scratch_schema,
            f"CREATE TABLE {table} (id INT PRIMARY KEY, {columns})",
            [(f"INSERT INTO {table} VALUES (1{', %s' * len(part)})", (SAMPLE,) * len(part))],
            session=("SET SESSION sql_mode = ''",),
        )
        with admin_connection.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            (row,) = cur.fetchall()
            read_back = dict(zip(names, row, strict=True))
        got = _after(entries[0])
        assert list(got) == names
        for i, name, charset in part:
            column = got[f"c{i}"]
            seen = (column.value, column.sql_type, column.mysql_type)
            if seen != (read_back[f"c{i}"], J.VARCHAR, "varchar(8)"):
                mismatches.append(f"{i} {name} ({charset}): {seen!r} for {read_back[f'c{i}']!r}")
    assert not mismatches, f"{len(mismatches)} collations misread, e.g. {mismatches[:8]}"


@pytest.mark.parametrize("charset", NO_DECODER)
def test_a_charset_without_a_decoder_is_refused_by_name(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str, charset: str
) -> None:
    """Text in a charset no decoder reads is never passed on as a guess: the value fails,
    naming the column and the charset (NULLs of the column still pass)."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, f"CREATE TABLE odd (id INT PRIMARY KEY, o VARCHAR(4) CHARACTER SET {charset})")
    start = master_position(conn)
    execute(conn, "INSERT INTO odd VALUES (1, NULL)", "INSERT INTO odd VALUES (2, 'abc')")
    end = master_position(conn)
    with pytest.raises(SchemaMismatch) as raised:
        read_entries(source_config(mysql), start, end)
    assert f"column #1 `o` (varchar(4)): unknown charset '{charset}'" in str(raised.value)
    assert f"binlog position {start.journal_name}:" in str(raised.value)


UTF8MB4_0900 = {
    "id": "int(11)",
    "ai": "varchar(16)",
    "cs": "varchar(16)",
    "bn": "char(8)",
    "ja": "text",
    "e": "enum('ä','b')",
    "s": "set('x','ß')",
    "u3": "varchar(8)",
    "df": "varchar(8)",
}


@pytest.mark.only_on("mysql", reason="the utf8mb4_*_0900_* collations (ids 255+) are MySQL 8's")
def test_mysql_0900_collations(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """utf8mb4_0900_ai_ci (255), _as_cs (278), _bin (309), a language one and utf8mb3_bin in
    one table whose default is _as_cs: charset ids above 255 take two bytes in the TABLE_MAP's
    charset lists (column, default and ENUM/SET ones). CHAR keeps no trailing spaces in the
    binlog, NO PAD collation or not."""
    create = (
        "CREATE TABLE c9 (id INT PRIMARY KEY, ai VARCHAR(16) COLLATE utf8mb4_0900_ai_ci, "
        "cs VARCHAR(16), bn CHAR(8) COLLATE utf8mb4_0900_bin, "
        "ja TEXT COLLATE utf8mb4_ja_0900_as_cs_ks, e ENUM('ä','b') COLLATE utf8mb4_0900_as_cs, "
        "s SET('x','ß') COLLATE utf8mb4_0900_bin, "
        "u3 VARCHAR(8) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin, df VARCHAR(8)) "
        "CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_as_cs"
    )
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        create,
        [
            (
                "INSERT INTO c9 VALUES (1, %s, %s, %s, %s, %s, %s, %s, %s)",
                ("Ärger 😀", "ÄÖÜ äöü", "ab  ", "カタカナ ひらがな", "ä", "ß,x", "ü€", "Ωmega"),
            ),
            ("INSERT INTO c9 (id) VALUES (2)", ()),
        ],
    )
    v, c = J.VARCHAR, J.CHAR
    _check(
        mysql,
        entries,
        [
            {
                "ai": ("Ärger 😀", v),
                "cs": ("ÄÖÜ äöü", v),
                "bn": ("ab", c),
                "ja": ("カタカナ ひらがな", J.CLOB),
                "e": ("ä", J.INTEGER),
                "s": ("x,ß", J.BIT),
                "u3": ("ü€", v),
                "df": ("Ωmega", v),
            },
            {
                "ai": (None, v),
                "bn": (None, c),
                "ja": (None, J.CLOB),
                "e": (None, J.INTEGER),
                "s": (None, J.BLOB),
                "u3": (None, v),
            },
        ],
        UTF8MB4_0900,
    )


# --------------------------------------------------------------------------- hidden columns


def test_invisible_columns_are_in_the_data(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """INVISIBLE columns (MariaDB 10.3, MySQL 8.0.23) are left out of ``SELECT *`` only: the
    binlog carries them, and so does canal's data, in table order."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE inv (id INT PRIMARY KEY, c INT INVISIBLE, a INT, "
        "d VARCHAR(8) INVISIBLE DEFAULT 'dflt')",
        ["INSERT INTO inv VALUES (1, 10)", "INSERT INTO inv (id, a, c, d) VALUES (2, 20, 30, 'x')"],
    )
    i, v = J.INTEGER, J.VARCHAR
    _check(
        mysql,
        entries,
        [
            {"id": ("1", i), "c": (None, i), "a": ("10", i), "d": ("dflt", v)},
            {"id": ("2", i), "c": ("30", i), "a": ("20", i), "d": ("x", v)},
        ],
        {"id": "int(11)", "c": "int(11)", "a": "int(11)", "d": "varchar(8)"},
    )


@pytest.mark.only_on("mysql", reason="sql_generate_invisible_primary_key is MySQL 8.0.30's")
def test_generated_invisible_primary_key(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A table created without a primary key under sql_generate_invisible_primary_key gets
    ``my_row_id`` first: invisible, the key, and in the data."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE gipk (name VARCHAR(8))",
        ["INSERT INTO gipk VALUES ('a')", "INSERT INTO gipk VALUES ('b')"],
        session=("SET SESSION sql_generate_invisible_primary_key = ON",),
    )
    _check(
        mysql,
        entries,
        [
            {"my_row_id": ("1", J.BIGINT), "name": ("a", J.VARCHAR)},
            {"my_row_id": ("2", J.BIGINT), "name": ("b", J.VARCHAR)},
        ],
        {"my_row_id": "bigint unsigned", "name": "varchar(8)"},
        keys=("my_row_id",),
    )


@pytest.mark.only_on("mysql", reason="functional key parts are MySQL 8.0.13's (not MariaDB's)")
def test_functional_indexes_add_no_columns_generated_columns_stay(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A functional index is a hidden virtual column (``!hidden!...``) that MySQL leaves out
    of the TABLE_MAP and the row images (seen in the raw events, binlog_row_metadata=FULL):
    the data has the table's own columns, generated ones (VIRTUAL and STORED) included."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE fx (id INT PRIMARY KEY, a INT, b INT, name VARCHAR(10), "
        "v INT AS (a + b) VIRTUAL, st VARCHAR(12) AS (CONCAT('s', a)) STORED, "
        "INDEX ab ((a + b)), INDEX low ((LOWER(name))), UNIQUE INDEX twice ((a * 2)))",
        ["INSERT INTO fx (id, a, b, name) VALUES (1, 2, 3, 'AbC')"],
    )
    i, v = J.INTEGER, J.VARCHAR
    _check(
        mysql,
        entries,
        [
            {
                "id": ("1", i),
                "a": ("2", i),
                "b": ("3", i),
                "name": ("AbC", v),
                "v": ("5", i),
                "st": ("s2", v),
            }
        ],
        {
            "id": "int(11)",
            "a": "int(11)",
            "b": "int(11)",
            "name": "varchar(10)",
            "v": "int(11)",
            "st": "varchar(12)",
        },
    )


# --------------------------------------------------------------------------- VECTOR

BIG_VECTOR = [k / 8 - 100 for k in range(2048)]


@pytest.mark.only_on("mysql", reason="VECTOR (type 242) is MySQL 9's")
def test_vector_as_vector_to_string(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A VECTOR is a length-prefixed little-endian float32 array; the text is what MySQL's
    VECTOR_TO_STRING prints (each value ``%.5e``), checked against the server too. canal has no
    VECTOR: sql_type OTHER, its type for a column type it does not map; mysql_type as
    declared. A text column after it keeps its own charset (VECTOR takes a place in the
    TABLE_MAP's charset list, as binary)."""
    entries = _inserted(
        mysql,
        admin_connection,
        scratch_schema,
        "CREATE TABLE vec (id INT PRIMARY KEY, v VECTOR(3), big VECTOR, "
        "s VARCHAR(4) COLLATE utf8mb4_0900_as_cs)",
        [
            "INSERT INTO vec VALUES (1, STRING_TO_VECTOR('[1,2,3.5]'), NULL, 'ä')",
            (
                "INSERT INTO vec VALUES (2, STRING_TO_VECTOR('[-0.1,1e30,1.17549435e-38]'), "
                "STRING_TO_VECTOR(%s), 'x')",
                ("[" + ",".join(map(str, BIG_VECTOR)) + "]",),
            ),
            # a vector holds at most its dimension; the smallest float32 denormal; -0.0
            ("INSERT INTO vec VALUES (3, x'01000000', STRING_TO_VECTOR('[-0]'), NULL)", ()),
            ("INSERT INTO vec (id) VALUES (4)", ()),
        ],
    )
    o = J.OTHER
    expected: list[Expected] = [
        {
            "v": ("[1.00000e+00,2.00000e+00,3.50000e+00]", o),
            "big": (None, o),
            "s": ("ä", J.VARCHAR),
        },
        {
            "v": ("[-1.00000e-01,1.00000e+30,1.17549e-38]", o),
            "big": ("[" + ",".join(f"{x:.5e}" for x in BIG_VECTOR) + "]", o),
            "s": ("x", J.VARCHAR),
        },
        {"v": ("[1.40130e-45]", o), "big": ("[-0.00000e+00]", o), "s": (None, J.VARCHAR)},
        {"v": (None, o), "big": (None, o), "s": (None, J.VARCHAR)},
    ]
    _check(
        mysql,
        entries,
        expected,
        {"id": "int(11)", "v": "vector(3)", "big": "vector(2048)", "s": "varchar(4)"},
    )
    with admin_connection.cursor() as cur:
        cur.execute("SELECT VECTOR_TO_STRING(v), VECTOR_TO_STRING(big) FROM vec ORDER BY id")
        server = [(v, big) for v, big in cur.fetchall()]
    assert server == [(row["v"][0], row["big"][0]) for row in expected]
