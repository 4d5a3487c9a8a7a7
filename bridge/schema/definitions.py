"""Table definitions as the schema history keeps them: what decoding and the records need.

A definition is what ``information_schema`` says of a table at one binlog position: the
columns in order with their declared type text (``COLUMN_TYPE``, the ``mysqlType`` of a
record), nullability, charset, whether they are generated or invisible, and the primary key.
Signedness and ENUM/SET labels are read off the type text, so they can never disagree with it.

The model is plain and immutable: applying a DDL statement makes new definitions
(``bridge.schema.apply``); nothing is changed in place, so a definition handed to a decoder
stays what it was when the decoder was built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LABELS = re.compile(r"^(?:enum|set)\((.*)\)$", re.S)
_LABEL = re.compile(r"'((?:[^']|'')*)'", re.S)


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """One column. ``column_type`` is spelled as ``information_schema.COLUMNS.COLUMN_TYPE``
    spells it on the server that wrote the binlog (lowercase, ``int(11)`` on MariaDB and
    ``int`` on MySQL 8.0.19+, ``decimal(10,2) unsigned``, ``enum('a','b')``); ``charset`` is
    ``CHARACTER_SET_NAME`` (None for columns without one: numbers, dates, binary strings).
    ``generated``: a VIRTUAL or STORED generated column; ``invisible``: MySQL's INVISIBLE or
    MariaDB's INVISIBLE (both are in the row images)."""

    name: str
    column_type: str
    nullable: bool = True
    charset: str | None = None
    generated: bool = False
    invisible: bool = False

    @property
    def unsigned(self) -> bool:
        return " unsigned" in self.column_type

    @property
    def labels(self) -> tuple[str, ...]:
        """ENUM or SET labels in definition order, unquoted; () for other types."""
        match = _LABELS.match(self.column_type)
        if match is None:
            return ()
        return tuple(label.replace("''", "'") for label in _LABEL.findall(match.group(1)))


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """A table as of one binlog position. ``charset``: the table's default charset (what a
    column added without one gets); ``primary_key``: column names in key order."""

    schema: str
    name: str
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def column(self, name: str) -> ColumnDefinition | None:
        """The column of that name (column names are case-insensitive in MySQL)."""
        wanted = name.lower()
        return next((c for c in self.columns if c.name.lower() == wanted), None)

    def index_of(self, name: str) -> int:
        """The position of the column of that name; ValueError when there is none."""
        wanted = name.lower()
        for index, column in enumerate(self.columns):
            if column.name.lower() == wanted:
                return index
        raise ValueError(f"{self.full_name} has no column {name!r}")


@dataclass(frozen=True, slots=True)
class Dialect:
    """What decides how a server spells and resolves what a DDL leaves implicit.

    ``display_widths``: integer types carry display widths in ``COLUMN_TYPE`` (MariaDB, MySQL
    before 8.0.19: ``int(11)``); ``mariadb``: the server is MariaDB (``JSON`` is ``longtext``,
    its own types and defaults); ``server_charset``: ``character_set_server``, a new
    database's charset when its CREATE names none; ``lower_case_table_names``: the server's
    setting (0: names as written; 1 and 2: compared in lowercase)."""

    display_widths: bool = False
    mariadb: bool = False
    server_charset: str = "utf8mb4"
    lower_case_table_names: int = 0


@dataclass(slots=True)
class Schemas:
    """Every definition the history knows at one position: the databases with their default
    charsets, and the tables by (database, table). Keys are the names as the server compares
    them (``Dialect.lower_case_table_names``: lowercase when it is 1 or 2).

    The one mutable piece: ``bridge.schema.apply`` replaces entries of its dicts as DDL
    arrives (a copy per statement would cost a pass over 10,000 tables each); the definitions
    in them are immutable."""

    dialect: Dialect = field(default_factory=Dialect)
    databases: dict[str, str] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableDefinition] = field(default_factory=dict)

    def key(self, schema: str, table: str) -> tuple[str, str]:
        if self.dialect.lower_case_table_names:
            return schema.lower(), table.lower()
        return schema, table

    def database_key(self, schema: str) -> str:
        return schema.lower() if self.dialect.lower_case_table_names else schema

    def table(self, schema: str, table: str) -> TableDefinition | None:
        return self.tables.get(self.key(schema, table))

    def copy(self) -> Schemas:
        """An independent copy (the definitions themselves are shared: immutable)."""
        return Schemas(self.dialect, dict(self.databases), dict(self.tables))
