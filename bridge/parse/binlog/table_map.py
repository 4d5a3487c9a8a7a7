"""TABLE_MAP events decoded from their bytes: the table definition every rows event refers to.

The layout is MySQL's ``Table_map_event`` (``libs/mysql/binlog/event/rows_event.{h,cpp}``) and
MariaDB's ``Table_map_log_event``, which agree byte for byte:

- post-header: table id (6 bytes, 4 when the FORMAT_DESCRIPTION says the post-header has 6),
  flags (2);
- body: schema and table (length, bytes, NUL), column count (length-encoded), one type byte per
  column, the per-column metadata block (length-encoded size, then a few bytes per type: the
  ``_METADATA`` table), the NULL bitmap, and from MySQL 8.0.1 / MariaDB 10.5 the optional
  metadata: type-length-value fields (``_OPTIONAL`` table) whose content depends on
  ``binlog_row_metadata`` (MINIMAL: signedness, charsets of character columns, geometry types;
  FULL adds names, ENUM/SET labels and charsets, the primary key and MySQL's visibility and
  vector dimensions). A field type we do not know is skipped: each is length-prefixed.

The servers differ in one place: MariaDB logs a charset for GEOMETRY columns and MySQL does
not, so the charset lists count different columns (``mariadb=``). Everything else was checked
against both (MariaDB 10.11, MySQL 9.7) by ``tests/integration/test_table_map_event.py``.

A body that ends too early, or whose parts disagree (a metadata block longer than its columns
need, a charset list for a different number of columns), raises ``ValueError`` naming what and
where: decoding on would give rows to the wrong columns.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.packed import extra_bytes

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column as the TABLE_MAP describes it.

    The attribute names are mysql-replication's ``Column``'s, so ``build_table_meta`` reads
    either. ``type`` is the real type: a CHAR-typed ENUM or SET column reports ``ENUM``/``SET``.
    Size fields are set for the types that have them, 0 otherwise: ``max_length`` (CHAR/VARCHAR
    bytes), ``length_size`` (BLOB/TEXT/JSON/GEOMETRY/VECTOR length-prefix bytes), ``size``
    (FLOAT/DOUBLE bytes; ENUM/SET storage bytes), ``precision``/``decimals`` (DECIMAL), ``bits``
    (BIT), ``fsp`` (TIME2/DATETIME2/TIMESTAMP2).

    ``enum_values`` are the plain labels in definition order (no placeholder for index 0).
    Labels, charsets and the key come from the optional metadata; without it, or without
    ``binlog_row_metadata=FULL`` for the FULL-only fields, they stay empty: ``name`` ``""``,
    ``charset_id``/``collation_name`` None (which ``build_table_meta`` reads as binary, as it
    did for the library's columns). ``collation_name`` is also None for an id this module does
    not know; ``charset_id`` keeps the number.
    """

    type: int
    name: str = ""
    unsigned: bool = False
    charset_id: int | None = None
    collation_name: str | None = None
    precision: int = 0
    decimals: int = 0
    bits: int = 0
    fsp: int = 0
    max_length: int = 0
    length_size: int = 0
    size: int = 0
    enum_values: tuple[str, ...] = ()
    set_values: tuple[str, ...] = ()
    is_primary: bool = False
    visible: bool = True
    geometry_type: int = 0  # 0 GEOMETRY, 1 POINT, ... 7 GEOMETRYCOLLECTION
    vector_dimensions: int = 0  # MySQL 9 VECTOR(n)


@dataclass(frozen=True, slots=True)
class TableMapDef:
    """A decoded TABLE_MAP. ``null_bitmask``: bit ``i % 8`` of byte ``i // 8`` is set when
    column ``i`` is nullable. ``primary_key``: column indexes in key order. ``has_names``:
    whether the event carried column names (``binlog_row_metadata=FULL``)."""

    table_id: int
    flags: int
    schema: str
    table: str
    columns: tuple[ColumnDef, ...]
    null_bitmask: bytes
    has_names: bool
    primary_key: tuple[int, ...] = ()


def decode_table_map(
    body: bytes, post_header_len: int = 8, *, mariadb: bool = False
) -> TableMapDef:
    """The TABLE_MAP whose ``body`` (the event after its 19-byte header, without checksum) was
    written by a server whose FORMAT_DESCRIPTION gives ``post_header_len`` for TABLE_MAP.

    ``mariadb`` says who wrote it: MariaDB counts GEOMETRY columns among the character columns
    of the charset fields (and names five croatian collations differently)."""
    reader = _Reader(body, "the body")
    try:
        table_id, flags = _post_header(reader, post_header_len)
        schema = reader.name("schema name")
        table = reader.name("table name")
    except ValueError as exc:
        raise ValueError(f"TABLE_MAP: {exc}") from exc
    try:
        columns, null_bitmask, optional = _definition(reader, mariadb)
    except ValueError as exc:
        raise ValueError(f"TABLE_MAP of {schema}.{table}: {exc}") from exc
    return TableMapDef(
        table_id=table_id,
        flags=flags,
        schema=schema,
        table=table,
        columns=columns,
        null_bitmask=null_bitmask,
        has_names=optional.names is not None,
        primary_key=tuple(optional.primary_key),
    )


def _definition(reader: _Reader, mariadb: bool) -> tuple[tuple[ColumnDef, ...], bytes, _Optional]:
    """The columns, the NULL bitmap and the optional metadata, from the column count on."""
    count = reader.lenenc("column count")
    codes = reader.take(count, "column types")
    metadata = _Reader(reader.take(reader.lenenc("metadata size"), "column metadata"), "metadata")
    sizes = [_sizes(metadata, index, code) for index, code in enumerate(codes)]
    if not metadata.at_end:
        raise ValueError(
            f"the column metadata block has {metadata.left} bytes more than its {count} "
            "columns' types need (a column type this decoder does not know carries metadata)"
        )
    null_bitmask = reader.take((count + 7) // 8, "NULL bitmap")
    optional = _Optional()
    while not reader.at_end:
        kind = reader.u8("optional metadata type")
        value = reader.take(reader.lenenc("optional metadata length"), f"optional metadata {kind}")
        parse = _OPTIONAL.get(kind)
        if parse is not None:
            parse(_Reader(value, f"optional metadata {kind}"), optional)
    return _columns(sizes, optional, mariadb), null_bitmask, optional


# ----------------------------------------------------------------------------- reading bytes


class _Reader:
    """Bounds-checked reads from ``data``: a short body raises ``ValueError`` naming what was
    being read and where, never an ``IndexError`` or a silently short slice."""

    __slots__ = ("_data", "_pos", "_where")

    def __init__(self, data: bytes, where: str) -> None:
        self._data = data
        self._pos = 0
        self._where = where

    @property
    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    @property
    def left(self) -> int:
        return len(self._data) - self._pos

    def take(self, size: int, what: str) -> bytes:
        if size > self.left:
            raise ValueError(
                f"{self._where} is truncated: {what} needs {size} bytes at offset {self._pos}, "
                f"{self.left} left"
            )
        start = self._pos
        self._pos += size
        return self._data[start : self._pos]

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def uint(self, size: int, what: str) -> int:
        return int.from_bytes(self.take(size, what), "little")

    def lenenc(self, what: str) -> int:
        """A length-encoded integer (MySQL's ``net_field_length``)."""
        first = self.u8(what)
        size = extra_bytes(first)
        if size is None:
            raise ValueError(f"{self._where}: {what} at offset {self._pos - 1} is {first:#x}")
        return self.uint(size, what) if size else first

    def text(self, size: int, what: str) -> str:
        raw = self.take(size, what)
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self._where}: {what} {raw!r} is not UTF-8") from exc

    def name(self, what: str) -> str:
        """A schema or table name: length, the UTF-8 bytes, a NUL."""
        value = self.text(self.lenenc(what), what)
        self.take(1, f"the NUL after the {what}")
        return value


def _post_header(reader: _Reader, post_header_len: int) -> tuple[int, int]:
    """Table id and flags. A 6-byte post-header is a pre-5.1.4 master's (4-byte id); a longer
    one than 8 has fields after the flags that we do not know and skip."""
    if post_header_len == 6:
        return reader.uint(4, "table id"), reader.uint(2, "flags")
    if post_header_len < 8:
        raise ValueError(f"post-header length {post_header_len} (6 or >= 8 expected)")
    table_id, flags = reader.uint(6, "table id"), reader.uint(2, "flags")
    reader.take(post_header_len - 8, "post-header")
    return table_id, flags


# ------------------------------------------------------------------ per-column metadata table


class _Sizes(NamedTuple):
    type: int
    max_length: int = 0
    length_size: int = 0
    size: int = 0
    precision: int = 0
    decimals: int = 0
    bits: int = 0
    fsp: int = 0


def _no_metadata(_: _Reader, code: int) -> _Sizes:
    return _Sizes(code)


def _pack_length(reader: _Reader, code: int) -> _Sizes:
    return _Sizes(code, size=reader.u8("FLOAT/DOUBLE size"))


def _length_bytes(reader: _Reader, code: int) -> _Sizes:
    return _Sizes(code, length_size=reader.u8("length-prefix size"))


def _varchar(reader: _Reader, code: int) -> _Sizes:
    return _Sizes(code, max_length=reader.uint(2, "VARCHAR max length"))


def _fsp(reader: _Reader, code: int) -> _Sizes:
    return _Sizes(code, fsp=reader.u8("fractional seconds precision"))


def _decimal(reader: _Reader, code: int) -> _Sizes:
    precision = reader.u8("DECIMAL precision")
    return _Sizes(code, precision=precision, decimals=reader.u8("DECIMAL scale"))


def _bit(reader: _Reader, code: int) -> _Sizes:
    """BIT(n): n % 8, then n // 8."""
    odd_bits = reader.u8("BIT length")
    return _Sizes(code, bits=reader.u8("BIT bytes") * 8 + odd_bits)


def _string(reader: _Reader, code: int) -> _Sizes:
    """CHAR, ENUM and SET are all logged as STRING: the first byte is the real type, the second
    the length in bytes (ENUM/SET: storage bytes). A CHAR longer than 255 bytes keeps the two
    high bits of its length, inverted, in bits 4-5 of the real type (Field_string's
    ``save_field_metadata``)."""
    real_type = reader.u8("CHAR real type")
    length = reader.u8("CHAR length")
    if real_type & 0x30 != 0x30:
        length += ((real_type & 0x30) ^ 0x30) << 4
        real_type |= 0x30
    if real_type in (MysqlType.ENUM, MysqlType.SET):
        return _Sizes(real_type, size=length)
    return _Sizes(code, max_length=length)


_METADATA: dict[int, Callable[[_Reader, int], _Sizes]] = {
    MysqlType.FLOAT: _pack_length,
    MysqlType.DOUBLE: _pack_length,
    MysqlType.VARCHAR: _varchar,
    MysqlType.VARCHAR_COMPRESSED: _varchar,
    MysqlType.BLOB: _length_bytes,
    MysqlType.BLOB_COMPRESSED: _length_bytes,
    MysqlType.GEOMETRY: _length_bytes,
    MysqlType.JSON: _length_bytes,
    MysqlType.VECTOR: _length_bytes,
    MysqlType.BIT: _bit,
    MysqlType.NEWDECIMAL: _decimal,
    MysqlType.TIMESTAMP2: _fsp,
    MysqlType.DATETIME2: _fsp,
    MysqlType.TIME2: _fsp,
    MysqlType.STRING: _string,
    # Only pre-5.0 tables log VAR_STRING; read like CHAR, as mysql-replication did.
    MysqlType.VAR_STRING: _string,
}


def _sizes(metadata: _Reader, index: int, code: int) -> _Sizes:
    try:
        return _METADATA.get(code, _no_metadata)(metadata, code)
    except ValueError as exc:
        raise ValueError(f"column {index} (type {code}): {exc}") from exc


# --------------------------------------------------------------------- optional metadata table


@dataclass(frozen=True, slots=True)
class _Charsets:
    """DEFAULT_CHARSET (a default plus exceptions) or COLUMN_CHARSET (one per column), both
    counted over the character (or ENUM/SET) columns only."""

    default: int | None
    by_position: dict[int, int]


@dataclass(slots=True)
class _Optional:
    signedness: bytes | None = None
    charsets: _Charsets | None = None
    enum_set_charsets: _Charsets | None = None
    names: list[str] | None = None
    set_labels: list[list[bytes]] | None = None
    enum_labels: list[list[bytes]] | None = None
    geometry_types: list[int] | None = None
    primary_key: list[int] = field(default_factory=list)
    visibility: bytes | None = None
    vector_dimensions: list[int] | None = None


def _ints(reader: _Reader) -> list[int]:
    values = []
    while not reader.at_end:
        values.append(reader.lenenc("value"))
    return values


def _default_charset(reader: _Reader) -> _Charsets:
    default = reader.lenenc("default collation")
    pairs = _ints(reader)
    if len(pairs) % 2:
        raise ValueError(
            f"a charset field has an odd number of (position, collation) values {pairs}"
        )
    return _Charsets(default, dict(zip(pairs[::2], pairs[1::2], strict=True)))


def _column_charset(reader: _Reader) -> _Charsets:
    return _Charsets(None, dict(enumerate(_ints(reader))))


def _labels(reader: _Reader) -> list[list[bytes]]:
    """Per ENUM/SET column: a count, then that many length-prefixed labels (raw bytes in the
    column's charset, decoded once the charset is known)."""
    columns = []
    while not reader.at_end:
        count = reader.lenenc("label count")
        columns.append([reader.take(reader.lenenc("label length"), "label") for _ in range(count)])
    return columns


def _names(reader: _Reader) -> list[str]:
    names = []
    while not reader.at_end:
        names.append(reader.text(reader.lenenc("column name length"), "column name"))
    return names


def _prefixed_key(reader: _Reader) -> list[int]:
    """PRIMARY_KEY_WITH_PREFIX: (column, prefix length) pairs; the key is the columns."""
    return _ints(reader)[::2]


def _set(name: str, parse: Callable[[_Reader], object]) -> Callable[[_Reader, _Optional], None]:
    def store(reader: _Reader, optional: _Optional) -> None:
        setattr(optional, name, parse(reader))

    return store


def _rest(reader: _Reader) -> bytes:
    return reader.take(reader.left, "bitmap")


# Optional metadata field type (MySQL's Optional_metadata_field_type) -> its parser.
_OPTIONAL: dict[int, Callable[[_Reader, _Optional], None]] = {
    1: _set("signedness", _rest),  # SIGNEDNESS: a bit per numeric column, MSB first
    2: _set("charsets", _default_charset),  # DEFAULT_CHARSET
    3: _set("charsets", _column_charset),  # COLUMN_CHARSET
    4: _set("names", _names),  # COLUMN_NAME (FULL)
    5: _set("set_labels", _labels),  # SET_STR_VALUE (FULL)
    6: _set("enum_labels", _labels),  # ENUM_STR_VALUE (FULL)
    7: _set("geometry_types", _ints),  # GEOMETRY_TYPE (FULL)
    8: _set("primary_key", _ints),  # SIMPLE_PRIMARY_KEY (FULL)
    9: _set("primary_key", _prefixed_key),  # PRIMARY_KEY_WITH_PREFIX (FULL)
    10: _set("enum_set_charsets", _default_charset),  # ENUM_AND_SET_DEFAULT_CHARSET (FULL)
    11: _set("enum_set_charsets", _column_charset),  # ENUM_AND_SET_COLUMN_CHARSET (FULL)
    12: _set("visibility", _rest),  # COLUMN_VISIBILITY (MySQL 8.0.23+): a bit per column
    13: _set("vector_dimensions", _ints),  # VECTOR_DIMENSIONALITY (MySQL 9.0+)
}

# ------------------------------------------------------------------- columns from both parts

# The columns each optional field counts over. YEAR is numeric (both servers log its UNSIGNED
# flag); a CHAR-logged ENUM/SET is not a character column (it has ENUM_AND_SET_* fields).
_NUMERIC = frozenset(
    {
        MysqlType.TINY,
        MysqlType.SHORT,
        MysqlType.INT24,
        MysqlType.LONG,
        MysqlType.LONGLONG,
        MysqlType.NEWDECIMAL,
        MysqlType.FLOAT,
        MysqlType.DOUBLE,
        MysqlType.YEAR,
    }
)
_CHARACTER = frozenset(
    {
        MysqlType.STRING,
        MysqlType.VAR_STRING,
        MysqlType.VARCHAR,
        MysqlType.BLOB,
        MysqlType.VECTOR,
        MysqlType.VARCHAR_COMPRESSED,
        MysqlType.BLOB_COMPRESSED,
    }
)
_MARIADB_CHARACTER = _CHARACTER | {MysqlType.GEOMETRY}


def _positions(sizes: Sequence[_Sizes], types: Iterable[int]) -> list[int]:
    wanted = frozenset(types)
    return [index for index, column in enumerate(sizes) if column.type in wanted]


def _spread(values: Sequence[T] | None, positions: Sequence[int], what: str) -> dict[int, T]:
    """``values`` (one per column of ``positions``) keyed by column index."""
    if values is None:
        return {}
    if len(values) != len(positions):
        raise ValueError(f"{what} lists {len(values)} columns, the table has {len(positions)}")
    return dict(zip(positions, values, strict=True))


def _flagged(bitmap: bytes | None, positions: Sequence[int], what: str) -> set[int] | None:
    """The columns of ``positions`` whose bit (most significant first) is set."""
    if bitmap is None:
        return None
    if len(bitmap) * 8 < len(positions):
        raise ValueError(f"{what} has {len(bitmap) * 8} bits for {len(positions)} columns")
    return {index for bit, index in enumerate(positions) if bitmap[bit // 8] & (0x80 >> bit % 8)}


def _charset_ids(charsets: _Charsets | None, positions: Sequence[int], what: str) -> dict[int, int]:
    """Collation id per column index, for the columns of ``positions`` that have one."""
    if charsets is None:
        return {}
    given = charsets.by_position
    covered = len(given) if charsets.default is None else max(given, default=-1) + 1
    if covered > len(positions) or (charsets.default is None and covered < len(positions)):
        raise ValueError(
            f"the charsets of {what} columns cover {covered} columns, the table has "
            f"{len(positions)} (MariaDB counts GEOMETRY columns, MySQL does not: is mariadb= "
            "right?)"
        )
    found = {
        index: given.get(position, charsets.default) for position, index in enumerate(positions)
    }
    return {index: value for index, value in found.items() if value is not None}


def _columns(sizes: Sequence[_Sizes], optional: _Optional, mariadb: bool) -> tuple[ColumnDef, ...]:
    count = len(sizes)
    character = _positions(sizes, _MARIADB_CHARACTER if mariadb else _CHARACTER)
    enum_set = _positions(sizes, (MysqlType.ENUM, MysqlType.SET))
    charset_ids = _charset_ids(optional.charsets, character, "character")
    charset_ids.update(_charset_ids(optional.enum_set_charsets, enum_set, "ENUM/SET"))
    unsigned = _flagged(optional.signedness, _positions(sizes, _NUMERIC), "SIGNEDNESS") or set()
    visible = _flagged(optional.visibility, range(count), "COLUMN_VISIBILITY")
    names = _spread(optional.names, range(count), "COLUMN_NAME")
    enums = _spread(optional.enum_labels, _positions(sizes, (MysqlType.ENUM,)), "ENUM_STR_VALUE")
    sets = _spread(optional.set_labels, _positions(sizes, (MysqlType.SET,)), "SET_STR_VALUE")
    geometry_types = _spread(
        optional.geometry_types, _positions(sizes, (MysqlType.GEOMETRY,)), "GEOMETRY_TYPE"
    )
    dimensions = _spread(
        optional.vector_dimensions, _positions(sizes, (MysqlType.VECTOR,)), "VECTOR_DIMENSIONALITY"
    )
    if any(index >= count for index in optional.primary_key):
        raise ValueError(f"the primary key names columns {optional.primary_key} of {count}")
    key = frozenset(optional.primary_key)
    columns = []
    for index, sized in enumerate(sizes):
        charset_id = charset_ids.get(index)
        collation = None if charset_id is None else collation_name(charset_id, mariadb=mariadb)
        columns.append(
            ColumnDef(
                **sized._asdict(),
                name=names.get(index, ""),
                unsigned=index in unsigned,
                charset_id=charset_id,
                collation_name=collation,
                enum_values=_decoded(enums.get(index, ()), collation),
                set_values=_decoded(sets.get(index, ()), collation),
                is_primary=index in key,
                visible=visible is None or index in visible,
                geometry_type=geometry_types.get(index, 0),
                vector_dimensions=dimensions.get(index, 0),
            )
        )
    return tuple(columns)


# Python codecs of the charsets whose MySQL name Python does not know, or knows differently
# (MySQL's latin1 is Windows-1252; its ucs2/utf16/utf32 are big-endian without BOM).
_CODECS = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "cp1252",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "koi8r": "koi8_r",
    "koi8u": "koi8_u",
    "eucjpms": "euc_jp",
}


def _decoded(labels: Iterable[bytes], collation: str | None) -> tuple[str, ...]:
    """ENUM/SET labels are logged in the column's charset (a latin1 ``'é'`` is one byte)."""
    charset = (collation or "binary").split("_", 1)[0]
    codec = _CODECS.get(charset, charset)
    try:
        codecs.lookup(codec)
    except LookupError:
        codec = "utf-8"
    return tuple(label.decode(codec, "replace") for label in labels)


# ------------------------------------------------------------------------------- collations

# Collation ids MySQL (8.0, 9.x) and MariaDB (10.x, 11.x) share or use alone (the two never give
# one id two charsets), from information_schema of MySQL 9.7 and MariaDB 10.11. Each line: the
# id of its first name, the following names having the following ids. Families built by rule
# below are left out: UCA 4.0.0 tailorings, MariaDB's NO PAD (+1024) and UCA 14.0.0 (2048+).
_TABLE = """
1 big5_chinese_ci latin2_czech_cs dec8_swedish_ci cp850_general_ci latin1_german1_ci
6 hp8_english_ci koi8r_general_ci latin1_swedish_ci latin2_general_ci swe7_swedish_ci
11 ascii_general_ci ujis_japanese_ci sjis_japanese_ci cp1251_bulgarian_ci latin1_danish_ci
16 hebrew_general_ci
18 tis620_thai_ci euckr_korean_ci latin7_estonian_cs latin2_hungarian_ci koi8u_general_ci
23 cp1251_ukrainian_ci gb2312_chinese_ci greek_general_ci cp1250_general_ci
27 latin2_croatian_ci gbk_chinese_ci cp1257_lithuanian_ci latin5_turkish_ci
31 latin1_german2_ci armscii8_general_ci utf8mb3_general_ci cp1250_czech_cs ucs2_general_ci
36 cp866_general_ci keybcs2_general_ci macce_general_ci macroman_general_ci cp852_general_ci
41 latin7_general_ci latin7_general_cs macce_bin cp1250_croatian_ci utf8mb4_general_ci
46 utf8mb4_bin latin1_bin latin1_general_ci latin1_general_cs cp1251_bin cp1251_general_ci
52 cp1251_general_cs macroman_bin utf16_general_ci utf16_bin utf16le_general_ci
57 cp1256_general_ci cp1257_bin cp1257_general_ci utf32_general_ci utf32_bin utf16le_bin
63 binary armscii8_bin ascii_bin cp1250_bin cp1256_bin cp866_bin dec8_bin greek_bin
71 hebrew_bin hp8_bin keybcs2_bin koi8r_bin koi8u_bin utf8mb3_tolower_ci latin2_bin
78 latin5_bin latin7_bin cp850_bin cp852_bin swe7_bin utf8mb3_bin big5_bin euckr_bin
86 gb2312_bin gbk_bin sjis_bin tis620_bin ucs2_bin ujis_bin geostd8_general_ci geostd8_bin
94 latin1_spanish_ci cp932_japanese_ci cp932_bin eucjpms_japanese_ci eucjpms_bin
99 cp1250_polish_ci
159 ucs2_general_mysql500_ci
223 utf8mb3_general_mysql500_ci
248 gb18030_chinese_ci gb18030_bin gb18030_unicode_520_ci
255 utf8mb4_0900_ai_ci utf8mb4_de_pb_0900_ai_ci utf8mb4_is_0900_ai_ci utf8mb4_lv_0900_ai_ci
259 utf8mb4_ro_0900_ai_ci utf8mb4_sl_0900_ai_ci utf8mb4_pl_0900_ai_ci utf8mb4_et_0900_ai_ci
263 utf8mb4_es_0900_ai_ci utf8mb4_sv_0900_ai_ci utf8mb4_tr_0900_ai_ci utf8mb4_cs_0900_ai_ci
267 utf8mb4_da_0900_ai_ci utf8mb4_lt_0900_ai_ci utf8mb4_sk_0900_ai_ci
270 utf8mb4_es_trad_0900_ai_ci utf8mb4_la_0900_ai_ci
273 utf8mb4_eo_0900_ai_ci utf8mb4_hu_0900_ai_ci utf8mb4_hr_0900_ai_ci
277 utf8mb4_vi_0900_ai_ci utf8mb4_0900_as_cs utf8mb4_de_pb_0900_as_cs utf8mb4_is_0900_as_cs
281 utf8mb4_lv_0900_as_cs utf8mb4_ro_0900_as_cs utf8mb4_sl_0900_as_cs utf8mb4_pl_0900_as_cs
285 utf8mb4_et_0900_as_cs utf8mb4_es_0900_as_cs utf8mb4_sv_0900_as_cs utf8mb4_tr_0900_as_cs
289 utf8mb4_cs_0900_as_cs utf8mb4_da_0900_as_cs utf8mb4_lt_0900_as_cs utf8mb4_sk_0900_as_cs
293 utf8mb4_es_trad_0900_as_cs utf8mb4_la_0900_as_cs
296 utf8mb4_eo_0900_as_cs utf8mb4_hu_0900_as_cs utf8mb4_hr_0900_as_cs
300 utf8mb4_vi_0900_as_cs
303 utf8mb4_ja_0900_as_cs utf8mb4_ja_0900_as_cs_ks utf8mb4_0900_as_ci utf8mb4_ru_0900_ai_ci
307 utf8mb4_ru_0900_as_cs utf8mb4_zh_0900_as_cs utf8mb4_0900_bin utf8mb4_nb_0900_ai_ci
311 utf8mb4_nb_0900_as_cs utf8mb4_nn_0900_ai_ci utf8mb4_nn_0900_as_cs
314 utf8mb4_sr_latn_0900_ai_ci utf8mb4_sr_latn_0900_as_cs utf8mb4_bs_0900_ai_ci
317 utf8mb4_bs_0900_as_cs utf8mb4_bg_0900_ai_ci utf8mb4_bg_0900_as_cs utf8mb4_gl_0900_ai_ci
321 utf8mb4_gl_0900_as_cs utf8mb4_mn_cyrl_0900_ai_ci utf8mb4_mn_cyrl_0900_as_cs
576 utf8mb3_croatian_ci utf8mb3_myanmar_ci utf8mb3_thai_520_w2
608 utf8mb4_croatian_ci utf8mb4_myanmar_ci utf8mb4_thai_520_w2
640 ucs2_croatian_ci ucs2_myanmar_ci ucs2_thai_520_w2
672 utf16_croatian_ci utf16_myanmar_ci utf16_thai_520_w2
736 utf32_croatian_ci utf32_myanmar_ci utf32_thai_520_w2
"""
# UCA 4.0.0 tailorings: ids first + 0..23 for each charset, named <charset>_<tailoring>_ci.
_UCA400_FIRST_ID = {"utf16": 101, "ucs2": 128, "utf32": 160, "utf8mb3": 192, "utf8mb4": 224}
_UCA400_TEXT = """
unicode icelandic latvian romanian slovenian polish estonian spanish swedish turkish czech danish
lithuanian slovak spanish2 roman persian esperanto hungarian sinhala german2 croatian unicode_520
vietnamese
"""
_UCA400_TAILORINGS = tuple(_UCA400_TEXT.split())
_CROATIAN = _UCA400_TAILORINGS.index("croatian")
# MariaDB UCA 14.0.0 (10.10+): 2048 + 256 * charset + 8 * tailoring + flags (4: NO PAD,
# 2: accent-sensitive, 1: case-sensitive). Tailorings 21 and 22 are unassigned.
_UCA1400_CHARSETS = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
_UCA1400_TAILORINGS = (
    "",
    *_UCA400_TAILORINGS[1:21],
    None,
    None,
    "vietnamese",
    "croatian",
)


def _collations() -> dict[int, str]:
    names: dict[int, str] = {}
    for line in _TABLE.strip().splitlines():
        first, *run = line.split()
        names.update(enumerate(run, start=int(first)))
    for charset, first_id in _UCA400_FIRST_ID.items():
        names.update(
            (first_id + i, f"{charset}_{tailoring}_ci")
            for i, tailoring in enumerate(_UCA400_TAILORINGS)
        )
    return names


_COLLATIONS = _collations()
# MariaDB kept MySQL 5.6's croatian rules under these ids (and named them so).
_MARIADB_COLLATIONS = {
    first_id + _CROATIAN: f"{charset}_croatian_mysql561_ci"
    for charset, first_id in _UCA400_FIRST_ID.items()
}


def collation_name(collation_id: int, *, mariadb: bool = False) -> str | None:
    """The collation a server numbers ``collation_id``, or None for an id we do not know."""
    if mariadb and collation_id in _MARIADB_COLLATIONS:
        return _MARIADB_COLLATIONS[collation_id]
    name = _COLLATIONS.get(collation_id)
    if name is None and 1024 < collation_id < 1024 + 248:
        name = _nopad(_COLLATIONS.get(collation_id - 1024))
    if name is None and collation_id >= 2048:
        name = _uca1400(collation_id - 2048)
    return name


def _nopad(pad: str | None) -> str | None:
    """MariaDB's NO PAD twin (id + 1024) of a shared collation: ``latin1_bin`` ->
    ``latin1_nopad_bin``, ``utf16_unicode_520_ci`` -> ``utf16_unicode_520_nopad_ci``."""
    stem, _, last = (pad or "").rpartition("_")
    return f"{stem}_nopad_{last}" if stem else None


def _uca1400(number: int) -> str | None:
    """MariaDB's UCA 14.0.0 collation ``number`` (its id - 2048)."""
    block, tailoring_index, flags = number // 256, number % 256 // 8, number % 8
    if block >= len(_UCA1400_CHARSETS) or tailoring_index >= len(_UCA1400_TAILORINGS):
        return None
    tailoring = _UCA1400_TAILORINGS[tailoring_index]
    if tailoring is None:
        return None
    return "".join(
        (
            f"{_UCA1400_CHARSETS[block]}_uca1400",
            f"_{tailoring}" if tailoring else "",
            "_nopad" if flags & 4 else "",
            "_as" if flags & 2 else "_ai",
            "_cs" if flags & 1 else "_ci",
        )
    )
