"""Value renderings, each checked against canal's (RowsLogBuffer + LogEventConvert) text."""

from __future__ import annotations

import struct
from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.parse.binlog.values import (
    DecodeOptions,
    TruncatedRowImage,
    UnsupportedColumnType,
    decode_value,
    make_decoder,
    null_sql_type,
)
from bridge.parse.exceptions import SchemaMismatch
from bridge.types import JdbcType as J

from .rowbytes import (
    col,
    date_bytes,
    datetime2_bytes,
    decimal_bytes,
    int_bytes,
    lenenc,
    time2_bytes,
    timestamp2_bytes,
)


def render(data: bytes, column: ColumnMeta, **options: object) -> tuple[str, int]:
    """Decode ``data`` (prefixed with junk to prove offsets work) and check it is consumed."""
    padded = b"\xee\xee" + data + b"\xdd"
    text, sql_type, end = decode_value(padded, 2, column, DecodeOptions(**options))  # type: ignore[arg-type]
    assert end == 2 + len(data)
    return text, sql_type


# --- integers ------------------------------------------------------------------------------

INTEGER_CASES = [
    # type, unsigned, value, text, sql_type
    (T.TINY, False, -128, "-128", J.TINYINT),
    (T.TINY, False, 127, "127", J.TINYINT),
    (T.TINY, True, 5, "5", J.TINYINT),
    (T.TINY, True, 200, "200", J.SMALLINT),  # canal widens only out-of-signed-range values
    (T.TINY, True, 255, "255", J.SMALLINT),
    (T.SHORT, False, -32768, "-32768", J.SMALLINT),
    (T.SHORT, True, 32767, "32767", J.SMALLINT),
    (T.SHORT, True, 65535, "65535", J.INTEGER),
    (T.INT24, False, -8388608, "-8388608", J.INTEGER),
    (T.INT24, False, 8388607, "8388607", J.INTEGER),
    (T.INT24, True, 16777215, "16777215", J.INTEGER),
    (T.LONG, False, -2147483648, "-2147483648", J.INTEGER),
    (T.LONG, True, 2147483647, "2147483647", J.INTEGER),
    (T.LONG, True, 4294967295, "4294967295", J.BIGINT),
    (T.LONGLONG, False, -(2**63), "-9223372036854775808", J.BIGINT),
    (T.LONGLONG, False, 2**63 - 1, "9223372036854775807", J.BIGINT),
    (T.LONGLONG, True, 2**63 - 1, "9223372036854775807", J.BIGINT),
    (T.LONGLONG, True, 2**63, "9223372036854775808", J.DECIMAL),
    (T.LONGLONG, True, 2**64 - 1, "18446744073709551615", J.DECIMAL),
    (T.LONGLONG, False, 0, "0", J.BIGINT),
]


@pytest.mark.parametrize(("type_code", "unsigned", "value", "text", "sql_type"), INTEGER_CASES)
def test_integers(type_code: int, unsigned: bool, value: int, text: str, sql_type: int) -> None:
    column = col(type_code, unsigned=unsigned)
    assert render(int_bytes(type_code, value), column) == (text, sql_type)


# --- DECIMAL -------------------------------------------------------------------------------


def test_decimal_matches_mysql_documented_bytes() -> None:
    # decimal.c's example: DECIMAL(14,4) 1234567890.1234 and its negation.
    column = col(T.NEWDECIMAL, precision=14, scale=4)
    positive = bytes.fromhex("810DFB38D204D2")
    negative = bytes.fromhex("7EF204C72DFB2D")
    assert render(positive, column) == ("1234567890.1234", J.DECIMAL)
    assert render(negative, column) == ("-1234567890.1234", J.DECIMAL)


DECIMAL_CASES = [
    (12, 2, "12.30"),
    (12, 2, "-0.01"),
    (12, 2, "0.00"),
    (12, 2, "9999999999.99"),
    (12, 2, "-9999999999.99"),
    (10, 0, "1234567890"),
    (10, 0, "-1"),
    (4, 4, "0.5000"),
    (4, 4, "-0.0001"),
    (65, 30, "12345678901234567890123456789012345.123456789012345678901234567890"),
    (65, 30, "-0.000000000000000000000000000001"),
    (20, 10, "-1234567890.0000000001"),
    (18, 9, "123456789.123456789"),
    (19, 9, "1.000000000"),
    (64, 16, "0.0000000000000000"),
]


@pytest.mark.parametrize(("precision", "scale", "text"), DECIMAL_CASES)
def test_decimal_keeps_the_scale(precision: int, scale: int, text: str) -> None:
    column = col(T.NEWDECIMAL, precision=precision, scale=scale)
    assert render(decimal_bytes(text, precision, scale), column) == (text, J.DECIMAL)


@pytest.mark.parametrize(
    ("precision", "scale", "value", "canal_text"),
    [
        (12, 2, "0.00", "0.0"),
        (12, 2, "5.00", "5.0"),
        (12, 2, "-5.00", "-5.0"),
        (12, 2, "5.10", "5.10"),  # a non-zero last group is printed in full
        (64, 16, "0", "0.000000000"),  # canal issue #5313's example
        (10, 0, "7", "7"),
    ],
)
def test_decimal_canal_quirk(precision: int, scale: int, value: str, canal_text: str) -> None:
    column = col(T.NEWDECIMAL, precision=precision, scale=scale)
    data = decimal_bytes(value, precision, scale)
    assert render(data, column, value_mode="canal") == (canal_text, J.DECIMAL)


def test_negative_zero_decimal_has_no_sign() -> None:
    column = col(T.NEWDECIMAL, precision=5, scale=2)
    data = bytes(b ^ 0xFF for b in decimal_bytes("0.00", 5, 2))  # "-0.00" on disk
    assert render(data, column) == ("0.00", J.DECIMAL)


# --- FLOAT / DOUBLE ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e10, "1.0E10"), (1e-5, "1.0E-5"), (100.0, "100.0"), (0.1, "0.1"), (-2.5, "-2.5")],
)
def test_float_and_double(value: float, text: str) -> None:
    assert render(struct.pack("<f", value), col(T.FLOAT)) == (text, J.REAL)
    assert render(struct.pack("<d", value), col(T.DOUBLE)) == (text, J.DOUBLE)


def test_float_is_rendered_at_float_precision() -> None:
    assert render(struct.pack("<f", 3.3), col(T.FLOAT)) == ("3.3", J.REAL)
    assert render(struct.pack("<d", 3.3), col(T.DOUBLE)) == ("3.3", J.DOUBLE)
    assert render(struct.pack("<d", 0.1 + 0.2), col(T.DOUBLE))[0] == "0.30000000000000004"


# --- BIT, YEAR, ENUM, SET ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bits", "data", "text"),
    [
        (1, b"\x01", "1"),
        (1, b"\x00", "0"),
        (8, b"\xff", "255"),
        (10, b"\x02\x01", "513"),
        (17, b"\x01\x00\x01", "65537"),
        (64, b"\xff" * 8, "18446744073709551615"),
        (64, b"\x80" + b"\x00" * 7, "9223372036854775808"),
    ],
)
def test_bit(bits: int, data: bytes, text: str) -> None:
    assert render(data, col(T.BIT, bits=bits)) == (text, J.BIT)


@pytest.mark.parametrize(("raw", "text"), [(0, "0000"), (1, "1901"), (124, "2024"), (255, "2155")])
def test_year(raw: int, text: str) -> None:
    assert render(bytes([raw]), col(T.YEAR)) == (text, J.VARCHAR)


def test_enum_canal_index_mode() -> None:
    column = col(T.ENUM, "enum('a','b')", max_length=1, enum_values=("a", "b"))
    assert render(b"\x02", column, value_mode="canal") == ("2", J.INTEGER)
    assert render(b"\x00", column, value_mode="canal") == ("0", J.INTEGER)
    wide = col(T.ENUM, max_length=2, enum_values=tuple(f"v{i}" for i in range(300)))
    assert render(b"\x2c\x01", wide, value_mode="canal") == ("300", J.INTEGER)


def test_enum_labels_in_faithful_mode() -> None:
    column = col(T.ENUM, "enum('a','b')", max_length=1, enum_values=("a", "b"))
    assert render(b"\x02", column) == ("b", J.INTEGER)
    assert render(b"\x00", column) == ("", J.INTEGER)
    with pytest.raises(SchemaMismatch, match="ENUM index 3"):
        render(b"\x03", column)


def test_set_canal_bitmask_mode() -> None:
    column = col(T.SET, "set('x','y','z')", max_length=1, set_values=("x", "y", "z"))
    assert render(b"\x05", column, value_mode="canal") == ("5", J.BIT)
    assert render(b"\x00", column, value_mode="canal") == ("0", J.BIT)
    big = col(T.SET, max_length=8, set_values=tuple(f"s{i}" for i in range(64)))
    assert render(b"\xff" * 8, big, value_mode="canal") == ("18446744073709551615", J.BIT)


def test_enum_and_set_render_labels_by_default_with_canals_sql_types() -> None:
    enum = col(T.ENUM, "enum('a','b')", max_length=1, enum_values=("a", "b"))
    assert render(b"\x02", enum) == ("b", J.INTEGER)
    assert null_sql_type(enum, DecodeOptions()) == J.INTEGER
    labels = col(T.SET, "set('x','y','z')", max_length=1, set_values=("x", "y", "z"))
    assert render(b"\x06", labels) == ("y,z", J.BIT)
    assert null_sql_type(labels, DecodeOptions()) == J.BLOB


def test_set_labels_in_faithful_mode() -> None:
    column = col(T.SET, "set('x','y','z')", max_length=1, set_values=("x", "y", "z"))
    assert render(b"\x05", column) == ("x,z", J.BIT)
    assert render(b"\x00", column) == ("", J.BIT)


# --- dates and times -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ymd", "text"),
    [
        ((2024, 2, 29), "2024-02-29"),
        ((0, 0, 0), "0000-00-00"),
        ((2020, 0, 0), "2020-00-00"),
        ((2020, 5, 0), "2020-05-00"),
        ((1, 1, 1), "0001-01-01"),
        ((9999, 12, 31), "9999-12-31"),
    ],
)
def test_date(ymd: tuple[int, int, int], text: str) -> None:
    assert render(date_bytes(*ymd), col(T.DATE)) == (text, J.DATE)


@pytest.mark.parametrize(
    ("fsp", "usec", "text"),
    [
        (0, 0, "2024-03-05 07:08:09"),
        (1, 500000, "2024-03-05 07:08:09.5"),
        (2, 120000, "2024-03-05 07:08:09.12"),
        (3, 123000, "2024-03-05 07:08:09.123"),
        (4, 123400, "2024-03-05 07:08:09.1234"),
        (5, 123450, "2024-03-05 07:08:09.12345"),
        (6, 123456, "2024-03-05 07:08:09.123456"),
        (6, 1, "2024-03-05 07:08:09.000001"),
        (3, 0, "2024-03-05 07:08:09.000"),
    ],
)
def test_datetime2_has_exactly_fsp_digits(fsp: int, usec: int, text: str) -> None:
    data = datetime2_bytes(2024, 3, 5, 7, 8, 9, usec, fsp)
    assert render(data, col(T.DATETIME2, fsp=fsp)) == (text, J.TIMESTAMP)


def test_datetime2_zero_and_partial_zero() -> None:
    assert render(datetime2_bytes(0, 0, 0, 0, 0, 0, 0, 0), col(T.DATETIME2)) == (
        "0000-00-00 00:00:00",
        J.TIMESTAMP,
    )
    zero6 = datetime2_bytes(0, 0, 0, 0, 0, 0, 0, 6)
    assert render(zero6, col(T.DATETIME2, fsp=6))[0] == "0000-00-00 00:00:00.000000"
    partial = datetime2_bytes(2021, 0, 0, 0, 0, 0, 0, 0)
    assert render(partial, col(T.DATETIME2))[0] == "2021-00-00 00:00:00"
    top = datetime2_bytes(9999, 12, 31, 23, 59, 59, 999999, 6)
    assert render(top, col(T.DATETIME2, fsp=6))[0] == "9999-12-31 23:59:59.999999"


def test_legacy_datetime() -> None:
    data = struct.pack("<q", 20240305070809)
    assert render(data, col(T.DATETIME)) == ("2024-03-05 07:08:09", J.TIMESTAMP)
    assert render(struct.pack("<q", 0), col(T.DATETIME)) == ("0000-00-00 00:00:00", J.TIMESTAMP)


TIME2_CASES = [
    # negative, h, m, s, usec, fsp, text
    (False, 0, 0, 0, 0, 0, "00:00:00"),
    (False, 12, 34, 56, 0, 0, "12:34:56"),
    (False, 838, 59, 59, 0, 0, "838:59:59"),
    (True, 838, 59, 59, 0, 0, "-838:59:59"),
    (True, 0, 0, 1, 0, 0, "-00:00:01"),
    (False, 100, 0, 0, 0, 0, "100:00:00"),
    (True, 0, 0, 1, 500000, 1, "-00:00:01.5"),
    (True, 0, 0, 0, 500000, 1, "-00:00:00.5"),
    (True, 0, 0, 1, 0, 1, "-00:00:01.0"),
    (True, 1, 2, 3, 450000, 2, "-01:02:03.45"),
    (True, 0, 0, 0, 1000, 3, "-00:00:00.001"),
    (True, 0, 0, 1, 123400, 4, "-00:00:01.1234"),
    (True, 0, 0, 0, 10, 5, "-00:00:00.00001"),
    (True, 0, 0, 1, 500000, 6, "-00:00:01.500000"),
    (True, 0, 0, 0, 1, 6, "-00:00:00.000001"),
    (True, 838, 59, 59, 0, 6, "-838:59:59.000000"),
    (False, 1, 2, 3, 456789, 6, "01:02:03.456789"),
    (False, 0, 0, 0, 0, 3, "00:00:00.000"),
]


@pytest.mark.parametrize(("negative", "h", "m", "s", "usec", "fsp", "text"), TIME2_CASES)
def test_time2(  # noqa: PLR0917
    negative: bool, h: int, m: int, s: int, usec: int, fsp: int, text: str
) -> None:
    data = time2_bytes(negative, h, m, s, usec, fsp)
    assert render(data, col(T.TIME2, fsp=fsp)) == (text, J.TIME)


@pytest.mark.parametrize(
    ("disk", "text"),
    [  # the table in canal's RowsLogBuffer (MySQL's my_time_packed_from_binary), fsp 2
        ("80000000", "00:00:00.00"),
        ("7FFFFFFF", "-00:00:00.01"),
        ("7FFFFF9D", "-00:00:00.99"),
        ("7FFFFF00", "-00:00:01.00"),
        ("7FFFFEFF", "-00:00:01.01"),
        ("7FFFFEF6", "-00:00:01.10"),
    ],
)
def test_time2_negative_fraction_table(disk: str, text: str) -> None:
    assert render(bytes.fromhex(disk), col(T.TIME2, fsp=2)) == (text, J.TIME)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "00:00:00"), (123456, "12:34:56"), (-8385959, "-838:59:59"), (-1, "-00:00:01")],
)
def test_legacy_time(value: int, text: str) -> None:
    data = (value & 0xFFFFFF).to_bytes(3, "little")
    assert render(data, col(T.TIME)) == (text, J.TIME)


def test_timestamp2_in_the_given_zone() -> None:
    seconds = 1700000000  # 2023-11-14 22:13:20 UTC
    column = col(T.TIMESTAMP2, fsp=3)
    data = timestamp2_bytes(seconds, 123000, 3)
    assert render(data, column, time_zone=UTC) == ("2023-11-14 22:13:20.123", J.TIMESTAMP)
    shanghai = ZoneInfo("Asia/Shanghai")
    assert render(data, column, time_zone=shanghai)[0] == "2023-11-15 06:13:20.123"


def test_timestamp_zero_and_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    zero = timestamp2_bytes(0, 0, 0)
    assert render(zero, col(T.TIMESTAMP2), time_zone=berlin)[0] == "0000-00-00 00:00:00"
    zero6 = timestamp2_bytes(0, 0, 6)
    assert render(zero6, col(T.TIMESTAMP2, fsp=6))[0] == "0000-00-00 00:00:00.000000"
    summer = timestamp2_bytes(1720000000, 0, 0)  # 2024-07-03 09:46:40 UTC, CEST = UTC+2
    assert render(summer, col(T.TIMESTAMP2), time_zone=berlin)[0] == "2024-07-03 11:46:40"
    legacy = struct.pack("<I", 1720000000)
    assert render(legacy, col(T.TIMESTAMP), time_zone=UTC) == ("2024-07-03 09:46:40", J.TIMESTAMP)
    assert render(struct.pack("<I", 0), col(T.TIMESTAMP))[0] == "0000-00-00 00:00:00"


@pytest.mark.parametrize("fsp", range(7))
def test_timestamp2_every_fsp(fsp: int) -> None:
    data = timestamp2_bytes(1, 654321, fsp)
    text = render(data, col(T.TIMESTAMP2, fsp=fsp), time_zone=UTC)[0]
    assert text == "1970-01-01 00:00:01" + ("." + "654321"[:fsp] if fsp else "")


# --- strings and blobs ---------------------------------------------------------------------


def test_varchar_utf8mb4_and_empty() -> None:
    column = col(T.VARCHAR, "varchar(64)", charset="utf8mb4", max_length=256)
    emoji = "naïve 😀 中文"
    assert render(lenenc(emoji.encode(), 2), column) == (emoji, J.VARCHAR)
    assert render(lenenc(b"", 2), column) == ("", J.VARCHAR)
    short = col(T.VARCHAR, "varchar(10)", charset="utf-8", max_length=40)
    assert render(lenenc("é😀".encode(), 1), short) == ("é😀", J.VARCHAR)


def test_latin1_is_windows_1252_like_mysql() -> None:
    column = col(T.VARCHAR, "varchar(10)", charset="latin1", max_length=10)
    assert render(lenenc(b"\x80\xe9\x81", 1), column) == ("€é\x81", J.VARCHAR)
    as_codec = col(T.VARCHAR, "varchar(10)", charset="cp1252", max_length=10)
    assert render(lenenc(b"\x9d\xff", 1), as_codec)[0] == "\x9dÿ"


def test_malformed_utf8_becomes_replacement_character() -> None:
    column = col(T.VARCHAR, "varchar(10)", charset="utf-8", max_length=40)
    assert render(lenenc(b"a\xffb", 1), column)[0] == "a\ufffdb"


def test_char_uses_two_length_bytes_above_255() -> None:
    column = col(T.STRING, "char(100)", charset="utf8mb4", max_length=400)
    assert render(lenenc(b"abc", 2), column) == ("abc", J.CHAR)
    short = col(T.STRING, "char(3)", charset="utf8mb4", max_length=12)
    assert render(lenenc(b"abc", 1), short) == ("abc", J.CHAR)


def test_binary_and_varbinary_are_iso_8859_1_blob() -> None:
    raw = bytes(range(256))
    varbinary = col(T.VARCHAR, "varbinary(300)", max_length=300)
    assert render(lenenc(raw, 2), varbinary) == (raw.decode("latin-1"), J.BLOB)
    binary = col(T.STRING, "binary(4)", max_length=4)
    assert render(lenenc(b"\x00\xff\x10\x80", 1), binary) == ("\x00\xff\x10\x80", J.BLOB)


@pytest.mark.parametrize("prefix", [1, 2, 3, 4])
def test_text_and_blob_prefix_sizes(prefix: int) -> None:
    payload = "héllo 😀".encode()
    text = col(T.BLOB, "text", charset="utf8mb4", max_length=prefix, is_text=True)
    assert render(lenenc(payload, prefix), text) == ("héllo 😀", J.CLOB)
    blob = col(T.BLOB, "blob", max_length=prefix)
    assert render(lenenc(payload, prefix), blob) == (payload.decode("latin-1"), J.BLOB)


def test_one_megabyte_blob() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    blob = col(T.BLOB, "mediumblob", max_length=3)
    text, sql_type = render(lenenc(payload, 3), blob)
    assert sql_type == J.BLOB
    assert len(text) == len(payload)
    assert text.encode("latin-1") == payload


def test_mariadb_json_is_longtext() -> None:
    column = col(T.BLOB, "longtext", charset="utf8mb4", max_length=4, is_text=True)
    doc = '{"a": [1, 2.5, "x"]}'
    assert render(lenenc(doc.encode(), 4), column) == (doc, J.CLOB)


def test_geometry_is_raw_srid_plus_wkb() -> None:
    wkb = struct.pack("<I", 4326) + b"\x01" + struct.pack("<Idd", 1, 1.5, -2.0)
    column = col(T.GEOMETRY, "point", max_length=4)
    assert render(lenenc(wkb, 4), column) == (wkb.decode("latin-1"), J.BLOB)


# --- MySQL binary JSON ---------------------------------------------------------------------


def _jsonb_small_object(items: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """A small JSON object of (key, value type, inline-or-data) items."""
    count = len(items)
    header = 4 + count * 4 + count * 3
    keys_at = header
    key_entries = b""
    value_entries = b""
    blob = b""
    for key, _, _ in items:
        key_entries += struct.pack("<HH", keys_at + len(blob), len(key))
        blob += key
    for _, kind, data in items:
        if kind[0] in (4, 5, 6):
            value_entries += kind + data.ljust(2, b"\x00")
        else:
            value_entries += kind + struct.pack("<H", header + len(blob))
            blob += data
    body = key_entries + value_entries + blob
    return b"\x00" + struct.pack("<HH", count, 4 + len(body)) + body


def test_mysql_binary_json() -> None:
    doc = _jsonb_small_object(
        [
            (b"a", b"\x05", struct.pack("<h", -7)),
            (b"bb", b"\x04", b"\x01"),
            (b"s", b"\x0c", b'\x05q"u\\o'),
            (b"d", b"\x0b", struct.pack("<d", 1e10)),
            (b"n", b"\x04", b"\x00"),
        ]
    )
    column = col(T.JSON, "json", max_length=4)
    text = render(lenenc(doc, 4), column)
    assert text == ('{"a": -7, "bb": true, "s": "q\\"u\\\\o", "d": 1.0E10, "n": null}', J.VARCHAR)
    assert render(lenenc(b"", 4), column) == ("", J.VARCHAR)


def test_mysql_binary_json_array_and_scalar() -> None:
    array = b"\x02" + struct.pack("<HH", 2, 4 + 6) + b"\x06\x03\x00" + b"\x04\x02\x00"
    column = col(T.JSON, "json", max_length=4)
    assert render(lenenc(array, 4), column)[0] == "[3, false]"
    scalar = b"\x0c\x02hi"
    assert render(lenenc(scalar, 4), column)[0] == '"hi"'


# --- NULL types, errors --------------------------------------------------------------------


def test_unknown_type_names_the_column() -> None:
    column = ColumnMeta(3, "weird", 99, "vector(3)")
    with pytest.raises(UnsupportedColumnType, match=r"#3 `weird` \(vector\(3\)\)"):
        make_decoder(column, DecodeOptions())
    with pytest.raises(UnsupportedColumnType, match="type code 14"):
        make_decoder(col(T.NEWDATE), DecodeOptions())


def test_unknown_charset_is_reported() -> None:
    column = col(T.VARCHAR, "varchar(3)", charset="klingon", max_length=3)
    with pytest.raises(UnsupportedColumnType, match="klingon"):
        make_decoder(column, DecodeOptions())


def test_truncated_values_raise() -> None:
    column = col(T.VARCHAR, "varchar(10)", charset="utf-8", max_length=10)
    with pytest.raises(TruncatedRowImage):
        decode_value(b"\x05ab", 0, column)
    blob = col(T.BLOB, "blob", max_length=4)
    with pytest.raises(TruncatedRowImage):
        decode_value(struct.pack("<I", 10**6) + b"x", 0, blob)
    decimal = col(T.NEWDECIMAL, precision=12, scale=2)
    with pytest.raises(TruncatedRowImage):
        decode_value(b"\x80\x00", 0, decimal)


def test_corrupt_decimal_group_raises() -> None:
    column = col(T.NEWDECIMAL, precision=18, scale=9)
    data = b"\x80" + b"\xff" * 7  # 4-byte groups above 999999999
    with pytest.raises(TruncatedRowImage, match="corrupt DECIMAL"):
        decode_value(data, 0, column)
