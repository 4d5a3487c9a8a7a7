"""Table definitions as the row decoder needs them, built once per TABLE_MAP definition.

A ``TableMeta`` is derived from a binlog TABLE_MAP event (column types, binlog metadata, and
with ``binlog_row_metadata=FULL`` the names, signedness, charsets, ENUM/SET labels and primary
key) and the table's definition at the event's position in the schema history
(``bridge.schema``), which gives what the TABLE_MAP leaves out: names (MINIMAL or NO_LOG), the
declared type text canal shows (``int(11)``, ``varchar(64)``), the primary key, and the
charsets and ENUM/SET labels a NO_LOG map lacks. The row decoder (``bridge.parse.binlog.rows``)
turns raw row images into canal's text renderings with it.

The two are checked against each other on every new TABLE_MAP, never trusted blindly: with
names in the binlog (FULL) they must match the definition's; without, the column count and each
column's binlog type must. A mismatch raises ``SchemaMismatch`` (the destination stops with the
table and the fix): a row is never emitted under names that may be wrong. Without a definition
(a table the history does not hold) the binlog's own names and derived types are used, and a
TABLE_MAP without names is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bridge.parse.binlog.codes import DATA_TYPE_CODES, MysqlType
from bridge.parse.exceptions import SchemaMismatch
from bridge.schema.definitions import ColumnDefinition, TableDefinition


@dataclass(frozen=True, slots=True)
class ColumnMeta:
    """One column of a table as written in the binlog.

    ``type_code`` is the *real* ``MYSQL_TYPE_*`` code (for CHAR/ENUM/SET columns, which the
    binlog logs as MYSQL_TYPE_STRING, the real type taken from the metadata bytes).
    The size fields are the decoded TABLE_MAP metadata, each meaningful for some types only:

    - ``max_length``: CHAR/VARCHAR max length in bytes (selects a 1- or 2-byte length prefix);
      BLOB/TEXT/JSON/GEOMETRY/VECTOR: the length-prefix size (1..4; 0 for JSON, GEOMETRY and
      VECTOR means 4); ENUM/SET: storage bytes.
    - ``precision`` / ``scale``: DECIMAL.
    - ``fsp``: fractional-seconds precision of TIME2/DATETIME2/TIMESTAMP2 (0..6).
    - ``bits``: BIT(n) width.
    - ``charset``: charset of a text column, by its MySQL name (``utf8mb4``, ``latin1``) or a
      Python codec (``bridge.parse.binlog.values`` decodes both); ``None`` for binary data.
    """

    index: int
    name: str
    type_code: int
    mysql_type: str
    unsigned: bool = False
    nullable: bool = True
    is_key: bool = False
    charset: str | None = None
    max_length: int = 0
    precision: int = 0
    scale: int = 0
    fsp: int = 0
    bits: int = 0
    enum_values: tuple[str, ...] = ()
    set_values: tuple[str, ...] = ()
    is_text: bool = False


@dataclass(frozen=True, slots=True)
class TableMeta:
    schema: str
    table: str
    columns: tuple[ColumnMeta, ...]

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.is_key)


# Bytes per character, by charset name (the part of a collation before the first '_').
_MAX_BYTES_PER_CHAR = {
    "utf8mb4": 4,
    "utf8mb3": 3,
    "utf8": 3,
    "utf16": 4,
    "utf16le": 4,
    "utf32": 4,
    "ucs2": 2,
    "gbk": 2,
    "gb2312": 2,
    "gb18030": 4,
    "big5": 2,
    "sjis": 2,
    "cp932": 2,
    "ujis": 3,
    "eucjpms": 3,
    "euckr": 2,
}
_INT_TYPES = {
    MysqlType.TINY: ("tinyint", 4, 3),
    MysqlType.SHORT: ("smallint", 6, 5),
    MysqlType.INT24: ("mediumint", 9, 8),
    MysqlType.LONG: ("int", 11, 10),
    MysqlType.LONGLONG: ("bigint", 20, 20),
}
_BLOB_NAMES = {1: "tiny", 2: "", 3: "medium", 4: "long"}


def _charset_name(collation: str | None) -> str:
    """The charset of a collation, as canal derives it: every MySQL and MariaDB collation name
    starts with its charset's (``utf8mb4_0900_ai_ci``, ``ucs2_uca1400_ai_ci``, ``binary``).

    ``None`` (no charset metadata, or an id the library does not know) counts as binary."""
    return (collation or "binary").split("_", 1)[0].lower()


def _quoted(values: Sequence[str]) -> str:
    return ",".join("'" + v.replace("'", "''") + "'" for v in values)


def _enum_labels(values: Sequence[str] | None) -> tuple[str, ...]:
    """ENUM labels in definition order (``ColumnDef.enum_values``: plain labels, no
    placeholder for index 0 as mysql-replication's columns had)."""
    return tuple(values or ())


def _temporal(name: str, fsp: int) -> str:
    return f"{name}({fsp})" if fsp else name


def declared_type(column: Any, display_widths: bool = True) -> str:
    """The column type text as ``SHOW CREATE TABLE`` would print it, from binlog metadata;
    ``display_widths``: whether the server prints integer display widths (``int(11)``:
    MariaDB, MySQL before 8.0.19; MySQL 8.0.19+ prints ``int``, ``year``)."""
    code = column.type
    if code in _INT_TYPES:
        name, width, unsigned_width = _INT_TYPES[code]
        if not display_widths:
            return f"{name} unsigned" if column.unsigned else name
        return f"{name}({unsigned_width}) unsigned" if column.unsigned else f"{name}({width})"
    binary = _charset_name(column.collation_name) == "binary"
    per_char = 1 if binary else _MAX_BYTES_PER_CHAR.get(_charset_name(column.collation_name), 1)
    simple: dict[int, Callable[[], str]] = {
        MysqlType.NEWDECIMAL: lambda: (
            f"decimal({column.precision},{column.decimals})"
            + (" unsigned" if column.unsigned else "")
        ),
        MysqlType.FLOAT: lambda: "float" + (" unsigned" if column.unsigned else ""),
        MysqlType.DOUBLE: lambda: "double" + (" unsigned" if column.unsigned else ""),
        MysqlType.BIT: lambda: f"bit({column.bits})",
        MysqlType.YEAR: lambda: "year(4)" if display_widths else "year",
        MysqlType.DATE: lambda: "date",
        MysqlType.NEWDATE: lambda: "date",
        MysqlType.TIME: lambda: "time",
        MysqlType.TIME2: lambda: _temporal("time", column.fsp),
        MysqlType.DATETIME: lambda: "datetime",
        MysqlType.DATETIME2: lambda: _temporal("datetime", column.fsp),
        MysqlType.TIMESTAMP: lambda: "timestamp",
        MysqlType.TIMESTAMP2: lambda: _temporal("timestamp", column.fsp),
        MysqlType.VARCHAR: lambda: (
            ("varbinary" if binary else "varchar") + f"({column.max_length // per_char})"
        ),
        MysqlType.VAR_STRING: lambda: (
            ("varbinary" if binary else "varchar") + f"({column.max_length // per_char})"
        ),
        MysqlType.STRING: lambda: (
            ("binary" if binary else "char") + f"({column.max_length // per_char})"
        ),
        MysqlType.BLOB: lambda: (
            _BLOB_NAMES.get(column.length_size, "long") + ("blob" if binary else "text")
        ),
        MysqlType.JSON: lambda: "json",
        MysqlType.GEOMETRY: lambda: "geometry",
        MysqlType.ENUM: lambda: f"enum({_quoted(_enum_labels(column.enum_values))})",
        MysqlType.SET: lambda: f"set({_quoted(column.set_values or [])})",
        # The dimension comes from the optional VECTOR_DIMENSIONALITY metadata (FULL).
        MysqlType.VECTOR: lambda: (
            f"vector({column.vector_dimensions})"
            if getattr(column, "vector_dimensions", 0)
            else "vector"
        ),
    }
    render = simple.get(code)
    return render() if render else f"type{code}"


def _codec(collation: str | None) -> str | None:
    """The charset of a text column as ``ColumnMeta.charset`` wants it (its MySQL name, which
    ``bridge.parse.binlog.values`` maps to a decoder), ``None`` for binary data."""
    charset = _charset_name(collation)
    return None if charset == "binary" else charset


# Codes a server may log for the same declared type (old and new temporal formats, the two
# VARCHAR codes, old DECIMAL, NEWDATE).
_SAME_CODES: dict[int, int] = {
    MysqlType.TIME: MysqlType.TIME2,
    MysqlType.DATETIME: MysqlType.DATETIME2,
    MysqlType.TIMESTAMP: MysqlType.TIMESTAMP2,
    MysqlType.NEWDATE: MysqlType.DATE,
    MysqlType.VAR_STRING: MysqlType.VARCHAR,
    MysqlType.DECIMAL: MysqlType.NEWDECIMAL,
    # MariaDB's compressed columns (VARCHAR(n) COMPRESSED, TEXT COMPRESSED).
    MysqlType.VARCHAR_COMPRESSED: MysqlType.VARCHAR,
    MysqlType.BLOB_COMPRESSED: MysqlType.BLOB,
}


def _expected_code(column: ColumnDefinition) -> int | None:
    """The binlog type code of a declared type; None for a type the table does not list
    (MariaDB's UUID, INET6: not checked)."""
    data_type = column.column_type.split("(", 1)[0].split(" ", 1)[0]
    return DATA_TYPE_CODES.get(data_type)


def _check_fits(
    schema: str, table: str, columns: Sequence[Any], named: bool, definition: TableDefinition
) -> None:
    """Raise ``SchemaMismatch`` unless the TABLE_MAP's columns are the definition's."""
    held = definition.columns
    problem = ""
    if len(held) != len(columns):
        problem = f"the binlog has {len(columns)} columns, the schema history {len(held)}"
    elif named:
        differing = [
            f"{c.name} (history: {h.name})"
            for c, h in zip(columns, held, strict=True)
            if c.name.lower() != h.name.lower()
        ]
        if differing:
            problem = "the binlog names columns " + ", ".join(differing[:5])
    if not problem:
        for index, (column, column_held) in enumerate(zip(columns, held, strict=True)):
            expected = _expected_code(column_held)
            logged = _SAME_CODES.get(column.type, column.type)
            if expected is not None and logged != _SAME_CODES.get(expected, expected):
                problem = (
                    f"column {index + 1} ({column_held.name}) is {column_held.column_type} in "
                    f"the schema history but the binlog logs type code {int(column.type)}"
                )
                break
    if problem:
        raise SchemaMismatch(
            f"table {schema}.{table}: {problem}; the history does not describe the table "
            "here, and decoding on would misname its rows. Fix: if a DDL ran outside the "
            "binlog (sql_log_bin=0), run `canal-bridge schema reload --config F "
            f"--destination D --table {schema}.{table}` (today's definition from the "
            "destination's cursor on), then restart"
        )


def build_table_meta(
    schema: str,
    table: str,
    columns: Sequence[Any],
    null_bitmask: bytes,
    definition: TableDefinition | None,
    *,
    display_widths: bool = True,
    strict: bool = True,
) -> TableMeta:
    """``columns`` are the TABLE_MAP's columns (``bridge.parse.binlog.table_map.ColumnDef``:
    mysql-replication's ``Column`` attributes, ENUM labels without a placeholder);
    ``definition`` the table at the event's position, or None if unknown; ``display_widths``
    as ``declared_type`` takes it, for types derived from the binlog. ``strict=False``, for a
    table the destination does not select (its rows are dropped by the sink): what does not
    fit is decoded from the binlog alone, columns without names named by position (``@1``)."""
    if not strict:
        try:
            return build_table_meta(
                schema, table, columns, null_bitmask, definition, display_widths=display_widths
            )
        except SchemaMismatch:
            by_position = [
                c if c.name else replace(c, name=f"@{i + 1}") for i, c in enumerate(columns)
            ]
            return build_table_meta(
                schema, table, by_position, null_bitmask, None, display_widths=display_widths
            )
    named = bool(columns) and all(c.name for c in columns)
    if definition is None:
        if not named:
            raise SchemaMismatch(
                f"table {schema}.{table}: the binlog carries no column names "
                "(binlog_row_metadata is not FULL) and the schema history has no definition "
                "of this table; run `canal-bridge schema reload --config F --destination D "
                f"--table {schema}.{table}` (today's definition from the destination's "
                "cursor on), or set binlog_row_metadata=FULL on the source"
            )
    else:
        _check_fits(schema, table, columns, named, definition)
    keys = {k.lower() for k in definition.primary_key} if definition is not None else set()
    has_charsets = any(c.charset_id is not None or c.collation_name for c in columns)
    metas = []
    for index, column in enumerate(columns):
        held = definition.columns[index] if definition is not None else None
        name = column.name if named else held.name  # type: ignore[union-attr]
        mysql_type = held.column_type if held is not None else declared_type(column, display_widths)
        is_key = bool(column.is_primary) if named else name.lower() in keys
        # A NO_LOG map has no charsets: the definition's.
        charset = _codec(column.collation_name) if has_charsets or held is None else held.charset
        code = column.type
        enum_values = _enum_labels(column.enum_values)
        set_values = tuple(column.set_values or ())
        if held is not None and code == MysqlType.ENUM and not enum_values:
            enum_values = held.labels
        if held is not None and code == MysqlType.SET and not set_values:
            set_values = held.labels
        metas.append(
            ColumnMeta(
                index=index,
                name=name,
                type_code=code,
                mysql_type=mysql_type,
                unsigned=bool(column.unsigned) or (held is not None and held.unsigned),
                nullable=bool(null_bitmask[index // 8] & (1 << (index % 8))),
                is_key=is_key,
                charset=charset,
                max_length=int(
                    getattr(column, "max_length", 0)
                    or getattr(column, "length_size", 0)
                    or getattr(column, "size", 0)
                    or 0
                ),
                precision=int(getattr(column, "precision", 0) or 0),
                scale=int(getattr(column, "decimals", 0) or 0),
                fsp=int(getattr(column, "fsp", 0) or 0),
                bits=int(getattr(column, "bits", 0) or 0),
                enum_values=enum_values,
                set_values=set_values,
                is_text=code in (MysqlType.BLOB, MysqlType.JSON) and charset is not None,
            )
        )
    return TableMeta(schema=schema, table=table, columns=tuple(metas))
