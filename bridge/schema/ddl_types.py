"""How a server spells and resolves a column a DDL statement declares.

A statement leaves much implicit: ``INT`` is ``int(11)`` on MariaDB and ``int`` on MySQL 8.0.19+,
``DECIMAL`` is ``decimal(10,0)``, ``TEXT(100)`` is whichever TEXT type holds 100 characters of
its charset, ``CHAR(3) CHARACTER SET binary`` is ``binary(3)``, a column without a charset gets
its table's. These rules, found by running statements on both servers and reading
``information_schema.COLUMNS`` (tests/unit/schema/make_corpus.py records them), turn a parsed
``ColumnSpec`` into the ``ColumnDefinition`` that ``information_schema`` would show.
"""

from __future__ import annotations

from bridge.schema.ddl_parse import BIN_COLLATION
from bridge.schema.ddl_statements import ColumnSpec, TypeSpec
from bridge.schema.definitions import ColumnDefinition, Dialect

# Display widths MariaDB (and MySQL before 8.0.19) prints: (signed, unsigned).
_INT_WIDTHS = {
    "tinyint": (4, 3),
    "smallint": (6, 5),
    "mediumint": (9, 8),
    "int": (11, 10),
    "bigint": (20, 20),
}
# Bytes per character at most: what TEXT(n) and CONVERT TO size text types by.
_MBMAXLEN = {
    "big5": 2, "dec8": 1, "cp850": 1, "hp8": 1, "koi8r": 1, "latin1": 1, "latin2": 1,
    "swe7": 1, "ascii": 1, "ujis": 3, "sjis": 2, "hebrew": 1, "tis620": 1, "euckr": 2,
    "koi8u": 1, "gb2312": 2, "greek": 1, "cp1250": 1, "gbk": 2, "latin5": 1, "armscii8": 1,
    "utf8mb3": 3, "ucs2": 2, "cp866": 1, "keybcs2": 1, "macce": 1, "macroman": 1,
    "cp852": 1, "latin7": 1, "utf8mb4": 4, "cp1251": 1, "utf16": 4, "utf16le": 4,
    "cp1256": 1, "cp1257": 1, "utf32": 4, "binary": 1, "geostd8": 1, "cp932": 2,
    "eucjpms": 3, "gb18030": 4,
}  # fmt: skip
_TEXTS = ("tinytext", "text", "mediumtext", "longtext")
_BLOBS = ("tinyblob", "blob", "mediumblob", "longblob")
_TEXT_BYTES = (255, 65535, 16777215, 4294967295)
_CHARACTER_TYPES = frozenset({"char", "varchar", "nchar", "nvarchar", "enum", "set", *_TEXTS})
_TIME_TYPES = frozenset({"time", "datetime", "timestamp"})
_PLAIN_TYPES = frozenset(
    {
        "date", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
        "multipolygon", "uuid", "inet4", "inet6", "tinyblob", "blob",
        "mediumblob", "longblob",
    }
)  # fmt: skip


def normalize_charset(name: str) -> str:
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def charset_of(charset: str | None, collation: str | None) -> str | None:
    """The charset an explicit CHARACTER SET and/or COLLATE name: a collation implies its
    charset (the part before the first ``_``; ``binary`` is its own)."""
    if charset is not None:
        return normalize_charset(charset)
    if collation is None or collation == BIN_COLLATION:
        return None
    return normalize_charset(collation.split("_", 1)[0])


def column_definition(
    spec: ColumnSpec, table_charset: str | None, dialect: Dialect
) -> ColumnDefinition:
    """The definition the server makes of ``spec`` in a table whose default charset is
    ``table_charset``."""
    column_type, charset = spell_type(spec.type, table_charset, dialect)
    nullable = True if spec.null is None else spec.null
    if spec.primary or spec.auto_increment:
        nullable = False
    return ColumnDefinition(
        spec.name, column_type, nullable, charset, spec.generated, spec.invisible
    )


def spell_type(
    spec: TypeSpec, table_charset: str | None, dialect: Dialect
) -> tuple[str, str | None]:
    """(COLUMN_TYPE, CHARACTER_SET_NAME) of a declared type."""
    base = spec.base
    if base == "json":
        return ("longtext", "utf8mb4") if dialect.mariadb else ("json", None)
    if base in _CHARACTER_TYPES:
        charset = charset_of(spec.charset, spec.collation) or table_charset
        return _character_type(spec, charset or dialect.server_charset)
    if base in ("binary", "varbinary"):
        return f"{base}({spec.args[0] if spec.args else 1})", None
    if base in _BLOBS and spec.args:
        return _sized(_BLOBS, int(spec.args[0])), None
    return _number_or_time(spec, dialect), None


def _character_type(spec: TypeSpec, charset: str) -> tuple[str, str | None]:
    base, args = spec.base, spec.args
    binary = charset == "binary"
    if base in ("nchar", "nvarchar"):
        base = base[1:]
    if base in ("char", "varchar"):
        length = args[0] if args else "1"
        if binary:
            base = "binary" if base == "char" else "varbinary"
        return f"{base}({length})", None if binary else charset
    if base in _TEXTS:
        if args:
            base = _sized(_TEXTS, int(args[0]) * _MBMAXLEN.get(charset, 4))
        return (_BLOBS[_TEXTS.index(base)], None) if binary else (base, charset)
    labels = ",".join("'" + label.rstrip(" ").replace("'", "''") + "'" for label in args)
    return f"{base}({labels})", charset


def _sized(names: tuple[str, ...], size: int) -> str:
    return next(
        (name for name, most in zip(names, _TEXT_BYTES, strict=True) if size <= most), names[-1]
    )


def _number_or_time(spec: TypeSpec, dialect: Dialect) -> str:
    base, args = spec.base, spec.args
    if base in _INT_WIDTHS or base in ("bool", "serial"):
        return _integer(spec, dialect)
    suffix = (" unsigned" if spec.unsigned else "") + (" zerofill" if spec.zerofill else "")
    if base == "decimal":
        precision = args[0] if args else "10"
        scale = args[1] if len(args) > 1 else "0"
        return f"decimal({precision},{scale}){suffix}"
    if base == "float":
        if len(args) == 1:
            base = "float" if int(args[0]) <= 24 else "double"
            return base + suffix
        return (f"float({args[0]},{args[1]})" if args else "float") + suffix
    if base == "double":
        return (f"double({args[0]},{args[1]})" if len(args) > 1 else "double") + suffix
    if base == "bit":
        return f"bit({args[0] if args else 1})"
    if base == "year":
        return "year(4)" if dialect.display_widths else "year"
    if base in _TIME_TYPES:
        return f"{base}({args[0]})" if args and args[0] != "0" else base
    if base == "vector":
        return f"vector({args[0] if args else 2048})"
    if base in ("geomcollection", "geometrycollection"):
        return "geometrycollection" if dialect.mariadb else "geomcollection"
    if base in _PLAIN_TYPES:
        return base
    raise ValueError(f"no spelling for type {base}")


def _integer(spec: TypeSpec, dialect: Dialect) -> str:
    base, unsigned, zerofill = spec.base, spec.unsigned, spec.zerofill
    if base == "bool":
        base, width = "tinyint", "1"
    elif base == "serial":
        base, unsigned, width = "bigint", True, ""
    else:
        width = spec.args[0] if spec.args else ""
    suffix = (" unsigned" if unsigned else "") + (" zerofill" if zerofill else "")
    if dialect.display_widths or zerofill:
        width = width or str(_INT_WIDTHS[base][1 if unsigned else 0])
        return f"{base}({width}){suffix}"
    if base == "tinyint" and width == "1" and not unsigned:
        return f"tinyint(1){suffix}"
    return base + suffix


def converted(column: ColumnDefinition, charset: str, dialect: Dialect) -> ColumnDefinition:
    """``column`` after CONVERT TO CHARACTER SET ``charset``: character columns take the
    charset; a TEXT type grows to hold as many characters as before, bytes times the new
    charset's width (MySQL and MariaDB both; VARCHAR keeps its length in characters)."""
    old = column.charset
    if old is None:
        return column
    column_type = column.column_type
    base = column_type.split("(", 1)[0]
    if base in _TEXTS:
        characters = _TEXT_BYTES[_TEXTS.index(base)] // _MBMAXLEN.get(old, 4)
        column_type = _sized(_TEXTS, characters * _MBMAXLEN.get(charset, 4))
        if _TEXTS.index(column_type) < _TEXTS.index(base):
            column_type = base
    if charset == "binary":
        if base in _TEXTS:
            column_type = _BLOBS[_TEXTS.index(column_type)]
        elif base in ("char", "varchar"):
            column_type = ("binary" if base == "char" else "varbinary") + column_type[len(base) :]
        else:
            return _with(column, column_type, charset)
        return _with(column, column_type, None)
    return _with(column, column_type, charset)


def _with(column: ColumnDefinition, column_type: str, charset: str | None) -> ColumnDefinition:
    return ColumnDefinition(
        column.name, column_type, column.nullable, charset, column.generated, column.invisible
    )
