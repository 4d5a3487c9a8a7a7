"""Snapshot rows rendered exactly as the binlog reader renders them (docs/snapshots.md, "Exact
values").

There is one renderer: the stream's row decoder. A snapshot reads each column in a form that
loses nothing, writes the row as the binlog row image the server would have logged for it
(``bridge.snapshot.image``), and decodes that image with a ``RowDecoder`` built from the
``TableMeta`` the binlog reader would build for the table (``bridge.snapshot.columns``), with
the destination's ``DecodeOptions``. Values, ``sqlType``, ``mysqlType`` and ``isKey`` come out
as the stream's, in both value modes and both binary encodings.

How each type is read (the SELECT list, on a connection prepared by ``prepare_connection``:
``character_set_results`` binary, ``time_zone`` '+00:00'):

- integers, YEAR, DOUBLE: the column (PyMySQL ints and floats; the server prints doubles
  exactly); FLOAT: ``CAST(c AS DOUBLE)`` (the column's own text is rounded to 6 digits);
- DECIMAL, DATE, TIME, DATETIME: ``CAST(c AS CHAR)``, the exact text;
- TIMESTAMP: ``UNIX_TIMESTAMP(c)``, the stored seconds (and fraction) whatever the zone;
- ENUM, SET: ``CAST(c AS UNSIGNED)``, the stored index / bitmask (``c+0`` is a DOUBLE on MySQL);
- strings, BLOB/TEXT, BIT, GEOMETRY: the column, as bytes in the column's own charset;
  VECTOR and MySQL's JSON: ``CAST(c AS BINARY)`` (PyMySQL would decode them as text).

Known difference: JSON scalars of SQL types (opaque values) are read as their text
(``bridge.snapshot.jsonb``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from bridge.entry import RowData
from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.rows import DecodedRow, RowDecoder
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from bridge.parse.binlog.values import DecodeOptions, text_decoder
from bridge.parse.convert import prints_display_widths
from bridge.snapshot.chunks import quote_name
from bridge.snapshot.columns import describe
from bridge.snapshot.exceptions import TableWithoutKey, UnsupportedSnapshotColumn
from bridge.snapshot.image import BodyWriter, body_writer, text_of
from bridge.snapshot.window import Key

__all__ = [
    "SnapshotTable",
    "TableWithoutKey",
    "UnsupportedSnapshotColumn",
    "chunk_rows",
    "decode_key",
    "describe_table",
    "encode_key",
    "key_values",
    "prepare_connection",
    "row_data",
    "window_keys",
]

# SQL read of a column by type code ("{}" is the quoted column); the column itself otherwise.
_READS: dict[int, str] = {
    MysqlType.FLOAT: "CAST({} AS DOUBLE)",
    MysqlType.NEWDECIMAL: "CAST({} AS CHAR)",
    MysqlType.DATE: "CAST({} AS CHAR)",
    MysqlType.TIME2: "CAST({} AS CHAR)",
    MysqlType.DATETIME2: "CAST({} AS CHAR)",
    MysqlType.TIMESTAMP2: "UNIX_TIMESTAMP({})",
    MysqlType.ENUM: "CAST({} AS UNSIGNED)",
    MysqlType.SET: "CAST({} AS UNSIGNED)",
    MysqlType.VECTOR: "CAST({} AS BINARY)",
    MysqlType.JSON: "CAST({} AS BINARY)",
}
# Key columns whose lossless read is no SQL parameter comparing in key order: a second read
# is appended to the SELECT list (a TIMESTAMP's text in the session zone, '+00:00').
_KEY_READS: dict[int, str] = {MysqlType.TIMESTAMP2: "CAST({} AS CHAR)"}

KeyParam = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class SnapshotTable:
    """One table as the snapshot reads it.

    ``meta``: the row decoder's ``TableMeta``, as the binlog reader would build it for this
    table. ``select_list``: the SQL expressions to SELECT (``SELECT {select_list} FROM
    `db`.`t` ...``): one per column in ordinal order, then one per key column that needs a
    second read (see ``key_positions``). ``key_columns``: the primary key, or the chosen
    unique index over NOT NULL columns, in index order (``ORDER BY`` these, quoted).
    ``key_positions``: where each key column's raw value sits in a selected row (pass the
    row to ``key_values`` rather than reading them); ``key_indexes``: each key column's
    ordinal, where its rendered value sits in a decoded row (``window_keys``). ``decoder``:
    the stream's row decoder for ``meta`` and the destination's options, bound once.
    ``write_body``: selected rows -> one INSERT body (``bridge.snapshot.image.body_writer``).
    """

    meta: TableMeta
    select_list: str
    key_columns: tuple[str, ...]
    key_positions: tuple[int, ...]
    key_indexes: tuple[int, ...]
    decoder: RowDecoder = field(compare=False, repr=False)
    write_body: BodyWriter = field(compare=False, repr=False)
    key_params: tuple[KeyParam, ...] = field(compare=False, repr=False)


def prepare_connection(conn: Any, options: DecodeOptions) -> None:
    """Session settings the snapshot's SELECTs need, once per connection: results in the
    columns' own charsets (``character_set_results`` binary: a latin1 column's bytes, not a
    conversion), time zone '+00:00' (a TIMESTAMP key compares exactly, with no DST gap or
    overlap), and no ``PAD_CHAR_TO_FULL_LENGTH`` (CHAR values without pad spaces, as the
    binlog writes them). ``options`` is the destination's; the session needs none of it
    (rendering happens in the decoder) and takes it to keep one call shape."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION character_set_results = binary, time_zone = '+00:00'")
        cur.execute(
            "SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'PAD_CHAR_TO_FULL_LENGTH', '')"
        )


def describe_table(
    conn: Any, schema: str, table: str, options: DecodeOptions
) -> SnapshotTable | None:
    """The table as the snapshot reads it, from ``information_schema`` on a connection
    prepared by ``prepare_connection``; None when the table does not exist (any more).

    ``options`` are the stream's decode options, ``time_zone`` included (the zone the binlog
    reader renders TIMESTAMP values in). Raises ``TableWithoutKey`` for a table with neither
    a primary key nor a unique NOT NULL index, ``UnsupportedSnapshotColumn`` for a column
    type no snapshot can read exactly (MariaDB's UUID, INET4/6)."""
    version = str(conn.get_server_info())
    definition = describe(
        conn,
        schema,
        table,
        mariadb="mariadb" in version.lower(),
        display_widths=prints_display_widths(version),
    )
    if definition is None:
        return None
    meta = definition.meta
    reads = [_READS.get(col.type_code, "{}").format(quote_name(col.name)) for col in meta.columns]
    by_name = {col.name: col for col in meta.columns}
    positions, params = [], []
    for name in definition.key:
        col = by_name[name]
        if col.type_code in _KEY_READS:
            positions.append(len(reads))
            reads.append(_KEY_READS[col.type_code].format(quote_name(col.name)))
        else:
            positions.append(col.index)
        params.append(_key_param(col))
    return SnapshotTable(
        meta=meta,
        select_list=", ".join(reads),
        key_columns=definition.key,
        key_positions=tuple(positions),
        key_indexes=tuple(by_name[name].index for name in definition.key),
        decoder=RowDecoder(meta, options=options),
        write_body=body_writer(meta.columns),
        key_params=tuple(params),
    )


def row_data(table: SnapshotTable, raw: Sequence[Any]) -> RowData:
    """One selected row (a tuple from a plain PyMySQL cursor) as the INSERT row the binlog
    reader would produce for it (``chunk_rows`` of one row)."""
    (row,), _ = chunk_rows(table, (raw,))
    return row


def chunk_rows(
    table: SnapshotTable, raws: Sequence[Sequence[Any]]
) -> tuple[tuple[DecodedRow, ...], int]:
    """Selected rows as the INSERT rows the binlog reader would produce for them: every
    column in ``after``, each ``updated``; values, ``sqlType``, ``mysqlType``, ``isKey`` and
    ``isNull`` exactly the stream's; with the bytes of their row images. The rows are
    written as one multi-row rows event and decoded by one decoder call (per row, the call
    and its set-up cost more than the values). A value a column cannot hold raises
    ``ValueError`` naming the column."""
    if not raws:
        return (), 0
    body = table.write_body(raws)
    return cast(tuple[DecodedRow, ...], table.decoder.decode("insert", body)), len(body)


def window_keys(table: SnapshotTable, rows: Iterable[DecodedRow]) -> list[Key]:
    """The key of each decoded row as the watermark windows compare keys (the rendered values
    of the key columns, ``bridge.snapshot.window.key_of`` of its Columns), read from its
    values without making its Columns."""
    indexes = table.key_indexes
    return [tuple([row.new_values[i] for i in indexes]) for row in rows]


def key_values(table: SnapshotTable, raw: Sequence[Any]) -> tuple[Any, ...]:
    """The key of a selected row as SQL parameters for keyset pagination (``WHERE (k1, k2) >
    (%s, %s) ORDER BY k1, k2``), comparing in the index's order: text keys as ``str`` (compared
    in the column's collation), binary keys as ``bytes``, DECIMAL as ``Decimal``, temporal keys
    as their text, BIT as ``int``. Persist them with ``encode_key``."""
    return tuple(
        param(raw[position])
        for param, position in zip(table.key_params, table.key_positions, strict=True)
    )


def encode_key(values: Sequence[Any]) -> list[list[str]]:
    """Key values (``key_values``) as JSON-safe data: a ``[kind, text]`` pair each, integers as
    text (JSON readers that use doubles would round a BIGINT)."""
    return [_encode_one(value) for value in values]


def decode_key(data: Sequence[Sequence[str]]) -> tuple[Any, ...]:
    """``encode_key``'s data back as key values; ``ValueError`` for anything else."""
    try:
        return tuple(_DECODERS[kind](text) for kind, text in data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a snapshot key: {data!r}") from exc


# ------------------------------------------------------------------------------ internals


def _key_param(col: ColumnMeta) -> KeyParam:
    """How a key column's raw value becomes a parameter that compares in index order."""
    code = col.type_code
    if code in (MysqlType.VARCHAR, MysqlType.STRING, MysqlType.BLOB):
        decode = text_decoder(col)
        if decode is not None:
            return lambda value: decode(bytes(value))
        return bytes  # binary: compared byte by byte, the full BINARY(n) value
    if code == MysqlType.NEWDECIMAL:
        return lambda value: Decimal(text_of(value))
    if code in (MysqlType.DATE, MysqlType.TIME2, MysqlType.DATETIME2, MysqlType.TIMESTAMP2):
        return text_of
    if code == MysqlType.BIT:
        return lambda value: int.from_bytes(value, "big")
    if code in (MysqlType.FLOAT, MysqlType.DOUBLE):
        return float
    return int  # integers, YEAR, ENUM (index order) and SET


def _encode_one(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a key value: {value!r}")
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, Decimal):
        return ["decimal", str(value)]
    if isinstance(value, bytes | bytearray):
        return ["bytes", base64.b64encode(bytes(value)).decode("ascii")]
    if isinstance(value, str):
        return ["str", value]
    raise ValueError(f"not a key value: {value!r}")


_DECODERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "decimal": Decimal,
    "bytes": lambda text: base64.b64decode(text, validate=True),
    "str": str,
}
