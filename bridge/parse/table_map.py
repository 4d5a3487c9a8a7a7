"""Build a ``TableMeta`` from a TABLE_MAP, once per table id and definition.

With ``binlog_row_metadata=FULL`` the TABLE_MAP is the ground truth of the table *at the time of
the event*: names, signedness, charsets, ENUM/SET labels and the primary key. The declared type
text canal shows (``int(11)``, ``varchar(64)``) is taken from the live schema when the live
column of that name still has the same binlog definition, and derived from the TABLE_MAP
otherwise, so a table altered since the event never lends it a wrong type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bridge.parse.codes import MysqlType
from bridge.parse.exceptions import SchemaMismatch
from bridge.parse.table_meta import ColumnMeta, TableMeta

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
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint|year)\(\d+\)")
_FLOAT_SIZE = re.compile(r"^(float|double)\(\d+,\d+\)")
_VECTOR_SIZE = re.compile(r"^vector\(\d+\)$")  # a VECTOR whose dimension the event lacks
_SPATIAL = re.compile(
    r"^(?:point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection)$"
)


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


def _binlog_view(type_text: str) -> str:
    """A declared type without what the binlog cannot tell: display widths, ZEROFILL, the
    (M,D) of FLOAT/DOUBLE and the spatial subtype."""
    text = _DISPLAY_WIDTH.sub(r"\1", type_text.lower().replace(" zerofill", ""))
    text = _SPATIAL.sub("geometry", _FLOAT_SIZE.sub(r"\1", text))
    return text.replace("(4)", "")


def _same_definition(live_type: str, derived: str) -> bool:
    """True when the live declared type describes the same binlog column as ``derived``."""
    if derived == "vector":  # no VECTOR_DIMENSIONALITY in the event: any dimension matches
        live_type = _VECTOR_SIZE.sub("vector", live_type.lower())
    return _binlog_view(live_type) == _binlog_view(derived)


def _codec(collation: str | None) -> str | None:
    """The charset of a text column as ``ColumnMeta.charset`` wants it (its MySQL name, which
    ``bridge.parse.values`` maps to a decoder), ``None`` for binary data."""
    charset = _charset_name(collation)
    return None if charset == "binary" else charset


def build_table_meta(
    schema: str,
    table: str,
    columns: Sequence[Any],
    null_bitmask: bytes,
    live: Sequence[tuple[str, str, bool]] | None,
    *,
    display_widths: bool = True,
) -> TableMeta:
    """``columns`` are the TABLE_MAP's columns (``bridge.parse.table_map_event.ColumnDef``:
    mysql-replication's ``Column`` attributes, ENUM labels without a placeholder); ``live``
    the current (name, declared type, is key) list from ``information_schema``, or None if
    unknown; ``display_widths`` as ``declared_type`` takes it, for types derived from the
    binlog."""
    named = all(c.name for c in columns)
    if not named and (live is None or len(live) != len(columns)):
        raise SchemaMismatch(
            f"table {schema}.{table}: the binlog carries no column names "
            f"(binlog_row_metadata is not FULL) and the live table has "
            f"{len(live) if live else 0} columns instead of {len(columns)}; "
            "set binlog_row_metadata=FULL on the source"
        )
    live_by_name: Mapping[str, tuple[str, str, bool]] = {
        entry[0].lower(): entry for entry in live or ()
    }
    metas = []
    for index, column in enumerate(columns):
        name = column.name if named else live[index][0]  # type: ignore[index]
        derived = declared_type(column, display_widths)
        live_entry = live_by_name.get(name.lower())
        mysql_type = derived
        if live_entry is not None and _same_definition(live_entry[1], derived):
            mysql_type = live_entry[1]
        is_key = bool(column.is_primary) if named else bool(live_entry and live_entry[2])
        charset = _codec(column.collation_name)
        code = column.type
        metas.append(
            ColumnMeta(
                index=index,
                name=name,
                type_code=code,
                mysql_type=mysql_type,
                unsigned=bool(column.unsigned),
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
                enum_values=_enum_labels(column.enum_values),
                set_values=tuple(column.set_values or ()),
                is_text=code in (MysqlType.BLOB, MysqlType.JSON) and charset is not None,
            )
        )
    return TableMeta(schema=schema, table=table, columns=tuple(metas))
