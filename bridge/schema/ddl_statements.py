"""What a DDL statement says about tables, parsed but not yet applied.

``bridge.schema.ddl_parse`` turns a statement into one of these; ``bridge.schema.apply``
applies it to a ``Schemas``. The split keeps the grammar apart from the rules a server follows
when it fills in what a statement leaves implicit (display widths, charsets, NOT NULL of key
columns: ``bridge.schema.ddl_types``). Names are as written: folding by
``lower_case_table_names`` happens when they are looked up.
"""

from __future__ import annotations

from dataclasses import dataclass

TableName = tuple[str, str]  # (schema, table), the schema filled in from the default


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """A column's type as written: ``base`` is the canonical type name (``int``, ``varchar``,
    ``text``, ``enum``, ...), ``args`` its parenthesized numbers or ENUM/SET labels."""

    base: str
    args: tuple[str, ...] = ()
    unsigned: bool = False
    zerofill: bool = False
    charset: str | None = None  # CHARACTER SET as written (or implied: NATIONAL, ASCII)
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    type: TypeSpec
    null: bool | None = None  # explicit NULL (True) / NOT NULL (False)
    primary: bool = False  # PRIMARY KEY (or KEY) written on the column
    generated: bool = False
    invisible: bool = False
    auto_increment: bool = False  # AUTO_INCREMENT columns are NOT NULL on both servers


# Where ADD / MODIFY / CHANGE put a column: None (the end, or where it was), "" (FIRST), or
# the name of the column it goes after.
Position = str | None


@dataclass(frozen=True, slots=True)
class CreateTable:
    name: TableName
    columns: tuple[ColumnSpec, ...] = ()
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    collation: str | None = None
    like: TableName | None = None
    if_not_exists: bool = False
    or_replace: bool = False
    temporary: bool = False
    select: bool = False  # CREATE TABLE ... SELECT: the query's columns are not written


@dataclass(frozen=True, slots=True)
class AddColumns:
    columns: tuple[ColumnSpec, ...]
    position: Position = None
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ChangeColumn:
    """MODIFY (``old`` is the column's own name) or CHANGE (``old`` -> ``column.name``)."""

    old: str
    column: ColumnSpec
    position: Position = None
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class SetVisibility:
    name: str
    invisible: bool


@dataclass(frozen=True, slots=True)
class AddPrimaryKey:
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DropPrimaryKey:
    pass


@dataclass(frozen=True, slots=True)
class ConvertCharset:
    """CONVERT TO CHARACTER SET: every character column and the table default."""

    charset: str | None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class DefaultCharset:
    """[DEFAULT] CHARACTER SET / COLLATE as a table option: the default only."""

    charset: str | None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class RenameTo:
    name: TableName


AlterAction = (
    AddColumns
    | DropColumn
    | ChangeColumn
    | RenameColumn
    | SetVisibility
    | AddPrimaryKey
    | DropPrimaryKey
    | ConvertCharset
    | DefaultCharset
    | RenameTo
)


@dataclass(frozen=True, slots=True)
class AlterTable:
    name: TableName
    actions: tuple[AlterAction, ...] = ()


@dataclass(frozen=True, slots=True)
class RenameTables:
    pairs: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True, slots=True)
class DropTables:
    names: tuple[TableName, ...]
    temporary: bool = False


@dataclass(frozen=True, slots=True)
class TruncateTable:
    name: TableName


@dataclass(frozen=True, slots=True)
class IndexStatement:
    """CREATE INDEX / DROP INDEX: only DROP INDEX `PRIMARY` changes what the history keeps."""

    name: TableName
    drops_primary: bool = False


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    name: str
    charset: str | None = None
    collation: str | None = None
    if_not_exists: bool = False
    or_replace: bool = False


@dataclass(frozen=True, slots=True)
class DropDatabase:
    name: str


@dataclass(frozen=True, slots=True)
class AlterDatabase:
    name: str
    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class Other:
    """A statement that changes no table definition (GRANT, views, routines, SET, ...)."""


Statement = (
    CreateTable
    | AlterTable
    | RenameTables
    | DropTables
    | TruncateTable
    | IndexStatement
    | CreateDatabase
    | DropDatabase
    | AlterDatabase
    | Other
)
