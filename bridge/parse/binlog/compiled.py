"""Which columns the compiled image reader (``canal_bridge_native.ImageReader``) decodes, and
the reader of a plan.

The compiled reader renders the types of most tables: integers, DECIMAL, DATETIME2, DATE,
TIME2, YEAR, UTF-8 or binary strings and BLOBs, ENUM and SET, and MySQL's binary JSON.
FLOAT/DOUBLE columns (Java's shortest rendering), TIMESTAMP (time zones), BIT, GEOMETRY, other
charsets and base64 binary text (``mq.binary_encoding: base64``) keep their Python decoders
(``bridge.parse.binlog.values``), which the compiled reader calls for those columns. Both value
modes are honoured: the mode differences among the compiled types, DECIMAL's canal spelling
(also inside JSON) and ENUM/SET as canal's index and bitmask, are flags of their specs. It
hands an image to the Python reader whenever that one must decide (truncated or corrupt
values, invalid UTF-8), so results and errors are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bridge import native
from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.table_meta import ColumnMeta
from bridge.parse.binlog.values import (
    _T,
    INTEGER_LAYOUTS,
    DecodeOptions,
    plain_codec,
    storage_bytes,
    text_decoder,
)

# (kind, a, b, sql_type, d, labels); kinds and fields as native/src/image.rs reads them.
Spec = tuple[int, int, int, int, int, tuple[str, ...]]

_INT, _DECIMAL, _DATETIME2, _DATE, _TIME2, _YEAR, _TEXT, _JSON, _ENUM, _SET = range(1, 11)
_UTF8, _LATIN1 = 0, 1
_MAX_DECIMAL_PRECISION = 65
_TEXT_TYPES: dict[int, int] = {
    MysqlType.VARCHAR: _T.VARCHAR,
    MysqlType.VAR_STRING: _T.VARCHAR,
    MysqlType.STRING: _T.CHAR,
}
_BLOBS = (MysqlType.TINY_BLOB, MysqlType.MEDIUM_BLOB, MysqlType.LONG_BLOB, MysqlType.BLOB)


def column_spec(col: ColumnMeta, options: DecodeOptions) -> Spec | None:
    """How the compiled reader decodes ``col`` like its Python decoder, or None if it can't.
    Call only for a column whose Python decoder could be built."""
    code = col.type_code
    if code in INTEGER_LAYOUTS:
        size, sql_type, wider = INTEGER_LAYOUTS[code]
        return (_INT, size, int(col.unsigned), sql_type, wider, ())
    if code == MysqlType.NEWDECIMAL:
        if not 0 <= col.scale <= col.precision <= _MAX_DECIMAL_PRECISION or col.precision <= 0:
            return None
        return (_DECIMAL, col.precision, col.scale, _T.DECIMAL, int(options.canal), ())
    if code in (MysqlType.DATETIME2, MysqlType.TIME2):
        if not 0 <= col.fsp <= 6:
            return None
        if code == MysqlType.DATETIME2:
            return (_DATETIME2, col.fsp, 0, _T.TIMESTAMP, 0, ())
        return (_TIME2, col.fsp, 0, _T.TIME, 0, ())
    if code == MysqlType.DATE:
        return (_DATE, 0, 0, _T.DATE, 0, ())
    if code == MysqlType.YEAR:
        return (_YEAR, 0, 0, _T.VARCHAR, 0, ())
    if code in _TEXT_TYPES:
        return _text_spec(col, 1 if col.max_length < 256 else 2, _TEXT_TYPES[code], options)
    if code == MysqlType.JSON and 0 <= col.max_length <= 4:
        return (_JSON, col.max_length or 4, 0, _T.VARCHAR, int(options.canal), ())
    if code in (MysqlType.ENUM, MysqlType.SET):
        size = storage_bytes(col)
        labels = col.enum_values if code == MysqlType.ENUM else col.set_values
        kind, sql_type = (_ENUM, _T.INTEGER) if code == MysqlType.ENUM else (_SET, _T.BIT)
        return (kind, size, int(options.canal), sql_type, 0, tuple(labels)) if size <= 8 else None
    if code in _BLOBS and 1 <= col.max_length <= 4:
        return _text_spec(col, col.max_length, _T.CLOB, options)
    return None


def _text_spec(col: ColumnMeta, prefix: int, text_type: int, options: DecodeOptions) -> Spec | None:
    if text_decoder(col) is None:  # binary: ISO-8859-1 text (base64: Python's), sql_type BLOB
        if options.binary_encoding != "latin1":
            return None
        return (_TEXT, prefix, _LATIN1, _T.BLOB, 0, ())
    if plain_codec(col) != "utf-8":
        return None
    return (_TEXT, prefix, _UTF8, text_type, 0, ())


ImageReader = Callable[[bytes, int], Any]


def image_reader(
    steps: Sequence[tuple[Any, ...]], specs: Sequence[Spec | None], python: ImageReader
) -> ImageReader:
    """The compiled reader of a plan (``steps`` as ``bridge.parse.binlog.rows.Plan`` holds them)
    when it is built and decodes at least one of its columns, else ``python``; the compiled
    reader calls the Python decoders of the other columns, and ``python`` when it declines."""
    module = native.module
    if module is None or not any(spec is not None for spec in specs):
        return python
    decoders = [step[0] for step in steps]
    return module.ImageReader(specs, [step[5] for step in steps], decoders, python)
