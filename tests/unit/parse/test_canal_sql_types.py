"""sqlType and mysqlType of every MySQL and MariaDB column type, charset and length variant, as
canal 1.1.8 reports them.

Each row is a TABLE_MAP column (``ColumnDef``), one stored value, and canal's answers written
out by hand from its sources: ``RowsLogBuffer.mysqlToJavaType`` / ``fetchValue`` give the
JDBC type of the binlog type, then ``LogEventConvert.parseOneRow`` turns the binary kinds
(BINARY, VARBINARY, LONGVARBINARY) into CLOB for TEXT columns and BLOB for everything else,
for values and, since canal 1.1.8 (its issue #4652), for NULLs too; only non-NULL UNSIGNED
values above the signed range widen. The mysqlType is the declared type as ``SHOW CREATE
TABLE`` prints it on MariaDB (display widths); the table is read through ``build_table_meta``
without a live schema, so the derivation from the binlog is what is checked. The sqlType is
the same in both value modes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_map import ColumnDef
from bridge.parse.binlog.table_meta import ColumnMeta, build_table_meta
from bridge.parse.binlog.values import DECODERS, DecodeOptions, make_decoder, null_sql_type
from bridge.types import JdbcType as J

from .rowbytes import (
    date_bytes,
    datetime2_bytes,
    decimal_bytes,
    int_bytes,
    lenenc,
    time2_bytes,
    timestamp2_bytes,
)

UTF8MB4, UTF8MB4_BIN, UTF8MB3 = "utf8mb4_general_ci", "utf8mb4_bin", "utf8mb3_general_ci"
LATIN1, GBK, BINARY = "latin1_swedish_ci", "gbk_chinese_ci", "binary"
LABELS_300 = tuple(f"v{i:03d}" for i in range(300))
MEMBERS_64 = tuple(f"s{i}" for i in range(64))


@dataclass(frozen=True)
class Case:
    label: str
    column: ColumnDef
    value: bytes
    mysql_type: str
    sql_type: J
    null_sql_type: J


def _text(text: str, codec: str, prefix: int) -> bytes:
    return lenenc(text.encode(codec), prefix)


CASES = [
    # integers: canal widens an UNSIGNED value above the signed range by one JDBC size
    Case("tinyint", ColumnDef(T.TINY), int_bytes(T.TINY, -5), "tinyint(4)", J.TINYINT, J.TINYINT),
    Case(
        "tinyint unsigned 5",
        ColumnDef(T.TINY, unsigned=True),
        int_bytes(T.TINY, 5),
        "tinyint(3) unsigned",
        J.TINYINT,
        J.TINYINT,
    ),
    Case(
        "tinyint unsigned 200",
        ColumnDef(T.TINY, unsigned=True),
        int_bytes(T.TINY, 200),
        "tinyint(3) unsigned",
        J.SMALLINT,
        J.TINYINT,
    ),
    Case(
        "smallint",
        ColumnDef(T.SHORT),
        int_bytes(T.SHORT, -1),
        "smallint(6)",
        J.SMALLINT,
        J.SMALLINT,
    ),
    Case(
        "smallint unsigned 65535",
        ColumnDef(T.SHORT, unsigned=True),
        int_bytes(T.SHORT, 65535),
        "smallint(5) unsigned",
        J.INTEGER,
        J.SMALLINT,
    ),
    Case(
        "mediumint",
        ColumnDef(T.INT24),
        int_bytes(T.INT24, -1),
        "mediumint(9)",
        J.INTEGER,
        J.INTEGER,
    ),
    Case(
        "mediumint unsigned max",
        ColumnDef(T.INT24, unsigned=True),
        int_bytes(T.INT24, 16777215),
        "mediumint(8) unsigned",
        J.INTEGER,
        J.INTEGER,
    ),
    Case("int", ColumnDef(T.LONG), int_bytes(T.LONG, 7), "int(11)", J.INTEGER, J.INTEGER),
    Case(
        "int unsigned max",
        ColumnDef(T.LONG, unsigned=True),
        int_bytes(T.LONG, 4294967295),
        "int(10) unsigned",
        J.BIGINT,
        J.INTEGER,
    ),
    Case(
        "bigint", ColumnDef(T.LONGLONG), int_bytes(T.LONGLONG, 7), "bigint(20)", J.BIGINT, J.BIGINT
    ),
    Case(
        "bigint unsigned max",
        ColumnDef(T.LONGLONG, unsigned=True),
        int_bytes(T.LONGLONG, 2**64 - 1),
        "bigint(20) unsigned",
        J.DECIMAL,
        J.BIGINT,
    ),
    # exact and approximate numbers, BIT
    Case(
        "decimal(10,2)",
        ColumnDef(T.NEWDECIMAL, precision=10, decimals=2),
        decimal_bytes("1.50", 10, 2),
        "decimal(10,2)",
        J.DECIMAL,
        J.DECIMAL,
    ),
    Case(
        "decimal(65,30) unsigned",
        ColumnDef(T.NEWDECIMAL, unsigned=True, precision=65, decimals=30),
        decimal_bytes("1", 65, 30),
        "decimal(65,30) unsigned",
        J.DECIMAL,
        J.DECIMAL,
    ),
    Case("float", ColumnDef(T.FLOAT, size=4), struct.pack("<f", 1.5), "float", J.REAL, J.REAL),
    Case(
        "double", ColumnDef(T.DOUBLE, size=8), struct.pack("<d", 1.5), "double", J.DOUBLE, J.DOUBLE
    ),
    Case("bit(1)", ColumnDef(T.BIT, bits=1), b"\x01", "bit(1)", J.BIT, J.BIT),
    Case("bit(10)", ColumnDef(T.BIT, bits=10), b"\x02\x01", "bit(10)", J.BIT, J.BIT),
    Case("bit(64)", ColumnDef(T.BIT, bits=64), b"\xff" * 8, "bit(64)", J.BIT, J.BIT),
    # dates and times, MySQL 5.6+ formats and MariaDB's old ones (mysql56_temporal_format=OFF)
    Case("date", ColumnDef(T.DATE), date_bytes(2024, 2, 29), "date", J.DATE, J.DATE),
    Case("time", ColumnDef(T.TIME2), time2_bytes(False, 1, 2, 3, 0, 0), "time", J.TIME, J.TIME),
    Case(
        "time(3)",
        ColumnDef(T.TIME2, fsp=3),
        time2_bytes(True, 838, 59, 59, 0, 3),
        "time(3)",
        J.TIME,
        J.TIME,
    ),
    Case("old time", ColumnDef(T.TIME), int_bytes(T.INT24, 10203), "time", J.TIME, J.TIME),
    Case(
        "datetime",
        ColumnDef(T.DATETIME2),
        datetime2_bytes(2024, 2, 29, 1, 2, 3, 0, 0),
        "datetime",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case(
        "datetime(6)",
        ColumnDef(T.DATETIME2, fsp=6),
        datetime2_bytes(2024, 2, 29, 1, 2, 3, 456789, 6),
        "datetime(6)",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case(
        "old datetime",
        ColumnDef(T.DATETIME),
        struct.pack("<q", 20240229010203),
        "datetime",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case(
        "timestamp",
        ColumnDef(T.TIMESTAMP2),
        timestamp2_bytes(1, 0, 0),
        "timestamp",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case(
        "timestamp(3)",
        ColumnDef(T.TIMESTAMP2, fsp=3),
        timestamp2_bytes(1, 5000, 3),
        "timestamp(3)",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case(
        "old timestamp",
        ColumnDef(T.TIMESTAMP),
        struct.pack("<I", 1),
        "timestamp",
        J.TIMESTAMP,
        J.TIMESTAMP,
    ),
    Case("year", ColumnDef(T.YEAR), b"\x7c", "year(4)", J.VARCHAR, J.VARCHAR),
    # CHAR/VARCHAR in several charsets (the byte length decides the length prefix), binary
    Case(
        "char(10) utf8mb4",
        ColumnDef(T.STRING, collation_name=UTF8MB4, max_length=40),
        _text("中文", "utf-8", 1),
        "char(10)",
        J.CHAR,
        J.CHAR,
    ),
    Case(
        "char(10) latin1",
        ColumnDef(T.STRING, collation_name=LATIN1, max_length=10),
        _text("é", "latin-1", 1),
        "char(10)",
        J.CHAR,
        J.CHAR,
    ),
    Case(
        "char(200) gbk",
        ColumnDef(T.STRING, collation_name=GBK, max_length=400),
        _text("中文", "gbk", 2),
        "char(200)",
        J.CHAR,
        J.CHAR,
    ),
    Case(
        "binary(16)",
        ColumnDef(T.STRING, collation_name=BINARY, max_length=16),
        lenenc(b"\x00\xff", 1),
        "binary(16)",
        J.BLOB,
        J.BLOB,
    ),
    Case(
        "varchar(10) utf8mb3",
        ColumnDef(T.VARCHAR, collation_name=UTF8MB3, max_length=30),
        _text("ü", "utf-8", 1),
        "varchar(10)",
        J.VARCHAR,
        J.VARCHAR,
    ),
    Case(
        "varchar(64) utf8mb4",
        ColumnDef(T.VARCHAR, collation_name=UTF8MB4, max_length=256),
        _text("😀", "utf-8", 2),
        "varchar(64)",
        J.VARCHAR,
        J.VARCHAR,
    ),
    Case(
        "varchar(300) latin1",
        ColumnDef(T.VARCHAR, collation_name=LATIN1, max_length=300),
        _text("x", "latin-1", 2),
        "varchar(300)",
        J.VARCHAR,
        J.VARCHAR,
    ),
    Case(
        "varbinary(16)",
        ColumnDef(T.VARCHAR, collation_name=BINARY, max_length=16),
        lenenc(b"\x80", 1),
        "varbinary(16)",
        J.BLOB,
        J.BLOB,
    ),
    Case(
        "varbinary(300)",
        ColumnDef(T.VARCHAR, collation_name=BINARY, max_length=300),
        lenenc(b"\x80", 2),
        "varbinary(300)",
        J.BLOB,
        J.BLOB,
    ),
    # TEXT and BLOB of every size; canal tells them apart by the declared type name
    *[
        Case(
            f"{size}text {collation}",
            ColumnDef(T.BLOB, collation_name=collation, length_size=prefix),
            _text("中" if codec != "latin-1" else "é", codec, prefix),
            f"{size}text",
            J.CLOB,
            J.CLOB,
        )
        for size, prefix in (("tiny", 1), ("", 2), ("medium", 3), ("long", 4))
        for collation, codec in ((UTF8MB4, "utf-8"), (LATIN1, "latin-1"), (GBK, "gbk"))
        if codec != "latin-1" or size in {"", "tiny"}
    ],
    *[
        Case(
            f"{size}blob",
            ColumnDef(T.BLOB, collation_name=BINARY, length_size=prefix),
            lenenc(b"\x00\xff", prefix),
            f"{size}blob",
            J.BLOB,
            J.BLOB,
        )
        for size, prefix in (("tiny", 1), ("", 2), ("medium", 3), ("long", 4))
    ],
    # ENUM / SET: canal's INTEGER index and BIT bitmask; a NULL SET is BINARY -> BLOB
    Case(
        "enum",
        ColumnDef(T.ENUM, size=1, enum_values=("a", "b")),
        b"\x02",
        "enum('a','b')",
        J.INTEGER,
        J.INTEGER,
    ),
    Case(
        "enum of 300",
        ColumnDef(T.ENUM, size=2, enum_values=LABELS_300),
        b"\x2c\x01",
        "enum(" + ",".join(f"'{v}'" for v in LABELS_300) + ")",
        J.INTEGER,
        J.INTEGER,
    ),
    Case(
        "set",
        ColumnDef(T.SET, size=1, set_values=("x", "y")),
        b"\x03",
        "set('x','y')",
        J.BIT,
        J.BLOB,
    ),
    Case(
        "set of 64",
        ColumnDef(T.SET, size=8, set_values=MEMBERS_64),
        b"\xff" * 8,
        "set(" + ",".join(f"'{v}'" for v in MEMBERS_64) + ")",
        J.BIT,
        J.BLOB,
    ),
    # JSON: MySQL's binary type 245 (no NULL mapping in canal: OTHER); MariaDB's LONGTEXT
    Case(
        "json (MySQL)",
        ColumnDef(T.JSON, length_size=4),
        lenenc(b"\x04\x01", 4),
        "json",
        J.VARCHAR,
        J.OTHER,
    ),
    Case(
        "json (MariaDB)",
        ColumnDef(T.BLOB, collation_name=UTF8MB4_BIN, length_size=4),
        _text('{"a": 1}', "utf-8", 4),
        "longtext",
        J.CLOB,
        J.CLOB,
    ),
    # GEOMETRY (any subtype): canal's BINARY -> BLOB; VECTOR (MySQL 9): canal has no mapping
    Case(
        "geometry",
        ColumnDef(T.GEOMETRY, length_size=4),
        lenenc(b"\x00" * 4 + b"\x01\x01\x00\x00\x00" + bytes(16), 4),
        "geometry",
        J.BLOB,
        J.BLOB,
    ),
    Case(
        "vector(2)",
        ColumnDef(T.VECTOR, length_size=4, vector_dimensions=2),
        lenenc(struct.pack("<2f", 1.0, 2.0), 4),
        "vector(2)",
        J.OTHER,
        J.OTHER,
    ),
]


def _meta(column: ColumnDef, display_widths: bool = True) -> ColumnMeta:
    named = ColumnDef(**{**_fields(column), "name": "c"})
    table = build_table_meta("s", "t", [named], b"\x01", None, display_widths=display_widths)
    return table.columns[0]


def _fields(column: ColumnDef) -> dict[str, object]:
    return {name: getattr(column, name) for name in ColumnDef.__dataclass_fields__}


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
@pytest.mark.parametrize("mode", ["faithful", "canal"])
def test_sql_and_mysql_types_are_canals(case: Case, mode: str) -> None:
    meta = _meta(case.column)
    options = DecodeOptions(value_mode=mode)  # type: ignore[arg-type]
    assert meta.mysql_type == case.mysql_type
    _, sql_type, end = make_decoder(meta, options)(case.value, 0)
    assert end == len(case.value)
    assert sql_type == case.sql_type
    assert null_sql_type(meta, options) == case.null_sql_type


def test_every_binlog_type_with_a_decoder_is_listed() -> None:
    """A type added to the decoders needs a row above (MariaDB's compressed codes never reach
    the decoders: the TABLE_MAP names their real type)."""
    listed = {case.column.type for case in CASES}
    assert set(DECODERS) - listed == {T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.VAR_STRING}


@pytest.mark.parametrize(
    ("column", "mysql_type"),
    [
        (ColumnDef(T.LONG), "int"),
        (ColumnDef(T.LONG, unsigned=True), "int unsigned"),
        (ColumnDef(T.TINY), "tinyint"),
        (ColumnDef(T.LONGLONG, unsigned=True), "bigint unsigned"),
        (ColumnDef(T.YEAR), "year"),
    ],
)
def test_mysql_8_0_19_prints_no_display_widths(column: ColumnDef, mysql_type: str) -> None:
    assert _meta(column, display_widths=False).mysql_type == mysql_type


def test_a_text_type_name_alone_does_not_make_binary_bytes_text() -> None:
    """The negative case: the same BLOB code, charset binary, is BLOB both as value and NULL;
    with a charset it is CLOB."""
    blob = _meta(ColumnDef(T.BLOB, collation_name=BINARY, length_size=2))
    text = _meta(ColumnDef(T.BLOB, collation_name=UTF8MB4, length_size=2))
    assert (blob.mysql_type, null_sql_type(blob, DecodeOptions())) == ("blob", J.BLOB)
    assert (text.mysql_type, null_sql_type(text, DecodeOptions())) == ("text", J.CLOB)
