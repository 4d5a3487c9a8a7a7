"""Table definitions as the row decoder needs them, built once per TABLE_MAP definition.

A ``TableMeta`` is derived from a binlog TABLE_MAP event (column types, binlog metadata, and with
``binlog_row_metadata=FULL`` the names, signedness, charsets, ENUM/SET labels and primary key),
optionally enriched with the declared column types of the live schema. The row decoder
(``bridge.parse.rows``) turns raw row images into canal's text renderings using it.
"""

from __future__ import annotations

from dataclasses import dataclass


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
      Python codec (``bridge.parse.values`` decodes both); ``None`` for binary data.
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
