"""Column values of binlog row images, rendered as canal renders them.

Decoding is a table: ``DECODERS`` maps a ``MYSQL_TYPE_*`` code to a small factory that, given a
``ColumnMeta`` (and the ``DecodeOptions``), returns a pure ``ValueDecoder`` ``(data, pos) -> (text,
sql_type, new_pos)``. ``bridge.parse.binlog.rows.RowDecoder`` builds one decoder per column once per
table and calls them in a tight loop.

Renderings and ``sql_type`` codes follow canal 1.1.8's ``RowsLogBuffer.fetchValue`` +
``LogEventConvert.parseOneRow``. The ``sql_type`` is canal's in both value modes
(``DecodeOptions.value_mode``): canal's adapters pick the JDBC setter from it. The table shows
the ``faithful`` text; ``canal`` differs where marked (docs/canal-compatibility.md has the
complete list):

========================  ==========================================  =========  ==========
MySQL type (code)         text                                        sql_type   NULL type
========================  ==========================================  =========  ==========
TINY (1)                  "-128".."127"; unsigned "0".."255"          TINYINT    TINYINT
                          (unsigned >= 128: SMALLINT)
SHORT (2)                 unsigned >= 32768: INTEGER                  SMALLINT   SMALLINT
INT24 (9)                 unsigned >= 2**23: still INTEGER            INTEGER    INTEGER
LONG (3)                  unsigned >= 2**31: BIGINT                   INTEGER    INTEGER
LONGLONG (8)              unsigned >= 2**63: DECIMAL                  BIGINT     BIGINT
NEWDECIMAL (246)          BigDecimal.toPlainString, scale digits      DECIMAL    DECIMAL
  canal                   a zero last partial group dropped ("5.0")
FLOAT (4) / DOUBLE (5)    Float/Double.toString ("1.0E10", "100.0")   REAL/DOUBLE (same)
BIT (16)                  unsigned decimal of the big-endian bits     BIT        BIT
YEAR (13)                 "0000" for 0, else "1901".."2155"            VARCHAR    VARCHAR
DATE (10)                 "yyyy-mm-dd", "0000-00-00", "2020-00-00"    DATE       DATE
TIME (11) / TIME2 (19)    "[-]hh:mm:ss[.f{fsp}]", "-838:59:59"        TIME       TIME
  canal, TIME (11)        exactly 100 hours as "00:mm:ss"
DATETIME (12) / 2 (18)    "yyyy-mm-dd hh:mm:ss[.f{fsp}]"              TIMESTAMP  TIMESTAMP
TIMESTAMP (7) / 2 (17)    same, in ``DecodeOptions.time_zone``;       TIMESTAMP  TIMESTAMP
                          0 -> "0000-00-00 00:00:00[.000]"
VARCHAR (15) / VAR_STR    text in the column charset                  VARCHAR    VARCHAR
  binary (charset None)   bytes as binary text (below)                BLOB       BLOB
STRING (254, CHAR)        text in the column charset                  CHAR       CHAR
  binary (BINARY(n))      bytes as binary text                        BLOB       BLOB
BLOB family (249-252)     TEXT: charset text                          CLOB       CLOB
                          BLOB: bytes as binary text                  BLOB       BLOB
ENUM (247)                the label ("" for the '' error value)       INTEGER    INTEGER
  canal                   the 1-based index ("0" = the '' error)
SET (248)                 the member labels joined by ","             BIT        BLOB
  canal                   the bitmask as an unsigned decimal
JSON (245, MySQL binary)  canal's JsonConversion text                 VARCHAR    OTHER
GEOMETRY (255)            raw bytes (SRID + WKB) as binary text       BLOB       BLOB
VECTOR (242, MySQL 9)     VECTOR_TO_STRING text "[1.00000e+00,...]"   OTHER      OTHER
========================  ==========================================  =========  ==========

The NULL column type is canal's ``mysqlToJavaType`` followed by the one adjustment canal 1.1.8
makes for NULLs too (its issue #4652): the binary kinds (BINARY, VARBINARY, LONGVARBINARY)
become CLOB for TEXT columns and BLOB for everything else (BINARY, BLOB, SET, GEOMETRY). The
unsigned widening happens only for non-NULL values. We reproduce this, since it reaches
FlatMessage ``sqlType``.

Binary bytes (BINARY, VARBINARY, BLOB, GEOMETRY) become text as ``DecodeOptions.binary_encoding``
says: ``latin1`` (canal: one ISO-8859-1 character per byte) or ``base64`` (standard alphabet,
padded: what Flink's JSON format expects of a ``BYTES`` column).

Deliberate differences from canal, each a canal bug:

- Text is decoded with the *column's* charset (canal decodes every column with the connection
  charset). MySQL's ``latin1`` is Windows-1252 with the five undefined bytes mapped to U+0081..;
  malformed bytes become U+FFFD, as Java's ``new String(bytes, charset)`` does.
- DECIMAL keeps exactly ``scale`` fractional digits ("0.00"); canal drops a zero last group of
  fewer than 9 fractional digits ("0.0", canal issue #5313).
- A legacy TIME (type 11) of exactly 100 hours renders "100:..", where canal writes "00:..".
- ENUM/SET values are labels (as MySQL prints them), where canal writes the stored index /
  bitmask.

``value_mode="canal"`` reproduces canal's text in the last three (canal's text decoding with
its connection charset is not reproduced: it garbles every non-UTF-8 column).

Unknown or internal-only types (DECIMAL 0, NEWDATE 14, ...) raise ``UnsupportedColumnType``
naming the column; an image running past the end of the event raises ``TruncatedRowImage``.
"""

from __future__ import annotations

import base64
import codecs
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from types import SimpleNamespace
from typing import Any, Literal, get_args

from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.javafmt import big_decimal_plain, double_to_string, float_to_string
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.parse.exceptions import SchemaMismatch
from bridge.types import JdbcType

ValueDecoder = Callable[[bytes, int], tuple[str, int, int]]


class RowDecodeError(SchemaMismatch):
    """A row image cannot be decoded with the known table definition."""


class UnsupportedColumnType(RowDecodeError):
    """The column's type (or charset) has no decoder."""

    def __init__(self, column: ColumnMeta, reason: str = "") -> None:
        self.column = column
        detail = reason or f"no decoder for MySQL type code {column.type_code}"
        super().__init__(
            f"column #{column.index} `{column.name}` ({column.mysql_type or '?'}): {detail}"
        )


class TruncatedRowImage(RowDecodeError):
    """A value runs past the end of the rows event, or a value's bytes are corrupt."""


ValueMode = Literal["faithful", "canal"]
BinaryEncoding = Literal["latin1", "base64"]


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How values are rendered; one instance per parser, from the destination's ``mq``
    settings (``mq.value_mode``, ``mq.binary_encoding``), so it is picklable: the binlog reader
    may run in a child process.

    ``time_zone`` renders TIMESTAMP columns (canal: the JVM default zone); ``None`` means this
    process's local zone, as a JVM would use. ``value_mode`` ``faithful`` spells values as the
    source holds them, ``canal`` exactly as canal 1.1.x does (see the module docstring).
    ``binary_encoding`` turns binary bytes into text.
    """

    time_zone: tzinfo | None = None
    value_mode: ValueMode = "faithful"
    binary_encoding: BinaryEncoding = "latin1"

    def __post_init__(self) -> None:
        if self.value_mode not in get_args(ValueMode):
            raise ValueError(f"mq.value_mode {self.value_mode!r} is unknown: use faithful or canal")
        if self.binary_encoding not in get_args(BinaryEncoding):
            raise ValueError(
                f"mq.binary_encoding {self.binary_encoding!r} is unknown: use latin1 or base64"
            )

    @property
    def canal(self) -> bool:
        """Whether values are spelled as canal spells them (``value_mode="canal"``)."""
        return self.value_mode == "canal"


DecoderFactory = Callable[[ColumnMeta, DecodeOptions], ValueDecoder]

# java.sql.Types codes as plain ints: a JdbcType member costs an enum lookup per value, and
# row images cross to the instance's process as marshal data, which takes ints, not enums.
_T: Any = SimpleNamespace(**{t.name: t.value for t in JdbcType})
_ZERO_DATETIME = "0000-00-00 00:00:00"

_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_U16 = struct.Struct("<H")
_I24 = struct.Struct("<Hb")  # low 16 bits, signed high byte
_U24 = struct.Struct("<HB")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_BE_U24 = struct.Struct(">BH")
_BE_U32 = struct.Struct(">I")
_BE_U40 = struct.Struct(">BI")
_BE_U48 = struct.Struct(">HI")
_BE_I8 = struct.Struct(">b")
_BE_I16 = struct.Struct(">h")
_BE_I24 = struct.Struct(">bH")
_BE_U16 = struct.Struct(">H")


def _truncated(data: bytes, end: int) -> TruncatedRowImage:
    return TruncatedRowImage(f"value ends at byte {end}, past the event body of {len(data)} bytes")


# ---------------------------------------------------------------------------------------------
# Integers and floating point


# Integer columns: (bytes, sql_type, sql_type of an UNSIGNED value above the signed range).
# INT24's UNSIGNED values stay INTEGER.
INTEGER_LAYOUTS: dict[int, tuple[int, int, int]] = {
    MysqlType.TINY: (1, _T.TINYINT, _T.SMALLINT),
    MysqlType.SHORT: (2, _T.SMALLINT, _T.INTEGER),
    MysqlType.INT24: (3, _T.INTEGER, _T.INTEGER),
    MysqlType.LONG: (4, _T.INTEGER, _T.BIGINT),
    MysqlType.LONGLONG: (8, _T.BIGINT, _T.DECIMAL),
}


def _integer(fmt: struct.Struct, size: int, sql_type: int, wider: int) -> DecoderFactory:
    """canal reads every integer signed; an UNSIGNED column whose raw value is negative gets
    ``2**bits`` added and the next wider JDBC type (TINYINT 200 -> SMALLINT, 5 stays TINYINT)."""
    modulus = 1 << (8 * size)
    unpack = fmt.unpack_from

    def factory(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
        if not col.unsigned:

            def signed(data: bytes, pos: int) -> tuple[str, int, int]:
                return str(unpack(data, pos)[0]), sql_type, pos + size

            return signed

        def unsigned(data: bytes, pos: int) -> tuple[str, int, int]:
            value = unpack(data, pos)[0]
            if value < 0:
                return str(value + modulus), wider, pos + size
            return str(value), sql_type, pos + size

        return unsigned

    return factory


def _int24(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    unpack = _I24.unpack_from
    unsigned = col.unsigned

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        low, high = unpack(data, pos)
        value = (high << 16) | low
        if unsigned and value < 0:
            value += 1 << 24
        return str(value), _T.INTEGER, pos + 3

    return decode


def _float(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    unpack = _F32.unpack_from

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        return float_to_string(unpack(data, pos)[0]), _T.REAL, pos + 4

    return decode


def _double(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    unpack = _F64.unpack_from

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        return double_to_string(unpack(data, pos)[0]), _T.DOUBLE, pos + 8

    return decode


# ---------------------------------------------------------------------------------------------
# DECIMAL: MySQL's bin2decimal format. Groups of 9 digits in 4 bytes, a partial leading integer
# group and trailing fraction group in 1..4 bytes, big-endian, sign bit flipped, negative values
# with every bit inverted.

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_layout(precision: int, scale: int) -> tuple[tuple[int, int], ...]:
    """``(bytes, digits)`` per group from the most significant one."""
    intg = precision - scale
    groups: list[tuple[int, int]] = []
    if intg % 9:
        groups.append((_DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9) + [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((_DIG2BYTES[scale % 9], scale % 9))
    return tuple(groups)


def _decimal(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    if col.precision <= 0 or not 0 <= col.scale <= col.precision:
        raise UnsupportedColumnType(col, f"bad DECIMAL({col.precision},{col.scale}) metadata")
    scale = col.scale
    groups = decimal_layout(col.precision, scale)
    size = sum(nbytes for nbytes, _ in groups)
    sign_bit = 1 << (8 * size - 1)
    inverted = ((1 << (8 * size)) - 1) ^ sign_bit  # negative values: every bit but the sign
    # From the least significant group: (bit mask, bit width, 10**digits).
    lsb_first = tuple(((1 << 8 * b) - 1, 8 * b, 10**d) for b, d in reversed(groups))
    tail_digits = scale % 9
    quirk = options.canal and tail_digits > 0
    from_bytes = int.from_bytes

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        end = pos + size
        if end > len(data):
            raise _truncated(data, end)
        raw = from_bytes(data[pos:end], "big")
        negative = not raw & sign_bit
        raw ^= inverted if negative else sign_bit
        unscaled = 0
        weight = 1
        for mask, width, limit in lsb_first:
            group = raw & mask
            if group >= limit:
                raise TruncatedRowImage(f"corrupt DECIMAL({col.precision},{scale}) group {group}")
            unscaled += group * weight
            weight *= limit
            raw >>= width
        if quirk and unscaled % 10**tail_digits == 0:
            return _canal_decimal(unscaled, scale, tail_digits, negative), _T.DECIMAL, end
        return big_decimal_plain(-unscaled if negative else unscaled, scale), _T.DECIMAL, end

    return decode


def _canal_decimal(unscaled: int, scale: int, tail_digits: int, negative: bool) -> str:
    """canal's getDecimal0 omits a zero trailing partial group, then pads an empty fraction
    with one '0' (DECIMAL(12,2) 5.00 -> "5.0")."""
    kept = scale - tail_digits
    value = unscaled // 10**tail_digits
    if kept == 0:
        value, kept = value * 10, 1
    return big_decimal_plain(-value if negative else value, kept)


# ---------------------------------------------------------------------------------------------
# BIT, YEAR, ENUM, SET


def _bit(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    bits = col.bits or 1
    if bits == 1:
        unpack = _I8.unpack_from  # canal reads BIT(1) as a signed byte

        def one(data: bytes, pos: int) -> tuple[str, int, int]:
            return str(unpack(data, pos)[0]), _T.BIT, pos + 1

        return one
    size = (bits + 7) // 8
    from_bytes = int.from_bytes

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        end = pos + size
        if end > len(data):
            raise _truncated(data, end)
        return str(from_bytes(data[pos:end], "big")), _T.BIT, end

    return decode


def _year(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        value = data[pos]
        return ("0000" if value == 0 else str(value + 1900)), _T.VARCHAR, pos + 1

    return decode


def storage_bytes(col: ColumnMeta) -> int:
    """An ENUM or SET value's bytes: the table map's metadata, else what its labels need."""
    if col.max_length:
        return col.max_length
    if col.type_code == MysqlType.ENUM:
        return 1 if len(col.enum_values) < 256 else 2
    if col.set_values:
        size = (len(col.set_values) + 7) // 8
        return 8 if size > 4 else size
    raise UnsupportedColumnType(col, "unknown storage size (no metadata, no labels)")


def _little_endian_uint(size: int) -> Callable[[bytes, int], int]:
    from_bytes = int.from_bytes

    def read(data: bytes, pos: int) -> int:
        if pos + size > len(data):
            raise _truncated(data, pos + size)
        return from_bytes(data[pos : pos + size], "little")

    return read


def _enum(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """The label (faithful) or canal's 1-based index; sql_type INTEGER either way (canal's)."""
    size = storage_bytes(col)
    read = _little_endian_uint(size)
    if options.canal:

        def index(data: bytes, pos: int) -> tuple[str, int, int]:
            return str(read(data, pos)), _T.INTEGER, pos + size

        return index
    labels = ("", *col.enum_values)

    def label(data: bytes, pos: int) -> tuple[str, int, int]:
        value = read(data, pos)
        if value >= len(labels):
            raise RowDecodeError(f"ENUM index {value} out of range for column `{col.name}`")
        return labels[value], _T.INTEGER, pos + size

    return label


def _set(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """The labels (faithful) or canal's bitmask as an unsigned decimal; sql_type BIT either
    way (canal's)."""
    size = storage_bytes(col)
    read = _little_endian_uint(size)
    if options.canal:

        def mask(data: bytes, pos: int) -> tuple[str, int, int]:
            return str(read(data, pos)), _T.BIT, pos + size

        return mask
    labels = col.set_values

    def label(data: bytes, pos: int) -> tuple[str, int, int]:
        value = read(data, pos)
        if value >> len(labels):
            raise RowDecodeError(f"SET bits {value:#x} out of range for column `{col.name}`")
        text = ",".join(labels[i] for i in range(len(labels)) if value >> i & 1)
        return text, _T.BIT, pos + size

    return label


# ---------------------------------------------------------------------------------------------
# Dates and times


def _fraction_reader(fsp: int) -> tuple[Callable[[bytes, int], int], int]:
    """Fractional seconds of DATETIME2/TIMESTAMP2 -> (reader returning microseconds, bytes)."""
    if fsp in (1, 2):
        unpack = _BE_I8.unpack_from
        return (lambda data, pos: unpack(data, pos)[0] * 10000), 1
    if fsp in (3, 4):
        unpack16 = _BE_I16.unpack_from
        return (lambda data, pos: unpack16(data, pos)[0] * 100), 2
    if fsp in (5, 6):
        unpack24 = _BE_I24.unpack_from

        def micros(data: bytes, pos: int) -> int:
            high, low = unpack24(data, pos)
            return int((high << 16) | low)

        return micros, 3
    return (lambda data, pos: 0), 0


def _check_fsp(col: ColumnMeta) -> int:
    if not 0 <= col.fsp <= 6:
        raise UnsupportedColumnType(col, f"fractional seconds precision {col.fsp} not in 0..6")
    return col.fsp


def _date(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    unpack = _U24.unpack_from

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        low, high = unpack(data, pos)
        value = (high << 16) | low
        if value == 0:
            return "0000-00-00", _T.DATE, pos + 3
        return f"{value >> 9:04d}-{value >> 5 & 15:02d}-{value & 31:02d}", _T.DATE, pos + 3

    return decode


def _time(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """Legacy TIME: a signed little-endian int24 holding [-]HHMMSS in decimal. canal prints
    the hours with two digits up to 100 and keeps the last two (100 -> "00"): ``canal``
    mode does too."""
    unpack = _I24.unpack_from
    hours_100 = "00" if options.canal else "100"

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        low, high = unpack(data, pos)
        value = (high << 16) | low
        if value == 0:
            return "00:00:00", _T.TIME, pos + 3
        sign = "-" if value < 0 else ""
        value = abs(value)
        hours = value // 10000
        hh = hours_100 if hours == 100 else f"{hours:02d}"
        text = f"{sign}{hh}:{value % 10000 // 100:02d}:{value % 100:02d}"
        return text, _T.TIME, pos + 3

    return decode


def _java_rem(value: int, divisor: int) -> int:
    return value % divisor if value >= 0 else -(-value % divisor)


def _time2(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """TIME2 (MySQL 5.6+, MariaDB with mysql56_temporal_format): canal's algorithm, including
    the reversed fraction of negative values ("-00:00:01.5", "-00:00:00.5")."""
    fsp = _check_fsp(col)
    unpack24 = _BE_U24.unpack_from
    unpack48 = _BE_U48.unpack_from
    u8 = _U8.unpack_from
    u16 = _BE_U16.unpack_from
    size = 3 + (fsp + 1) // 2

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        if fsp >= 5:
            high, low = unpack48(data, pos)
            intpart = ((high << 32) | low) - 0x800000000000
            ltime = intpart
            frac = _java_rem(intpart, 1 << 24)
        else:
            high, low = unpack24(data, pos)
            intpart = ((high << 16) | low) - 0x800000
            if fsp == 0:
                frac = 0
            elif fsp <= 2:
                frac = u8(data, pos + 3)[0]
                if intpart < 0 and frac > 0:
                    intpart += 1
                    frac -= 0x100
                frac *= 10000
            else:
                frac = u16(data, pos + 3)[0]
                if intpart < 0 and frac > 0:
                    intpart += 1
                    frac -= 0x10000
                frac *= 100
            ltime = intpart << 24
        if intpart == 0:
            text = "-00:00:00" if frac < 0 else "00:00:00"
        else:
            hms = abs(ltime) >> 24
            sign = "-" if ltime < 0 else ""
            text = f"{sign}{hms >> 12 & 1023:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}"
        if fsp:
            text = f"{text}.{abs(frac):06d}"[: len(text) + 1 + fsp]
        return text, _T.TIME, pos + size

    return decode


def _datetime(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """Legacy DATETIME: little-endian int64 YYYYMMDDhhmmss."""
    unpack = _I64.unpack_from

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        value = unpack(data, pos)[0]
        if value == 0:
            return _ZERO_DATETIME, _T.TIMESTAMP, pos + 8
        d, t = divmod(value, 1000000)
        text = (
            f"{d // 10000:04d}-{d % 10000 // 100:02d}-{d % 100:02d} "
            f"{t // 10000:02d}:{t % 10000 // 100:02d}:{t % 100:02d}"
        )
        return text, _T.TIMESTAMP, pos + 8

    return decode


# "00".."99": hours, minutes and seconds of a DATETIME2 by index instead of a format each.
_TWO_DIGITS = tuple(f"{i:02d}" for i in range(100))
_DATE_CACHE_SIZE = 4096


def _datetime2(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """Rows share few dates: the "yyyy-mm-dd " part is cached per packed year-month-day."""
    fsp = _check_fsp(col)
    fraction, frac_size = _fraction_reader(fsp)
    size = 5 + frac_size
    dates: dict[int, str] = {}
    two = _TWO_DIGITS
    from_bytes = int.from_bytes
    sql_type: int = _T.TIMESTAMP

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        end = pos + size
        if end > len(data):
            raise _truncated(data, end)
        intpart = from_bytes(data[pos : pos + 5], "big") - 0x8000000000
        if intpart == 0:
            text = _ZERO_DATETIME
        else:
            ymd = intpart >> 17
            date = dates.get(ymd)
            if date is None:
                ym = ymd >> 5
                date = f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} "
                if len(dates) < _DATE_CACHE_SIZE:
                    dates[ymd] = date
            hms = intpart & 0x1FFFF
            text = f"{date}{two[hms >> 12]}:{two[hms >> 6 & 63]}:{two[hms & 63]}"
        if fsp == 6:  # three signed big-endian bytes of microseconds, as fsp 5; a corrupt
            # value of 10**6 or more keeps six digits, as canal's substring(0, fsp) does
            micros = from_bytes(data[pos + 5 : end], "big", signed=True)
            return f"{text}.{micros:06d}"[: len(text) + 7], sql_type, end
        if fsp:
            text = f"{text}.{fraction(data, pos + 5):06d}"[: 20 + fsp]
        return text, sql_type, end

    return decode


def _epoch_renderer(zone: tzinfo | None) -> Callable[[int], str]:
    """Seconds since the epoch -> java.sql.Timestamp.toString() without ".0", in ``zone``.

    Rows of one transaction usually share a timestamp: the last rendering is cached."""
    last_seconds = [-1]
    last_text = [""]
    fromtimestamp = datetime.fromtimestamp

    def render(seconds: int) -> str:
        if last_seconds[0] == seconds:
            return last_text[0]
        moment = fromtimestamp(seconds, zone)
        text = (
            f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
        )
        last_seconds[0], last_text[0] = seconds, text
        return text

    return render


def _timestamp(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    unpack = _U32.unpack_from
    render = _epoch_renderer(options.time_zone)

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        seconds = unpack(data, pos)[0]
        text = _ZERO_DATETIME if seconds == 0 else render(seconds)
        return text, _T.TIMESTAMP, pos + 4

    return decode


def _timestamp2(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    fsp = _check_fsp(col)
    unpack = _BE_U32.unpack_from
    fraction, frac_size = _fraction_reader(fsp)
    render = _epoch_renderer(options.time_zone)
    size = 4 + frac_size

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        seconds = unpack(data, pos)[0]
        text = _ZERO_DATETIME if seconds == 0 else render(seconds)
        if fsp:
            text = f"{text}.{fraction(data, pos + 4):06d}"[: 20 + fsp]
        return text, _T.TIMESTAMP, pos + size

    return decode


# ---------------------------------------------------------------------------------------------
# Strings, BLOB/TEXT, GEOMETRY, JSON

# MySQL charset names -> Python codecs (None: binary). Anything else goes through codecs.lookup.
_MYSQL_CHARSETS: dict[str, str | None] = {
    "binary": None,
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "mysql-latin1",
    "cp1252": "mysql-latin1",
    "windows-1252": "mysql-latin1",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "sjis": "shift_jis",
    "ujis": "euc_jp",
    "eucjpms": "euc_jp",
    "euckr": "euc_kr",
    "latin2": "iso8859-2",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "macroman": "mac-roman",
    "tis620": "tis-620",
    "macce": "mac-latin2",
    "hp8": "hp-roman8",
}

# MySQL's latin1 is cp1252 whose five undefined bytes map to the same code points.
_MYSQL_LATIN1_TABLE = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256)
)

TextDecoder = Callable[[bytes], str]


def _latin1(raw: bytes) -> str:
    return raw.decode("latin-1")


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def binary_text(options: DecodeOptions) -> TextDecoder:
    """How binary bytes become text: ``latin1`` (canal's ISO-8859-1, one character per byte)
    or ``base64``."""
    return _base64 if options.binary_encoding == "base64" else _latin1


def _mysql_latin1(raw: bytes) -> str:
    return codecs.charmap_decode(raw, "strict", _MYSQL_LATIN1_TABLE)[0]


def text_decoder(col: ColumnMeta) -> TextDecoder | None:
    """The bytes -> text function of a character column, ``None`` for binary data."""
    name = col.charset
    if name is None:
        kind = col.mysql_type.lower()
        textual = kind.startswith(("char", "varchar", "tinytext", "text", "mediumtext"))
        if not (col.is_text or textual or kind.startswith(("longtext", "json"))):
            return None
        name = "utf-8"  # a text column without charset metadata: canal's default charset
    lowered = name.lower()
    codec = _MYSQL_CHARSETS.get(lowered, lowered)
    if codec is None:
        return None
    if codec == "mysql-latin1":
        return _mysql_latin1
    try:
        codec = codecs.lookup(codec).name
    except LookupError:
        raise UnsupportedColumnType(col, f"unknown charset {name!r}") from None

    def decode(raw: bytes) -> str:
        return raw.decode(codec, "replace")

    return decode


def plain_codec(col: ColumnMeta) -> str | None:
    """The Python codec of a text column that ``bytes.decode(codec, "replace")`` renders
    (None for MySQL's latin1, which has a table of its own); call after ``text_decoder``."""
    name = col.charset or "utf-8"
    lowered = name.lower()
    codec = _MYSQL_CHARSETS.get(lowered, lowered)
    if codec is None or codec == "mysql-latin1":
        return None
    return codecs.lookup(codec).name


def prefixed_span(size: int) -> Callable[[bytes, int], tuple[int, int]]:
    """A reader of a ``size``-byte little-endian length prefix -> (start, end) of the value."""
    if size == 1:

        def one(data: bytes, pos: int) -> tuple[int, int]:
            end = pos + 1 + data[pos]
            if end > len(data):
                raise _truncated(data, end)
            return pos + 1, end

        return one
    if size == 3:
        unpack3 = _U24.unpack_from

        def three(data: bytes, pos: int) -> tuple[int, int]:
            low, high = unpack3(data, pos)
            end = pos + 3 + (low | high << 16)
            if end > len(data):
                raise _truncated(data, end)
            return pos + 3, end

        return three
    unpack = {2: _U16, 4: _U32}[size].unpack_from

    def many(data: bytes, pos: int) -> tuple[int, int]:
        end = pos + size + unpack(data, pos)[0]
        if end > len(data):
            raise _truncated(data, end)
        return pos + size, end

    return many


def _string(text_type: int) -> DecoderFactory:
    """VARCHAR/VAR_STRING (text_type VARCHAR) and CHAR (CHAR): a 1-byte length prefix when the
    declared byte length is below 256, else 2 bytes."""

    def factory(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
        return _prefixed_text(1 if col.max_length < 256 else 2, col, text_type, options)

    return factory


def _prefixed_text(
    size: int, col: ColumnMeta, text_type: int, options: DecodeOptions
) -> ValueDecoder:
    """A length-prefixed value as text in the column's charset (``text_type``), or binary
    bytes as ``binary_text`` (BLOB, canal's type for every binary value). The prefix is read
    and the bytes decoded in one function: strings are most of the values of a typical row."""
    text = text_decoder(col)
    binary = binary_text(options)
    to_text, sql_type = (text, text_type) if text is not None else (binary, _T.BLOB)
    codec = plain_codec(col) if text is not None else None
    if text is None and binary is _latin1:
        codec = "latin-1"
    if size == 1 and codec is not None:

        def one(data: bytes, pos: int) -> tuple[str, int, int]:
            start = pos + 1
            end = start + data[pos]
            if end > len(data):
                raise _truncated(data, end)
            return data[start:end].decode(codec, "replace"), sql_type, end

        return one
    if size in {2, 4} and codec is not None:
        unpack = (_U16 if size == 2 else _U32).unpack_from

        def many(data: bytes, pos: int) -> tuple[str, int, int]:
            start = pos + size
            end = start + unpack(data, pos)[0]
            if end > len(data):
                raise _truncated(data, end)
            return data[start:end].decode(codec, "replace"), sql_type, end

        return many
    span = prefixed_span(size)

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        start, end = span(data, pos)
        return to_text(data[start:end]), sql_type, end

    return decode


def _blob(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """BLOB/TEXT of every size (and MariaDB's JSON, a LONGTEXT)."""
    if not 1 <= col.max_length <= 4:
        raise UnsupportedColumnType(col, f"BLOB length prefix of {col.max_length} bytes")
    return _prefixed_text(col.max_length, col, _T.CLOB, options)


def _vector(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """MySQL 9's VECTOR: a length-prefixed array of little-endian float32, rendered as MySQL's
    ``VECTOR_TO_STRING`` prints it (``[1.00000e+00,-2.50000e-01]``, each ``%.5e``). canal has
    no VECTOR; ``OTHER`` is its type for a column type it does not map."""
    span = prefixed_span(col.max_length or 4)

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        start, end = span(data, pos)
        if (end - start) % 4:
            raise TruncatedRowImage(
                f"a {end - start}-byte VECTOR value in column `{col.name}` is not float32s"
            )
        floats = struct.unpack_from(f"<{(end - start) // 4}f", data, start)
        return "[" + ",".join([f"{f:.5e}" for f in floats]) + "]", _T.OTHER, end

    return decode


def _geometry(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """canal keeps the raw value (4-byte SRID + WKB) as binary text, sql_type BLOB."""
    span = prefixed_span(col.max_length or 4)
    to_text = binary_text(options)

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        start, end = span(data, pos)
        return to_text(data[start:end]), _T.BLOB, end

    return decode


def _json(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """MySQL 5.7+ binary JSON, rendered like canal's ``JsonConversion`` (MariaDB stores JSON as
    LONGTEXT and never writes type 245)."""
    span = prefixed_span(col.max_length or 4)
    quirk = options.canal

    def decode(data: bytes, pos: int) -> tuple[str, int, int]:
        start, end = span(data, pos)
        if start == end:
            return "", _T.VARCHAR, end
        out: list[str] = []
        try:
            _jsonb_value(data[start], data[start + 1 : end], 0, out, quirk)
        except (struct.error, IndexError, KeyError) as exc:
            raise TruncatedRowImage(f"corrupt binary JSON in column `{col.name}`") from exc
        return "".join(out), _T.VARCHAR, end

    return decode


_JSONB_SCALARS: dict[int, struct.Struct] = {
    5: _I16,
    6: _U16,
    7: _I32,
    8: _U32,
    9: _I64,
    10: struct.Struct("<Q"),
}


def _jsonb_value(kind: int, doc: bytes, at: int, out: list[str], quirk: bool) -> None:
    """Append the text of the binary JSON value of type ``kind`` whose data starts at ``at``."""
    if kind <= 3:  # small/large object/array; offsets are relative to the container start
        large, is_object = kind & 1, kind < 2
        offset = _U32 if large else _U16
        osize = offset.size
        count = offset.unpack_from(doc, at)[0]
        values_at = at + 2 * osize + (count * (osize + 2) if is_object else 0)
        inline = (4, 5, 6, 7, 8) if large else (4, 5, 6)
        out.append("{" if is_object else "[")
        for i in range(count):
            if i:
                out.append(", ")
            if is_object:  # canal neither escapes keys nor stops at NUL bytes in them
                entry = at + 2 * osize + i * (osize + 2)
                key_at = at + offset.unpack_from(doc, entry)[0]
                key_len = _U16.unpack_from(doc, entry + osize)[0]
                out.append(f'"{doc[key_at : key_at + key_len].decode("utf-8", "replace")}": ')
            entry = values_at + i * (1 + osize)
            value_kind = doc[entry]
            if value_kind in inline:
                _jsonb_value(value_kind, doc, entry + 1, out, quirk)
            else:
                _jsonb_value(
                    value_kind, doc, at + offset.unpack_from(doc, entry + 1)[0], out, quirk
                )
        out.append("}" if is_object else "]")
    elif kind == 4:
        out.append(("null", "true", "false")[doc[at]])
    elif kind in _JSONB_SCALARS:
        out.append(str(_JSONB_SCALARS[kind].unpack_from(doc, at)[0]))
    elif kind == 11:
        out.append(double_to_string(_F64.unpack_from(doc, at)[0]))
    elif kind == 12:
        length, at = _jsonb_length(doc, at)
        out.append(f'"{_jsonb_escape(doc[at : at + length].decode("utf-8", "replace"))}"')
    elif kind == 15:
        field_type = doc[at]
        length, at = _jsonb_length(doc, at + 1)
        out.append(_jsonb_opaque(field_type, doc[at : at + length], quirk))
    else:
        raise KeyError(kind)


def _jsonb_length(doc: bytes, at: int) -> tuple[int, int]:
    length = shift = 0
    while True:
        byte = doc[at]
        at += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return length, at


def _jsonb_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _jsonb_opaque(field_type: int, raw: bytes, quirk: bool) -> str:
    if field_type == MysqlType.NEWDECIMAL:
        column = ColumnMeta(0, "json", field_type, "decimal", precision=raw[0], scale=raw[1])
        mode: ValueMode = "canal" if quirk else "faithful"
        return _decimal(column, DecodeOptions(value_mode=mode))(raw, 2)[0]
    if field_type in (MysqlType.TIME, MysqlType.DATE, MysqlType.DATETIME, MysqlType.TIMESTAMP):
        packed = _I64.unpack_from(raw, 0)[0]
        if packed == 0:
            return '"00:00:00"' if field_type == MysqlType.TIME else f'"{_ZERO_DATETIME}"'
        sign = "-" if packed < 0 else ""
        intpart, frac = divmod(abs(packed), 1 << 24)
        if field_type == MysqlType.TIME:
            hms = intpart
            return f'"{sign}{hms >> 12 & 1023:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}.{frac:06d}"'
        ymd, hms = intpart >> 17, intpart & 0x1FFFF
        ym = ymd >> 5
        return (
            f'"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} '
            f'{hms >> 12:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}.{frac:06d}"'
        )
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")  # canal's getFixString
    return f'"{_jsonb_escape(text)}"'


DECODERS: dict[int, DecoderFactory] = {
    MysqlType.TINY: _integer(_I8, *INTEGER_LAYOUTS[MysqlType.TINY]),
    MysqlType.SHORT: _integer(_I16, *INTEGER_LAYOUTS[MysqlType.SHORT]),
    MysqlType.INT24: _int24,
    MysqlType.LONG: _integer(_I32, *INTEGER_LAYOUTS[MysqlType.LONG]),
    MysqlType.LONGLONG: _integer(_I64, *INTEGER_LAYOUTS[MysqlType.LONGLONG]),
    MysqlType.NEWDECIMAL: _decimal,
    MysqlType.FLOAT: _float,
    MysqlType.DOUBLE: _double,
    MysqlType.BIT: _bit,
    MysqlType.YEAR: _year,
    MysqlType.DATE: _date,
    MysqlType.TIME: _time,
    MysqlType.TIME2: _time2,
    MysqlType.DATETIME: _datetime,
    MysqlType.DATETIME2: _datetime2,
    MysqlType.TIMESTAMP: _timestamp,
    MysqlType.TIMESTAMP2: _timestamp2,
    MysqlType.VARCHAR: _string(_T.VARCHAR),
    MysqlType.VAR_STRING: _string(_T.VARCHAR),
    MysqlType.STRING: _string(_T.CHAR),
    MysqlType.TINY_BLOB: _blob,
    MysqlType.MEDIUM_BLOB: _blob,
    MysqlType.LONG_BLOB: _blob,
    MysqlType.BLOB: _blob,
    MysqlType.ENUM: _enum,
    MysqlType.SET: _set,
    MysqlType.GEOMETRY: _geometry,
    MysqlType.VECTOR: _vector,
    MysqlType.JSON: _json,
}


def make_decoder(col: ColumnMeta, options: DecodeOptions) -> ValueDecoder:
    """The decoder of one column; raises ``UnsupportedColumnType`` for unknown types."""
    factory = DECODERS.get(col.type_code)
    if factory is None:
        raise UnsupportedColumnType(col)
    return factory(col, options)


def null_sql_type(col: ColumnMeta, options: DecodeOptions) -> int:
    """The sql_type canal 1.1.8 reports for a NULL value: its ``mysqlToJavaType``, whose
    binary kinds ``LogEventConvert`` turns into CLOB (TEXT) or BLOB (anything else), as it
    does for values. The same in both value modes."""
    code = col.type_code
    if code in _STRINGS or MysqlType.TINY_BLOB <= code <= MysqlType.BLOB:
        try:
            binary = text_decoder(col) is None
        except UnsupportedColumnType:  # text in a charset without decoder: its values fail
            binary = False
        if binary:
            return int(_T.BLOB)
        return int(_STRINGS.get(code, _T.CLOB))
    return int(_NULL_SQL_TYPES.get(code, _T.OTHER))


_STRINGS: dict[int, int] = {
    MysqlType.VARCHAR: _T.VARCHAR,
    MysqlType.VAR_STRING: _T.VARCHAR,
    MysqlType.STRING: _T.CHAR,
}


_NULL_SQL_TYPES: dict[int, int] = {
    MysqlType.TINY: _T.TINYINT,
    MysqlType.SHORT: _T.SMALLINT,
    MysqlType.INT24: _T.INTEGER,
    MysqlType.LONG: _T.INTEGER,
    MysqlType.LONGLONG: _T.BIGINT,
    MysqlType.DECIMAL: _T.DECIMAL,
    MysqlType.NEWDECIMAL: _T.DECIMAL,
    MysqlType.FLOAT: _T.REAL,
    MysqlType.DOUBLE: _T.DOUBLE,
    MysqlType.BIT: _T.BIT,
    MysqlType.TIMESTAMP: _T.TIMESTAMP,
    MysqlType.TIMESTAMP2: _T.TIMESTAMP,
    MysqlType.DATETIME: _T.TIMESTAMP,
    MysqlType.DATETIME2: _T.TIMESTAMP,
    MysqlType.TIME: _T.TIME,
    MysqlType.TIME2: _T.TIME,
    MysqlType.DATE: _T.DATE,
    MysqlType.NEWDATE: _T.DATE,
    MysqlType.YEAR: _T.VARCHAR,
    MysqlType.ENUM: _T.INTEGER,
    MysqlType.SET: _T.BLOB,
    MysqlType.GEOMETRY: _T.BLOB,
    MysqlType.VECTOR: _T.OTHER,
}


def decode_value(
    data: bytes, pos: int, col: ColumnMeta, options: DecodeOptions | None = None
) -> tuple[str, int, int]:
    """Decode one non-NULL value at ``pos``: ``(text, sql_type, new_pos)`` (slow path; tests)."""
    return make_decoder(col, options or DecodeOptions())(data, pos)
