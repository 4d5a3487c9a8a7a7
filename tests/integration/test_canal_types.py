"""sqlType and mysqlType of every column type on the real servers, as canal 1.1.8 reports them,
and the value modes end to end: one table with every type, a row of values and a row of NULLs,
read once in this process (``mq.value_mode: faithful``, ``binary_encoding: latin1``) and once
by the binlog reader's own process (``canal``, ``base64``), the way a destination's settings
reach it (``bridge.instance.instance.decode_options``).

Expected codes are canal's (see tests/unit/parse/test_canal_sql_types.py for the rules), written
out literally; mysqlType is given as MariaDB prints it (``declared`` adapts it to MySQL 9).
"""

from __future__ import annotations

import base64
import functools
import struct

import pytest

from bridge.config import DestinationConfig
from bridge.entry import Column, Entry
from bridge.instance.instance import decode_options
from bridge.parse.child import ParserProcess
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

pytestmark = pytest.mark.both_servers

CREATE = """CREATE TABLE every_type (
  id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT,
  bi BIGINT UNSIGNED, de DECIMAL(12,2), fl FLOAT, db DOUBLE, b1 BIT(1), b9 BIT(9), dt DATE,
  tm TIME(1), dtt DATETIME(3), ts TIMESTAMP(3) NULL, yr YEAR,
  ch CHAR(4) CHARACTER SET utf8mb4, cl CHAR(4) CHARACTER SET latin1,
  vc VARCHAR(300) CHARACTER SET utf8mb4, vg VARCHAR(10) CHARACTER SET gbk,
  bn BINARY(4), vb VARBINARY(8),
  tt TINYTEXT CHARACTER SET utf8mb4, tx TEXT CHARACTER SET latin1,
  mt MEDIUMTEXT CHARACTER SET gbk, lt LONGTEXT CHARACTER SET utf8mb4,
  tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  en ENUM('a','b'), st SET('x','y','z'), js JSON, pt POINT
)"""
INSERT = (
    "INSERT INTO every_type VALUES (1, -5, 200, -300, 70000, 18446744073709551615, 5.00, 1.5, "
    "0.1, b'1', b'100000001', '2024-02-29', '-00:00:01.5', '2024-02-29 01:02:03.004', "
    "'2024-02-29 01:02:03.004', 2024, '中文', 'é', '😀', '中文', %s, %s, '中', 'é', '中', "
    "'long', %s, %s, %s, %s, 'b', 'z,x', '{\"a\": 1}', ST_GeomFromText('POINT(1 2)'))"
)
BN, VB, BLOB_BYTES = b"\x00\xff\x80a", b"\x00\xff", b"\x01\x02\xfe"
POINT_1_2 = b"\x00\x00\x00\x00\x01\x01\x00\x00\x00" + struct.pack("<dd", 1.0, 2.0)

# column: (MariaDB's declared type, sqlType of the value, sqlType of NULL)
TYPES: dict[str, tuple[str, int, int]] = {
    "id": ("int(11)", J.INTEGER, J.INTEGER),
    "ti": ("tinyint(4)", J.TINYINT, J.TINYINT),
    "tu": ("tinyint(3) unsigned", J.SMALLINT, J.TINYINT),  # 200: above the signed range
    "si": ("smallint(6)", J.SMALLINT, J.SMALLINT),
    "mi": ("mediumint(9)", J.INTEGER, J.INTEGER),
    "bi": ("bigint(20) unsigned", J.DECIMAL, J.BIGINT),
    "de": ("decimal(12,2)", J.DECIMAL, J.DECIMAL),
    "fl": ("float", J.REAL, J.REAL),
    "db": ("double", J.DOUBLE, J.DOUBLE),
    "b1": ("bit(1)", J.BIT, J.BIT),
    "b9": ("bit(9)", J.BIT, J.BIT),
    "dt": ("date", J.DATE, J.DATE),
    "tm": ("time(1)", J.TIME, J.TIME),
    "dtt": ("datetime(3)", J.TIMESTAMP, J.TIMESTAMP),
    "ts": ("timestamp(3)", J.TIMESTAMP, J.TIMESTAMP),
    "yr": ("year(4)", J.VARCHAR, J.VARCHAR),
    "ch": ("char(4)", J.CHAR, J.CHAR),
    "cl": ("char(4)", J.CHAR, J.CHAR),
    "vc": ("varchar(300)", J.VARCHAR, J.VARCHAR),
    "vg": ("varchar(10)", J.VARCHAR, J.VARCHAR),
    "bn": ("binary(4)", J.BLOB, J.BLOB),
    "vb": ("varbinary(8)", J.BLOB, J.BLOB),
    "tt": ("tinytext", J.CLOB, J.CLOB),
    "tx": ("text", J.CLOB, J.CLOB),
    "mt": ("mediumtext", J.CLOB, J.CLOB),
    "lt": ("longtext", J.CLOB, J.CLOB),
    "tb": ("tinyblob", J.BLOB, J.BLOB),
    "bl": ("blob", J.BLOB, J.BLOB),
    "mb": ("mediumblob", J.BLOB, J.BLOB),
    "lb": ("longblob", J.BLOB, J.BLOB),
    "en": ("enum('a','b')", J.INTEGER, J.INTEGER),
    "st": ("set('x','y','z')", J.BIT, J.BLOB),
    "js": ("json", J.VARCHAR, J.OTHER),  # MariaDB: below
    "pt": ("point", J.BLOB, J.BLOB),
}
MARIADB_JSON = ("longtext", J.CLOB, J.CLOB)  # a LONGTEXT with a JSON_VALID check

# Values the two runs spell alike.
SHARED = {
    "ti": "-5",
    "tu": "200",
    "bi": "18446744073709551615",
    "fl": "1.5",
    "db": "0.1",
    "b1": "1",
    "b9": "257",
    "dt": "2024-02-29",
    "tm": "-00:00:01.5",
    "dtt": "2024-02-29 01:02:03.004",
    "ts": "2024-02-29 01:02:03.004",
    "yr": "2024",
    "ch": "中文",
    "cl": "é",
    "vc": "😀",
    "vg": "中文",
    "tt": "中",
    "tx": "é",
    "mt": "中",
    "lt": "long",
}


def _latin1(raw: bytes) -> str:
    return raw.decode("latin-1")


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _binaries(spell: object) -> dict[str, str]:
    encode = _latin1 if spell == "latin1" else _base64
    return {
        "bn": encode(BN),
        "vb": encode(VB),
        **{name: encode(BLOB_BYTES) for name in ("tb", "bl", "mb", "lb")},
        "pt": encode(POINT_1_2),
    }


# run: (value_mode, binary_encoding, reader, values the mode decides)
RUNS = {
    "faithful-latin1-in-process": (
        "faithful",
        "latin1",
        BinlogParser,
        {"de": "5.00", "en": "b", "st": "x,z", **_binaries("latin1")},
    ),
    "canal-base64-child-process": (
        "canal",
        "base64",
        ParserProcess,
        {"de": "5.0", "en": "2", "st": "5", **_binaries("base64")},
    ),
}


def _destination(value_mode: str, binary_encoding: str) -> DestinationConfig:
    """A destination with these mq settings (only its mq section matters here)."""
    return DestinationConfig.model_validate(
        {
            "name": "types",
            "source": {"address": "127.0.0.1:3306", "username": "canal", "slave_id": 9},
            "mq": {"topic": "t", "value_mode": value_mode, "binary_encoding": binary_encoding},
        }
    )


def _columns(entry: Entry) -> dict[str, Column]:
    assert entry.row_change is not None
    (row,) = entry.row_change.row_datas
    return {c.name: c for c in row.after}


@pytest.mark.parametrize("run", list(RUNS))
def test_every_type_has_canals_sql_and_mysql_type(
    run: str, mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    value_mode, binary_encoding, reader, decided = RUNS[run]
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, CREATE)
    start = master_position(conn)
    with conn.cursor() as cur:
        cur.execute(INSERT, (BN, VB, BLOB_BYTES, BLOB_BYTES, BLOB_BYTES, BLOB_BYTES))
        cur.execute("INSERT INTO every_type (id) VALUES (2)")
    end = master_position(conn)
    options = decode_options(_destination(value_mode, binary_encoding))
    entries = read_entries(
        source_config(mysql),
        start,
        end,
        time_zone="UTC",
        reader=functools.partial(reader, values=options),
    )
    values, nulls = [
        _columns(e) for e in rows_of(entries) if e.header.schema_name == scratch_schema
    ]
    types = dict(TYPES, js=MARIADB_JSON) if mysql.flavor == "mariadb" else TYPES
    assert list(values) == list(types)
    for name, (mysql_type, sql_type, null_sql_type) in types.items():
        assert values[name].mysql_type == declared(mysql, mysql_type), name
        assert (values[name].is_null, values[name].sql_type) == (False, sql_type), name
        assert (nulls[name].is_null, nulls[name].sql_type) == (name != "id", null_sql_type), name
    expected = {**SHARED, **decided}
    assert {name: values[name].value for name in expected} == expected
    assert values["js"].value == '{"a": 1}'
