"""A table's definition from ``information_schema``, as the binlog reader would know it.

The stream builds a table's ``TableMeta`` from the TABLE_MAP event (with
``binlog_row_metadata=FULL``: types, sizes, charsets, signedness, ENUM/SET labels, the primary key)
plus the table's definition (``bridge.parse.binlog.table_meta.build_table_meta``). A snapshot has no
TABLE_MAP, so this module writes the TABLE_MAP's columns (``ColumnDef``) from
``information_schema.COLUMNS`` -- the type code and metadata each server logs for each declared type
-- and hands them to the same ``build_table_meta``: one place decides the names, the ``mysql_type``
texts and the key flags of both paths.

Collations go through their id and ``collation_name`` as the TABLE_MAP's do, so a collation the
stream does not know is binary here too. The key used for chunking is the primary key, or else
the first unique index (fewest columns, then name) whose columns are all NOT NULL and whole
(no prefix, no expression); a table with neither is refused (``TableWithoutKey``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bridge.parse.binlog.codes import DATA_TYPE_CODES, MysqlType
from bridge.parse.binlog.table_map import ColumnDef, collation_name
from bridge.parse.binlog.table_meta import TableMeta, build_table_meta
from bridge.schema.definitions import ColumnDefinition
from bridge.schema.definitions import TableDefinition as Definition
from bridge.snapshot.exceptions import TableWithoutKey, UnsupportedSnapshotColumn

_COLUMNS_SQL = (
    "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.COLUMN_KEY, c.IS_NULLABLE, "
    "c.COLLATION_NAME, co.ID, c.CHARACTER_OCTET_LENGTH, c.NUMERIC_PRECISION, "
    "c.NUMERIC_SCALE, c.DATETIME_PRECISION, c.EXTRA "
    "FROM information_schema.COLUMNS c "
    "LEFT JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME "
    "WHERE c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s ORDER BY c.ORDINAL_POSITION"
)
_INDEXES_SQL = (
    "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
    "ORDER BY INDEX_NAME, SEQ_IN_INDEX"
)

_BLOB_PREFIX = {"tiny": 1, "": 2, "medium": 3, "long": 4}
_LABELS = re.compile(r"^(?:enum|set)\((.*)\)", re.DOTALL)
_LABEL = re.compile(r"'((?:[^'\\]|''|\\.)*)'", re.DOTALL)
_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "b": "\b"}


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """What ``describe`` found: the decoder's table, the key chosen for chunking (column
    names in index order) and the columns' DATA_TYPE texts (for the SELECT list)."""

    meta: TableMeta
    key: tuple[str, ...]
    data_types: tuple[str, ...]


def describe(
    conn: Any, schema: str, table: str, *, mariadb: bool, display_widths: bool
) -> TableDefinition | None:
    """The table's definition, None when it does not exist. ``mariadb`` and
    ``display_widths`` as the stream's converter takes them from the server version."""
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL, (schema, table))
        rows = [tuple(_text(v) for v in row) for row in cur.fetchall()]
        if not rows:
            return None
        cur.execute(_INDEXES_SQL, (schema, table))
        indexes = [tuple(_text(v) for v in row) for row in cur.fetchall()]
    columns = [_column_def(schema, table, row, mariadb) for row in rows]
    nullable = [row[4] == "YES" for row in rows]
    null_bitmask = bytearray((len(rows) + 7) // 8)
    for index, flag in enumerate(nullable):
        null_bitmask[index // 8] |= flag << (index % 8)
    held = Definition(
        schema,
        table,
        tuple(ColumnDefinition(str(row[0]), str(row[2])) for row in rows),
        primary_key=tuple(str(row[0]) for row in rows if row[3] == "PRI"),
    )
    meta = build_table_meta(
        schema, table, columns, bytes(null_bitmask), held, display_widths=display_widths
    )
    not_null = {str(row[0]) for row, flag in zip(rows, nullable, strict=True) if not flag}
    key = chunking_key(indexes, not_null)
    if key is None:
        raise TableWithoutKey(schema, table)
    return TableDefinition(meta, key, tuple(str(row[1]) for row in rows))


def chunking_key(indexes: Sequence[tuple[Any, ...]], not_null: set[str]) -> tuple[str, ...] | None:
    """From the unique indexes' (index name, column name, prefix length) rows in index and
    position order: the primary key, else the unique index with fewest columns (then by
    name) over whole NOT NULL columns; None when there is none."""
    by_index: dict[str, list[tuple[Any, Any]]] = {}
    for name, column, prefix in indexes:
        by_index.setdefault(str(name), []).append((column, prefix))
    if "PRIMARY" in by_index:
        return tuple(str(column) for column, _ in by_index["PRIMARY"])
    usable = [
        (len(parts), name, tuple(str(column) for column, _ in parts))
        for name, parts in by_index.items()
        if all(
            column is not None and prefix is None and column in not_null for column, prefix in parts
        )
    ]
    return min(usable)[2] if usable else None


def _text(value: Any) -> Any:
    """information_schema text arrives as UTF-8 bytes under ``character_set_results=binary``."""
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else value


def _column_def(schema: str, table: str, row: tuple[Any, ...], mariadb: bool) -> ColumnDef:
    """One column as its TABLE_MAP (``binlog_row_metadata=FULL``) describes it."""
    name, data_type, column_type, column_key, _, collation, collation_id = row[:7]
    octets, precision, scale, fsp, extra = row[7:]
    data_type = str(data_type).lower()
    column_type = str(column_type)
    code = DATA_TYPE_CODES.get(data_type)
    if code is None:
        raise UnsupportedSnapshotColumn(schema, table, str(name), column_type)
    if collation_id is not None:
        collation = collation_name(int(collation_id), mariadb=mariadb)
    if code in (MysqlType.JSON, MysqlType.GEOMETRY) or data_type.endswith(("binary", "blob")):
        collation = None  # logged as binary (or, MySQL's JSON, with no charset at all)
    labels = _labels(column_type) if code in (MysqlType.ENUM, MysqlType.SET) else ()
    sizes: dict[str, int] = {}
    if code in (MysqlType.STRING, MysqlType.VARCHAR):
        sizes["max_length"] = int(octets)
    elif code == MysqlType.BLOB:
        sizes["length_size"] = _BLOB_PREFIX[data_type.removesuffix("text").removesuffix("blob")]
    elif code in (MysqlType.JSON, MysqlType.GEOMETRY, MysqlType.VECTOR):
        sizes["length_size"] = 4
    elif code in (MysqlType.FLOAT, MysqlType.DOUBLE):
        sizes["size"] = 4 if code == MysqlType.FLOAT else 8
    elif code == MysqlType.NEWDECIMAL:
        sizes.update(precision=int(precision), decimals=int(scale))
    elif code == MysqlType.BIT:
        sizes["bits"] = int(precision)
    elif code in (MysqlType.TIME2, MysqlType.DATETIME2, MysqlType.TIMESTAMP2):
        sizes["fsp"] = int(fsp or 0)
    elif code == MysqlType.ENUM:
        sizes["size"] = 1 if len(labels) < 256 else 2
    elif code == MysqlType.SET:
        set_bytes = (len(labels) + 7) // 8  # MySQL's get_set_pack_length
        sizes["size"] = 8 if set_bytes > 4 else set_bytes
    unsigned = code == MysqlType.YEAR or " unsigned" in column_type.lower()
    return ColumnDef(
        type=code,
        name=str(name),
        unsigned=unsigned,
        collation_name=collation,
        enum_values=labels if code == MysqlType.ENUM else (),
        set_values=labels if code == MysqlType.SET else (),
        is_primary=column_key == "PRI",
        visible="INVISIBLE" not in str(extra or "").upper(),
        vector_dimensions=int(octets) // 4 if code == MysqlType.VECTOR and octets else 0,
        **sizes,
    )


def _labels(column_type: str) -> tuple[str, ...]:
    """The labels of ``enum('a','it''s','b\\\\s')`` as the server prints COLUMN_TYPE."""
    found = _LABELS.match(column_type)
    if found is None:
        return ()
    return tuple(_unquote(label) for label in _LABEL.findall(found.group(1)))


def _unquote(label: str) -> str:
    out, i = [], 0
    while i < len(label):
        char = label[i]
        if char == "'" and label[i + 1 : i + 2] == "'":
            out.append("'")
            i += 2
        elif char == "\\" and i + 1 < len(label):
            out.append(_ESCAPES.get(label[i + 1], label[i + 1]))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)
