"""Applying a DDL statement from the binlog to the schema history's definitions.

``apply_ddl(schemas, sql, default_schema)`` parses the statement (``bridge.schema.ddl_parse``)
and replaces the definitions it changes in ``schemas`` (its dicts are changed in place; the
definitions are immutable and replaced). What it reports:

- ``touched``: every table the statement creates, changes, drops, truncates or renames from or
  to, as written (the default schema filled in); for CREATE/DROP DATABASE the tables dropped;
- ``changed``: whether any definition in ``schemas`` changed;
- ``unknown``: the touched tables the history does not hold a definition of afterwards
  because it never held one (an ALTER of such a table changes nothing; renaming one to X
  removes X's definition; CREATE TABLE ... LIKE one leaves the new table unknown).

A statement that may change a definition but cannot be read or applied raises
``UnreadableDdl`` naming the tables it could still find. A DDL on a table the history does not
hold costs its parse and one dict lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.schema import ddl_statements as st
from bridge.schema.ddl_parse import parse
from bridge.schema.ddl_types import charset_of, column_definition, converted
from bridge.schema.definitions import ColumnDefinition, Schemas, TableDefinition
from bridge.schema.exceptions import UnreadableDdl

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Applied:
    touched: tuple[Name, ...] = ()
    changed: bool = False
    unknown: tuple[Name, ...] = ()


NOTHING = Applied()


def apply_ddl(schemas: Schemas, sql: str, default_schema: str) -> Applied:
    """Apply ``sql``, run with ``default_schema`` as the current database, to ``schemas``."""
    statement = parse(sql, default_schema, schemas.dialect.mariadb)
    applier: Callable[[Schemas, Any, str], Applied] = _APPLIERS[type(statement)]
    return applier(schemas, statement, sql)


def touched_tables(schemas: Schemas, sql: str, default_schema: str) -> tuple[Name, ...]:
    """The tables a statement creates, changes, drops or renames, found by applying it to
    ``schemas`` (a working copy, changed as the statement would change it, so that a later
    statement is read against it: a DROP DATABASE names the tables it held); those an
    unreadable statement named, as far as they could be found."""
    try:
        return apply_ddl(schemas, sql, default_schema).touched
    except UnreadableDdl as exc:
        return exc.tables


def _stored_name(schemas: Schemas, name: Name) -> Name:
    """How information_schema spells a table's names: lowercase under lower_case_table_names=1."""
    return schemas.key(*name) if schemas.dialect.lower_case_table_names == 1 else name


def _database_charset(schemas: Schemas, schema: str) -> str:
    found = schemas.databases.get(schemas.database_key(schema))
    return found or schemas.dialect.server_charset


def _create_table(schemas: Schemas, statement: st.CreateTable, sql: str) -> Applied:
    if statement.temporary:
        return NOTHING  # not in the history: ROW format logs no rows of temporary tables
    name = statement.name
    key = schemas.key(*name)
    if statement.if_not_exists and key in schemas.tables:
        return Applied((name,))
    schema, table = _stored_name(schemas, name)
    if statement.like is not None:
        source = schemas.table(*statement.like)
        if source is None:
            removed = schemas.tables.pop(key, None) is not None
            return Applied((name,), removed, (name,))
        schemas.tables[key] = TableDefinition(
            schema, table, source.columns, source.primary_key, source.charset
        )
        return Applied((name,), True)
    if statement.select:
        raise UnreadableDdl(sql, "CREATE TABLE ... SELECT: the query decides the columns", (name,))
    charset = charset_of(statement.charset, statement.collation) or _database_charset(
        schemas, name[0]
    )
    columns = [column_definition(c, charset, schemas.dialect) for c in statement.columns]
    try:
        primary = _column_names(columns, statement.primary_key)
    except KeyError as exc:
        raise UnreadableDdl(sql, f"no column {exc} for the primary key", (name,)) from exc
    definition = TableDefinition(
        schema, table, tuple(_not_null(columns, primary)), primary, charset
    )
    schemas.tables[key] = definition
    return Applied((name,), True)


def _column_names(columns: list[ColumnDefinition], names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` spelled as the columns are (column names are case-insensitive)."""
    spelled = {c.name.lower(): c.name for c in columns}
    return tuple(spelled[n.lower()] for n in names)


def _not_null(columns: list[ColumnDefinition], primary: tuple[str, ...]) -> list[ColumnDefinition]:
    """Primary key columns are NOT NULL whatever their definition says."""
    keyed = {n.lower() for n in primary}
    return [
        ColumnDefinition(c.name, c.column_type, False, c.charset, c.generated, c.invisible)
        if c.nullable and c.name.lower() in keyed
        else c
        for c in columns
    ]


def _alter_table(schemas: Schemas, statement: st.AlterTable, sql: str) -> Applied:
    name = statement.name
    targets = tuple(a.name for a in statement.actions if isinstance(a, st.RenameTo))
    touched = (name, *targets)
    old = schemas.tables.get(schemas.key(*name))
    if old is None:
        removed = False
        for target in targets:
            removed = schemas.tables.pop(schemas.key(*target), None) is not None or removed
        return Applied(touched, removed, touched)
    try:
        new = _Alteration(schemas, old, statement).result()
    except (KeyError, ValueError) as exc:
        raise UnreadableDdl(sql, f"does not fit {old.full_name}: {exc}", touched) from exc
    key = schemas.key(new.schema, new.name)
    if (new.schema, new.name) != (old.schema, old.name):
        del schemas.tables[schemas.key(*name)]
    schemas.tables[key] = new
    return Applied(touched, new != old)


class _Alteration:
    """An ALTER TABLE's clauses applied in order to a working copy of one definition."""

    def __init__(self, schemas: Schemas, table: TableDefinition, statement: st.AlterTable) -> None:
        self.schemas = schemas
        self.dialect = schemas.dialect
        self.table = table
        self.statement = statement
        self.columns = list(table.columns)
        self.primary = table.primary_key
        self.charset = table.charset or _database_charset(schemas, table.schema)
        self.name: Name = (table.schema, table.name)
        # A new default charset in the same statement applies to the columns it adds or
        # redefines without a charset of their own.
        for action in statement.actions:
            if isinstance(action, st.DefaultCharset | st.ConvertCharset):
                self.charset = self.charset_named(action.charset, action.collation)

    def charset_named(self, charset: str | None, collation: str | None) -> str:
        return charset_of(charset, collation) or _database_charset(self.schemas, self.name[0])

    def result(self) -> TableDefinition:
        for action in self.statement.actions:
            self.apply(action)
        columns = _not_null(self.columns, self.primary)
        return TableDefinition(
            self.name[0], self.name[1], tuple(columns), self.primary, self.charset
        )

    def find(self, name: str) -> int:
        wanted = name.lower()
        for index, column in enumerate(self.columns):
            if column.name.lower() == wanted:
                return index
        return -1

    def place(self, column: ColumnDefinition, position: st.Position) -> None:
        if position is None:
            self.columns.append(column)
        elif position == "":
            self.columns.insert(0, column)
        else:
            after = self.find(position)
            if after < 0:
                raise KeyError(f"no column {position!r} to put {column.name!r} after")
            self.columns.insert(after + 1, column)

    def define(self, spec: st.ColumnSpec) -> ColumnDefinition:
        return column_definition(spec, self.charset, self.dialect)

    def apply(self, action: st.AlterAction) -> None:
        if isinstance(action, st.AddColumns):
            position = action.position
            for spec in action.columns:
                if self.find(spec.name) >= 0:
                    if action.if_not_exists:
                        continue
                    raise KeyError(f"column {spec.name!r} exists already")
                self.place(self.define(spec), position)
                if position is not None:
                    position = spec.name
        elif isinstance(action, st.DropColumn):
            index = self.find(action.name)
            if index < 0:
                if action.if_exists:
                    return
                raise KeyError(f"no column {action.name!r} to drop")
            dropped = self.columns.pop(index).name.lower()
            self.primary = tuple(n for n in self.primary if n.lower() != dropped)
        elif isinstance(action, st.ChangeColumn):
            index = self.find(action.old)
            if index < 0:
                if action.if_exists:
                    return
                raise KeyError(f"no column {action.old!r} to change")
            column = self.define(action.column)
            if action.position is None:
                self.columns[index] = column
            else:
                del self.columns[index]
                self.place(column, action.position)
            self.rename_key_column(action.old, column.name)
        elif isinstance(action, st.RenameColumn):
            index = self.find(action.old)
            if index < 0:
                raise KeyError(f"no column {action.old!r} to rename")
            old = self.columns[index]
            self.columns[index] = ColumnDefinition(
                action.new, old.column_type, old.nullable, old.charset, old.generated, old.invisible
            )
            self.rename_key_column(action.old, action.new)
        elif isinstance(action, st.SetVisibility):
            index = self.find(action.name)
            if index < 0:
                raise KeyError(f"no column {action.name!r}")
            old = self.columns[index]
            self.columns[index] = ColumnDefinition(
                old.name,
                old.column_type,
                old.nullable,
                old.charset,
                old.generated,
                action.invisible,
            )
        elif isinstance(action, st.AddPrimaryKey):
            self.primary = _column_names(self.columns, action.columns)
        elif isinstance(action, st.DropPrimaryKey):
            self.primary = ()
        elif isinstance(action, st.ConvertCharset):
            charset = self.charset_named(action.charset, action.collation)
            self.columns = [converted(c, charset, self.dialect) for c in self.columns]
        elif isinstance(action, st.RenameTo):
            self.name = _stored_name(self.schemas, action.name)

    def rename_key_column(self, old: str, new: str) -> None:
        self.primary = tuple(new if n.lower() == old.lower() else n for n in self.primary)


def _rename_tables(schemas: Schemas, statement: st.RenameTables, sql: str) -> Applied:
    touched: list[Name] = []
    unknown: list[Name] = []
    changed = False
    for old, new in statement.pairs:
        touched += (old, new)
        definition = schemas.tables.pop(schemas.key(*old), None)
        target = schemas.key(*new)
        if definition is None:
            changed = schemas.tables.pop(target, None) is not None or changed
            unknown += (old, new)
            continue
        schema, table = _stored_name(schemas, new)
        schemas.tables[target] = TableDefinition(
            schema, table, definition.columns, definition.primary_key, definition.charset
        )
        changed = True
    return Applied(tuple(touched), changed, tuple(unknown))


def _drop_tables(schemas: Schemas, statement: st.DropTables, sql: str) -> Applied:
    if statement.temporary:
        return NOTHING
    unknown = tuple(n for n in statement.names if schemas.tables.pop(schemas.key(*n), None) is None)
    return Applied(statement.names, len(unknown) < len(statement.names), unknown)


def _truncate_table(schemas: Schemas, statement: st.TruncateTable, sql: str) -> Applied:
    known = schemas.key(*statement.name) in schemas.tables
    return Applied((statement.name,), False, () if known else (statement.name,))


def _index_statement(schemas: Schemas, statement: st.IndexStatement, sql: str) -> Applied:
    name = statement.name
    key = schemas.key(*name)
    table = schemas.tables.get(key)
    if table is None:
        return Applied((name,), False, (name,))
    if statement.drops_primary and table.primary_key:
        schemas.tables[key] = TableDefinition(
            table.schema, table.name, table.columns, (), table.charset
        )
        return Applied((name,), True)
    return Applied((name,))


def _drop_database_tables(schemas: Schemas, schema: str) -> tuple[Name, ...]:
    folded = schemas.database_key(schema)
    dropped = [key for key in schemas.tables if schemas.database_key(key[0]) == folded]
    names = tuple((schemas.tables[k].schema, schemas.tables[k].name) for k in dropped)
    for key in dropped:
        del schemas.tables[key]
    return names


def _create_database(schemas: Schemas, statement: st.CreateDatabase, sql: str) -> Applied:
    key = schemas.database_key(statement.name)
    if statement.if_not_exists and key in schemas.databases:
        return NOTHING
    dropped = _drop_database_tables(schemas, statement.name) if statement.or_replace else ()
    charset = charset_of(statement.charset, statement.collation)
    schemas.databases[key] = charset or schemas.dialect.server_charset
    return Applied(dropped, bool(dropped))


def _drop_database(schemas: Schemas, statement: st.DropDatabase, sql: str) -> Applied:
    schemas.databases.pop(schemas.database_key(statement.name), None)
    dropped = _drop_database_tables(schemas, statement.name)
    return Applied(dropped, bool(dropped))


def _alter_database(schemas: Schemas, statement: st.AlterDatabase, sql: str) -> Applied:
    charset = charset_of(statement.charset, statement.collation)
    if charset is not None:
        schemas.databases[schemas.database_key(statement.name)] = charset
    return NOTHING


def _other(schemas: Schemas, statement: st.Other, sql: str) -> Applied:
    return NOTHING


_APPLIERS: dict[type, Callable[[Schemas, Any, str], Applied]] = {
    st.CreateTable: _create_table,
    st.AlterTable: _alter_table,
    st.RenameTables: _rename_tables,
    st.DropTables: _drop_tables,
    st.TruncateTable: _truncate_table,
    st.IndexStatement: _index_statement,
    st.CreateDatabase: _create_database,
    st.DropDatabase: _drop_database,
    st.AlterDatabase: _alter_database,
    st.Other: _other,
}
