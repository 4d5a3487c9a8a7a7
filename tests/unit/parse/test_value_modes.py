"""``mq.value_mode`` (faithful | canal) and ``mq.binary_encoding`` (latin1 | base64): each
difference docs/canal-compatibility.md lists, and the renderings that are the same in both
modes (a divergence there would be a new, undocumented difference).

canal's texts are worked out from canal 1.1.8's ``RowsLogBuffer.fetchValue`` and
``LogEventConvert.parseOneRow``, never by calling the decoder."""

from __future__ import annotations

import base64
import struct
from datetime import UTC

import pytest

from bridge.config import DestinationConfig
from bridge.instance.instance import decode_options
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.parse.binlog.values import DecodeOptions, decode_value
from bridge.types import JdbcType as J

from .rowbytes import col, decimal_bytes, int_bytes, lenenc, time2_bytes, timestamp2_bytes

FAITHFUL = DecodeOptions(time_zone=UTC)
CANAL = DecodeOptions(time_zone=UTC, value_mode="canal")

ENUM = col(T.ENUM, "enum('a','b','c')", max_length=1, enum_values=("a", "b", "c"))
SET = col(T.SET, "set('x','y','z')", max_length=1, set_values=("x", "y", "z"))
DECIMAL = col(T.NEWDECIMAL, "decimal(12,2)", precision=12, scale=2)
OLD_TIME = col(T.TIME, "time")


def _json_opaque_decimal(text: str, precision: int, scale: int) -> bytes:
    """A binary JSON document holding one DECIMAL: opaque (15), field type NEWDECIMAL, the
    length, then precision, scale and MySQL's decimal bytes."""
    payload = bytes([precision, scale]) + decimal_bytes(text, precision, scale)
    return bytes([15, T.NEWDECIMAL, len(payload)]) + payload


# column, stored bytes, faithful (text, sqlType), canal (text, sqlType)
DIFFERENCES = [
    (ENUM, b"\x02", ("b", J.INTEGER), ("2", J.INTEGER)),
    (ENUM, b"\x00", ("", J.INTEGER), ("0", J.INTEGER)),  # the '' error value
    (SET, b"\x05", ("x,z", J.BIT), ("5", J.BIT)),
    (SET, b"\x00", ("", J.BIT), ("0", J.BIT)),
    (DECIMAL, decimal_bytes("5.00", 12, 2), ("5.00", J.DECIMAL), ("5.0", J.DECIMAL)),
    (DECIMAL, decimal_bytes("-0.00", 12, 2), ("0.00", J.DECIMAL), ("0.0", J.DECIMAL)),
    (OLD_TIME, int_bytes(T.INT24, 1000000), ("100:00:00", J.TIME), ("00:00:00", J.TIME)),
    (OLD_TIME, int_bytes(T.INT24, -1003040), ("-100:30:40", J.TIME), ("-00:30:40", J.TIME)),
    (
        col(T.JSON, "json", max_length=4),  # a DECIMAL inside binary JSON: opaque type 246
        lenenc(_json_opaque_decimal("5.00", 12, 2), 4),
        ("5.00", J.VARCHAR),
        ("5.0", J.VARCHAR),
    ),
]


@pytest.mark.parametrize(("column", "data", "faithful", "canal"), DIFFERENCES)
def test_each_difference_between_the_modes(
    column: ColumnMeta, data: bytes, faithful: tuple[str, int], canal: tuple[str, int]
) -> None:
    assert decode_value(data, 0, column, FAITHFUL)[:2] == faithful
    assert decode_value(data, 0, column, CANAL)[:2] == canal


# column, stored bytes, canal's (text, sqlType): the same in both modes
SAME = [
    (col(T.FLOAT), struct.pack("<f", 1e10), ("1.0E10", J.REAL)),
    (col(T.FLOAT), struct.pack("<f", 100.0), ("100.0", J.REAL)),
    (col(T.DOUBLE), struct.pack("<d", 0.001), ("0.001", J.DOUBLE)),
    (col(T.DOUBLE), struct.pack("<d", 1e-4), ("1.0E-4", J.DOUBLE)),
    (
        col(T.TIMESTAMP2, fsp=3),
        timestamp2_bytes(86400, 5000, 3),
        ("1970-01-02 00:00:00.005", J.TIMESTAMP),
    ),
    (col(T.TIMESTAMP), struct.pack("<I", 0), ("0000-00-00 00:00:00", J.TIMESTAMP)),
    (col(T.BIT, bits=1), b"\x01", ("1", J.BIT)),
    (col(T.BIT, bits=64), b"\x80" + bytes(7), ("9223372036854775808", J.BIT)),
    (col(T.YEAR), b"\x00", ("0000", J.VARCHAR)),
    (col(T.YEAR), b"\x7c", ("2024", J.VARCHAR)),
    (col(T.TIME2, fsp=1), time2_bytes(True, 0, 0, 1, 500000, 1), ("-00:00:01.5", J.TIME)),
    (col(T.TIME2), time2_bytes(False, 838, 59, 59, 0, 0), ("838:59:59", J.TIME)),
    (col(T.VARCHAR, "varbinary(4)", max_length=4), lenenc(b"\x00\xff", 1), ("\x00\xff", J.BLOB)),
    (
        col(T.BLOB, "text", charset="utf8mb4", max_length=2, is_text=True),
        lenenc("中文".encode(), 2),
        ("中文", J.CLOB),
    ),
    (
        col(T.LONGLONG, unsigned=True),
        int_bytes(T.LONGLONG, 2**64 - 1),
        ("18446744073709551615", J.DECIMAL),
    ),
]


@pytest.mark.parametrize(("column", "data", "expected"), SAME)
def test_renderings_the_modes_share(
    column: ColumnMeta, data: bytes, expected: tuple[str, int]
) -> None:
    assert decode_value(data, 0, column, FAITHFUL)[:2] == expected
    assert decode_value(data, 0, column, CANAL)[:2] == expected


BINARY_COLUMNS = [
    col(T.VARCHAR, "varbinary(8)", max_length=8),
    col(T.VARCHAR, "varbinary(300)", max_length=300),
    col(T.STRING, "binary(4)", max_length=4),
    col(T.BLOB, "tinyblob", max_length=1),
    col(T.BLOB, "blob", max_length=2),
    col(T.BLOB, "mediumblob", max_length=3),
    col(T.BLOB, "longblob", max_length=4),
    col(T.GEOMETRY, "point", max_length=4),
]
RAW = b"\x00\xff\x80a\xe4\xb8\xad"


def _prefix(column: ColumnMeta) -> int:
    if column.type_code in (T.VARCHAR, T.STRING):
        return 1 if column.max_length < 256 else 2
    return column.max_length


@pytest.mark.parametrize("column", BINARY_COLUMNS, ids=[c.mysql_type for c in BINARY_COLUMNS])
@pytest.mark.parametrize("mode", ["faithful", "canal"])
def test_binary_encoding(column: ColumnMeta, mode: str) -> None:
    data = lenenc(RAW, _prefix(column))
    latin1 = DecodeOptions(value_mode=mode)  # type: ignore[arg-type]
    b64 = DecodeOptions(value_mode=mode, binary_encoding="base64")  # type: ignore[arg-type]
    assert decode_value(data, 0, column, latin1)[:2] == (RAW.decode("latin-1"), J.BLOB)
    text, sql_type, end = decode_value(data, 0, column, b64)
    assert (base64.b64decode(text, validate=True), sql_type, end) == (RAW, J.BLOB, len(data))
    assert text == "AP+AYeS4rQ=="


@pytest.mark.parametrize(
    "column",
    [
        col(T.VARCHAR, "varchar(8)", charset="utf8mb4", max_length=32),
        col(T.BLOB, "text", charset="utf8mb4", max_length=2, is_text=True),
        col(T.VARCHAR, "varchar(8)", charset="latin1", max_length=8),
    ],
    ids=["varchar", "text", "latin1 varchar"],
)
def test_base64_leaves_text_columns_alone(column: ColumnMeta) -> None:
    """The negative case: only binary bytes are encoded; text keeps its charset's reading."""
    data = lenenc(b"abc", _prefix(column))
    options = DecodeOptions(binary_encoding="base64")
    assert decode_value(data, 0, column, options)[0] == "abc"


def test_an_unknown_mode_names_the_config_key() -> None:
    with pytest.raises(
        ValueError, match=r"^mq.value_mode 'java' is unknown: use faithful or canal$"
    ):
        DecodeOptions(value_mode="java")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^mq.binary_encoding 'hex' is unknown"):
        DecodeOptions(binary_encoding="hex")  # type: ignore[arg-type]


def test_a_destinations_mq_settings_reach_the_decode_options() -> None:
    def options(**mq: str) -> DecodeOptions:
        config = DestinationConfig.model_validate(
            {
                "name": "d",
                "source": {"address": "db:3306", "username": "canal", "slave_id": 9},
                "mq": {"topic": "t", **mq},
            }
        )
        return decode_options(config)

    assert options() == DecodeOptions()
    assert options(value_mode="canal", binary_encoding="base64") == DecodeOptions(
        value_mode="canal", binary_encoding="base64"
    )
