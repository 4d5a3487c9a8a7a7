"""The grammar of the DDL statements that change table definitions, MySQL's and MariaDB's.

``parse`` reads one statement into a ``bridge.schema.ddl_statements`` value. What cannot change
a column definition (GRANT, views, routines, SET, table options, index and partition clauses)
is read only as far as needed to skip it; what might change one but is not understood raises
``UnreadableDdl`` with the table names read so far, never a silent skip. Column types are read
as written (``TypeSpec``): spelling them as the server does is ``bridge.schema.ddl_types``'s job.
"""

from __future__ import annotations

from bridge.schema import ddl_statements as st
from bridge.schema.ddl_tokens import Cursor, Token, UnterminatedStatement, tokenize
from bridge.schema.exceptions import UnreadableDdl

BIN_COLLATION = "_bin"  # the BINARY attribute: the charset's _bin collation, the charset kept

# One word types: the canonical name each spelling stands for.
_TYPES = {
    "INT": "int", "INTEGER": "int", "INT4": "int", "TINYINT": "tinyint", "INT1": "tinyint",
    "SMALLINT": "smallint", "INT2": "smallint", "MEDIUMINT": "mediumint",
    "MIDDLEINT": "mediumint", "INT3": "mediumint", "BIGINT": "bigint", "INT8": "bigint",
    "DECIMAL": "decimal", "DEC": "decimal", "NUMERIC": "decimal", "FIXED": "decimal",
    "FLOAT": "float", "FLOAT4": "float", "DOUBLE": "double", "FLOAT8": "double",
    "REAL": "double", "BIT": "bit", "BOOL": "bool", "BOOLEAN": "bool", "SERIAL": "serial",
    "DATE": "date", "TIME": "time", "DATETIME": "datetime", "TIMESTAMP": "timestamp",
    "YEAR": "year", "CHAR": "char", "CHARACTER": "char", "VARCHAR": "varchar",
    "VARCHARACTER": "varchar", "NCHAR": "nchar", "NVARCHAR": "nvarchar", "BINARY": "binary",
    "VARBINARY": "varbinary", "TINYTEXT": "tinytext", "TEXT": "text",
    "MEDIUMTEXT": "mediumtext", "LONGTEXT": "longtext", "TINYBLOB": "tinyblob", "BLOB": "blob",
    "MEDIUMBLOB": "mediumblob", "LONGBLOB": "longblob", "LONG": "mediumtext", "ENUM": "enum",
    "SET": "set", "JSON": "json", "GEOMETRY": "geometry", "POINT": "point",
    "LINESTRING": "linestring", "POLYGON": "polygon", "MULTIPOINT": "multipoint",
    "MULTILINESTRING": "multilinestring", "MULTIPOLYGON": "multipolygon",
    "GEOMETRYCOLLECTION": "geometrycollection", "GEOMCOLLECTION": "geomcollection",
    "UUID": "uuid", "INET4": "inet4", "INET6": "inet6", "VECTOR": "vector",
}  # fmt: skip
# Two word types (the second word decides): CHAR VARYING, LONG VARBINARY, ...
_TYPE_PAIRS = {
    ("DOUBLE", "PRECISION"): "double", ("CHAR", "VARYING"): "varchar",
    ("CHARACTER", "VARYING"): "varchar", ("NCHAR", "VARCHAR"): "nvarchar",
    ("NCHAR", "VARYING"): "nvarchar", ("NATIONAL", "VARCHAR"): "nvarchar",
    ("NATIONAL", "CHAR"): "nchar", ("NATIONAL", "CHARACTER"): "nchar",
    ("LONG", "VARCHAR"): "mediumtext", ("LONG", "VARBINARY"): "mediumblob",
    ("LONG", "BINARY"): "mediumblob",
}  # fmt: skip
_CHARSET_WORDS = (("CHARACTER", "SET"), ("CHARSET",), ("CHAR", "SET"))
_KEY_WORDS = frozenset(
    {"INDEX", "KEY", "FULLTEXT", "SPATIAL", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"}
)
# ALTER TABLE clauses that change no column: table options and how the server runs it.
_ALTER_OPTIONS = frozenset(
    {
        "ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHECKSUM", "TABLE_CHECKSUM", "COMMENT",
        "COMPRESSION", "CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION",
        "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD",
        "ROW_FORMAT", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES",
        "TABLESPACE", "UNION", "ALGORITHM", "LOCK", "FORCE", "ORDER", "ENABLE", "DISABLE",
        "DISCARD", "IMPORT", "WITH", "WITHOUT", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE",
        "SECONDARY_ENGINE_ATTRIBUTE", "SECONDARY_LOAD", "SECONDARY_UNLOAD", "PAGE_CHECKSUM",
        "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "TRANSACTIONAL", "ENCRYPTED",
        "ENCRYPTION_KEY_ID", "IETF_QUOTES", "SEQUENCE", "AUTOEXTEND_SIZE", "START", "STORAGE",
        "NOWAIT", "WAIT",
    }
)  # fmt: skip
# ALTER TABLE clauses on partitions: they stand alone (no other clause beside them).
_PARTITION_CLAUSES = frozenset(
    {
        "PARTITION", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE",
        "REBUILD", "REPAIR", "REMOVE", "UPGRADE",
    }
)  # fmt: skip
_DATABASE_OPTIONS = frozenset({"DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE"})
_CTAS_WORDS = frozenset({"SELECT", "IGNORE", "REPLACE", "AS", "TABLE", "VALUES"})


def parse(sql: str, default_schema: str, mariadb: bool = False) -> st.Statement:
    """The statement ``sql`` run in ``default_schema``; UnreadableDdl when it may change a
    table definition but cannot be read."""
    try:
        tokens = tokenize(sql, mariadb)
    except UnterminatedStatement as exc:
        raise UnreadableDdl(sql, "an unterminated quote or comment") from exc
    parser = _Parser(tokens, default_schema)
    try:
        return parser.statement()
    except (SyntaxError, IndexError) as exc:
        raise UnreadableDdl(sql, str(exc) or "unexpected end", tuple(parser.found)) from exc


class _Parser:
    def __init__(self, tokens: list[Token], default_schema: str) -> None:
        self.c = Cursor(tokens)
        self.default_schema = default_schema
        self.found: list[st.TableName] = []  # every table name read, for UnreadableDdl

    # --- statements -----------------------------------------------------------------------

    def statement(self) -> st.Statement:
        c = self.c
        verb = c.accept_any("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")
        if verb == "CREATE":
            return self.create()
        if verb == "ALTER":
            return self.alter()
        if verb == "DROP":
            return self.drop()
        if verb == "RENAME":
            return self.rename()
        if verb == "TRUNCATE":
            c.accept("TABLE")
            name = self.table_name()
            return st.TruncateTable(name)
        return st.Other()

    def create(self) -> st.Statement:
        c = self.c
        or_replace = c.accept("OR", "REPLACE")
        temporary = c.accept("TEMPORARY")
        kind = c.accept_any("TABLE", "DATABASE", "SCHEMA", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL")
        if kind == "TABLE":
            return self.create_table(or_replace, temporary)
        if kind in ("DATABASE", "SCHEMA"):
            if_not_exists = c.accept("IF", "NOT", "EXISTS")
            name = c.identifier()
            charset, collation = self.charset_options()
            return st.CreateDatabase(name, charset, collation, if_not_exists, or_replace)
        if kind:
            if kind != "INDEX":
                c.expect("INDEX")
            c.accept("IF", "NOT", "EXISTS")
            c.identifier()
            while not c.accept("ON"):
                c.next()
            return st.IndexStatement(self.table_name())
        return st.Other()

    def create_table(self, or_replace: bool, temporary: bool) -> st.CreateTable:
        c = self.c
        if_not_exists = c.accept("IF", "NOT", "EXISTS")
        name = self.table_name()
        if c.accept("LIKE") or (c.peek() == "(" and c.peek(1) == "LIKE" and c.accept("(", "LIKE")):
            like = self.table_name()
            c.accept(")")
            return st.CreateTable(name, like=like, if_not_exists=if_not_exists,
                                  or_replace=or_replace, temporary=temporary)  # fmt: skip
        columns: list[st.ColumnSpec] = []
        primary: tuple[str, ...] = ()
        select = False
        if c.peek() == "(" and c.peek(1) != "SELECT":
            c.expect("(")
            primary = self.table_elements(columns)
        charset, collation, select = self.table_options()
        return st.CreateTable(
            name, tuple(columns), primary, charset, collation, None, if_not_exists, or_replace,
            temporary, select,
        )  # fmt: skip

    def table_elements(self, columns: list[st.ColumnSpec]) -> tuple[str, ...]:
        """The elements of ``( ... )`` up to and including its ``)``: columns go to
        ``columns``; the primary key's columns are returned."""
        c = self.c
        primary: tuple[str, ...] = ()
        while True:
            found = self.key_element()
            if found is not None:
                primary = found or primary
            else:
                column = self.column_spec(c.identifier())
                columns.append(column)
                if column.primary:
                    primary = (column.name,)
            if c.accept(")"):
                return primary
            c.expect(",")

    def key_element(self) -> tuple[str, ...] | None:
        """A key, constraint or period element: the primary key's columns for a PRIMARY
        KEY, () for another, None when the element is a column."""
        c = self.c
        word = c.peek()
        if word == "PERIOD" and c.peek(1) == "FOR":
            self.skip_element()
            return ()
        if word == "CONSTRAINT":
            c.next()
            if c.peek() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                c.identifier()
            word = c.peek()
        if word == "PRIMARY":
            c.expect("PRIMARY", "KEY")
            while c.peek() != "(":
                c.next()
            columns = self.key_parts()
            self.skip_element()
            return columns
        if word in _KEY_WORDS:
            self.skip_element()
            return ()
        return None

    def key_parts(self) -> tuple[str, ...]:
        c = self.c
        c.expect("(")
        names: list[str] = []
        while True:
            if c.peek() == "(":
                c.skip_group()
            else:
                names.append(c.identifier())
                if c.peek() == "(":
                    c.skip_group()
            c.accept_any("ASC", "DESC")
            if c.accept(")"):
                return tuple(names)
            c.expect(",")

    def skip_element(self) -> None:
        """Skip to the ``,`` or ``)`` that ends this element (not consumed)."""
        c = self.c
        while c.token() is not None and c.peek() not in (",", ")"):
            if c.peek() == "(":
                c.skip_group()
            else:
                c.next()

    def table_options(self) -> tuple[str | None, str | None, bool]:
        """Table options up to the end: (charset, collation, whether a SELECT follows)."""
        c = self.c
        charset = collation = None
        while not c.done:
            c.accept("DEFAULT")
            if self.charset_words():
                charset = self.option_value()
            elif c.accept("COLLATE"):
                collation = self.option_value()
            elif c.peek() == "PARTITION" and c.peek(1) == "BY":
                c.skip_to_end()
            elif c.peek() == "WITH" and c.peek(1) == "SYSTEM":
                c.next()
            elif c.peek() in _CTAS_WORDS or c.peek() == "WITH":
                return charset, collation, True
            elif c.peek() == "(":
                if c.peek(1) in ("SELECT", "WITH", "TABLE", "VALUES"):
                    return charset, collation, True
                c.skip_group()
            else:
                c.next()
        return charset, collation, False

    def charset_options(self) -> tuple[str | None, str | None]:
        """[DEFAULT] CHARACTER SET / COLLATE options of a database, other options skipped."""
        c = self.c
        charset = collation = None
        while not c.done:
            c.accept("DEFAULT")
            if self.charset_words():
                charset = self.option_value()
            elif c.accept("COLLATE"):
                collation = self.option_value()
            else:
                c.next()
        return charset, collation

    def charset_words(self) -> bool:
        return any(self.c.accept(*words) for words in _CHARSET_WORDS)

    def option_value(self) -> str:
        self.c.accept("=")
        return self.c.identifier().lower()

    def alter(self) -> st.Statement:
        c = self.c
        while c.accept_any("ONLINE", "OFFLINE", "IGNORE"):
            pass
        kind = c.accept_any("TABLE", "DATABASE", "SCHEMA")
        if kind in ("DATABASE", "SCHEMA"):
            database = self.default_schema
            token = c.token()
            if token is not None and token.upper not in _DATABASE_OPTIONS:
                database = c.identifier()
            charset, collation = self.charset_options()
            return st.AlterDatabase(database, charset, collation)
        if not kind:
            return st.Other()
        c.accept("IF", "EXISTS")
        name = self.table_name()
        if c.accept("WAIT"):
            c.next()
        c.accept("NOWAIT")
        actions: list[st.AlterAction] = []
        while not c.done:
            self.alter_clause(actions)
            if not c.done:
                c.expect(",")
        return st.AlterTable(name, tuple(actions))

    def partition_clause(self, word: str) -> bool:
        """Whether the clause works on partitions (they stand alone: read to the end)."""
        following = self.c.peek(1)
        if word in ("ADD", "DROP", "TRUNCATE", "CHECK"):
            return following == "PARTITION"
        return word in _PARTITION_CLAUSES

    def alter_clause(self, actions: list[st.AlterAction]) -> None:
        c = self.c
        word = c.peek()
        if self.partition_clause(word):
            c.skip_to_end()
        elif c.accept("ADD"):
            self.alter_add(actions)
        elif c.accept("DROP"):
            self.alter_drop(actions)
        elif c.accept_any("MODIFY", "CHANGE"):
            c.accept("COLUMN")
            if_exists = c.accept("IF", "EXISTS")
            old = c.identifier()
            new = old if word == "MODIFY" else c.identifier()
            column = self.column_spec(new)
            actions.append(st.ChangeColumn(old, column, self.position(), if_exists))
        elif c.accept("RENAME"):
            self.alter_rename(actions)
        elif c.accept("ALTER"):
            self.alter_alter(actions)
        elif c.accept("CONVERT", "TO"):
            if not self.charset_words():
                raise SyntaxError(f"expected CHARACTER SET at {c.where()}")
            charset = self.option_value()
            collation = self.option_value() if c.accept("COLLATE") else None
            actions.append(st.ConvertCharset(None if charset == "default" else charset, collation))
        elif word in ("DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE"):
            c.accept("DEFAULT")
            default: str | None = None
            default_collation: str | None = None
            if self.charset_words():
                default = self.option_value()
            if c.accept("COLLATE"):
                default_collation = self.option_value()
            if default is None and default_collation is None:
                raise SyntaxError(f"expected CHARACTER SET or COLLATE at {c.where()}")
            actions.append(st.DefaultCharset(default, default_collation))
        elif c.accept("ORDER", "BY"):
            self.key_names_to_end()
        elif word in _ALTER_OPTIONS:
            self.skip_element()
        else:
            raise SyntaxError(f"an ALTER TABLE clause not understood at {c.where()}")

    def key_names_to_end(self) -> None:
        """ORDER BY's column list: names with ASC/DESC, separated by commas."""
        c = self.c
        while True:
            c.identifier()
            while c.accept("."):
                c.identifier()
            c.accept_any("ASC", "DESC")
            if not (c.peek() == "," and c.peek(1) not in ("ADD", "DROP", "MODIFY", "CHANGE")):
                return
            c.next()

    def alter_add(self, actions: list[st.AlterAction]) -> None:
        c = self.c
        column_word = c.accept("COLUMN")
        if not column_word and c.peek() in (*_KEY_WORDS, "PRIMARY", "PERIOD", "SYSTEM"):
            if c.peek() == "CONSTRAINT" or c.peek() == "PRIMARY":
                c.accept("CONSTRAINT") and c.accept("IF", "NOT", "EXISTS")
                if c.peek() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                    c.identifier()
                if c.peek() == "PRIMARY":
                    c.expect("PRIMARY", "KEY")
                    while c.peek() != "(":
                        c.next()
                    actions.append(st.AddPrimaryKey(self.key_parts()))
            self.skip_element()
            return
        if_not_exists = c.accept("IF", "NOT", "EXISTS")
        if c.accept("("):
            columns: list[st.ColumnSpec] = []
            primary = self.table_elements(columns)
            actions.append(st.AddColumns(tuple(columns), None, if_not_exists))
            if primary:
                actions.append(st.AddPrimaryKey(primary))
            return
        column = self.column_spec(c.identifier())
        actions.append(st.AddColumns((column,), self.position(), if_not_exists))
        if column.primary:
            actions.append(st.AddPrimaryKey((column.name,)))

    def alter_drop(self, actions: list[st.AlterAction]) -> None:
        c = self.c
        if c.accept("PRIMARY", "KEY"):
            actions.append(st.DropPrimaryKey())
            return
        kind = c.accept_any("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "SYSTEM", "PERIOD")
        if kind:
            c.accept("KEY")
            c.accept("IF", "EXISTS")
            if kind in ("INDEX", "KEY", "CONSTRAINT") and c.peek(0) != "," and c.token():
                name = c.identifier()
                if name.upper() == "PRIMARY":
                    actions.append(st.DropPrimaryKey())
            self.skip_element()
            return
        c.accept("COLUMN")
        if_exists = c.accept("IF", "EXISTS")
        actions.append(st.DropColumn(c.identifier(), if_exists))
        c.accept_any("RESTRICT", "CASCADE")

    def alter_rename(self, actions: list[st.AlterAction]) -> None:
        c = self.c
        if c.accept("COLUMN"):
            old = c.identifier()
            c.expect("TO")
            actions.append(st.RenameColumn(old, c.identifier()))
        elif c.accept_any("INDEX", "KEY"):
            self.skip_element()
        else:
            c.accept_any("TO", "AS")
            actions.append(st.RenameTo(self.table_name()))

    def alter_alter(self, actions: list[st.AlterAction]) -> None:
        c = self.c
        if c.accept_any("INDEX", "KEY", "CHECK", "CONSTRAINT"):
            self.skip_element()
            return
        c.accept("COLUMN")
        c.accept("IF", "EXISTS")
        name = c.identifier()
        if c.accept("SET", "VISIBLE"):
            actions.append(st.SetVisibility(name, False))
        elif c.accept("SET", "INVISIBLE"):
            actions.append(st.SetVisibility(name, True))
        elif c.accept("SET", "DEFAULT"):
            self.skip_value()
        elif not c.accept("DROP", "DEFAULT"):
            raise SyntaxError(f"an ALTER COLUMN clause not understood at {c.where()}")

    def position(self) -> st.Position:
        c = self.c
        if c.accept("FIRST"):
            return ""
        if c.accept("AFTER"):
            return c.identifier()
        return None

    def drop(self) -> st.Statement:
        c = self.c
        temporary = c.accept("TEMPORARY")
        kind = c.accept_any("TABLE", "TABLES", "DATABASE", "SCHEMA", "INDEX")
        if kind in ("DATABASE", "SCHEMA"):
            c.accept("IF", "EXISTS")
            return st.DropDatabase(c.identifier())
        if kind == "INDEX":
            c.accept("IF", "EXISTS")
            index = c.identifier()
            c.expect("ON")
            return st.IndexStatement(self.table_name(), index.upper() == "PRIMARY")
        if not kind:
            return st.Other()
        c.accept("IF", "EXISTS")
        names = [self.table_name()]
        while c.accept(","):
            names.append(self.table_name())
        return st.DropTables(tuple(names), temporary)

    def rename(self) -> st.Statement:
        c = self.c
        if not c.accept_any("TABLE", "TABLES"):
            return st.Other()
        c.accept("IF", "EXISTS")
        pairs = []
        while True:
            old = self.table_name()
            if c.accept("WAIT"):
                c.next()
            c.accept("NOWAIT")
            c.expect("TO")
            pairs.append((old, self.table_name()))
            if not c.accept(","):
                return st.RenameTables(tuple(pairs))

    # --- names, columns and types ---------------------------------------------------------

    def table_name(self) -> st.TableName:
        first = self.c.identifier()
        name = (first, self.c.identifier()) if self.c.accept(".") else (self.default_schema, first)
        self.found.append(name)
        return name

    def column_spec(self, name: str) -> st.ColumnSpec:
        type_spec = self.type_spec()
        return self.column_attributes(name, type_spec)

    def type_spec(self) -> st.TypeSpec:
        c = self.c
        first, second = c.peek(), c.peek(1)
        base = _TYPE_PAIRS.get((first, second))
        if base is not None:
            c.index += 2
            if base in ("nchar", "varchar") and c.accept("VARYING"):
                base = "nvarchar"
        else:
            found = _TYPES.get(first)
            if found is None or c.token() is None or c.token().kind != "word":  # type: ignore[union-attr]
                raise SyntaxError(f"expected a column type at {c.where()}")
            base = found
            c.index += 1
        args: tuple[str, ...] = ()
        if c.accept("("):
            values: list[str] = []
            while not c.accept(")"):
                token = c.next()
                if token.upper != ",":
                    values.append(token.text)
            args = tuple(values)
        unsigned = zerofill = False
        charset = collation = None
        if base in ("nchar", "nvarchar"):
            charset = "utf8mb3"
        while True:
            word = c.accept_any(
                "UNSIGNED", "SIGNED", "ZEROFILL", "BINARY", "ASCII", "UNICODE", "BYTE"
            )
            if word:
                unsigned = unsigned or word in ("UNSIGNED", "ZEROFILL")
                zerofill = zerofill or word == "ZEROFILL"
                if word == "ASCII":
                    charset = "latin1"
                elif word == "UNICODE":
                    charset = "ucs2"
                elif word == "BYTE":
                    charset = "binary"
                elif word == "BINARY" and collation is None:
                    collation = BIN_COLLATION
                continue
            if self.charset_words():
                charset = self.option_value()
                continue
            if c.accept("COLLATE"):
                collation = self.option_value()
                continue
            break
        return st.TypeSpec(base, args, unsigned, zerofill, charset, collation)

    def column_attributes(self, name: str, type_spec: st.TypeSpec) -> st.ColumnSpec:
        c = self.c
        null: bool | None = None
        primary = generated = invisible = auto_increment = False
        charset, collation = type_spec.charset, type_spec.collation
        base_serial = type_spec.base == "serial"
        while c.peek() not in (",", ")", "", "FIRST", "AFTER", ";"):
            if c.accept("NOT", "NULL"):
                null = False
            elif c.accept("NULL"):
                null = True
            elif c.accept("DEFAULT") or c.accept("ON", "UPDATE"):
                self.skip_value()
            elif c.accept("PRIMARY", "KEY") or c.accept("KEY"):
                primary = True
            elif c.accept("UNIQUE"):
                c.accept("KEY")
            elif c.accept("GENERATED", "ALWAYS", "AS") or c.accept("AS"):
                if c.accept("ROW"):
                    c.accept_any("START", "END")
                else:
                    generated = True
                    c.skip_group()
            elif c.accept_any("VIRTUAL", "STORED", "PERSISTENT"):
                generated = True
            elif c.accept("INVISIBLE"):
                invisible = True
            elif c.accept("VISIBLE"):
                invisible = False
            elif self.charset_words():
                charset = self.option_value()
            elif c.accept("COLLATE"):
                collation = self.option_value()
            elif c.accept("CONSTRAINT"):
                if c.peek() != "CHECK":
                    c.identifier()
            elif c.accept("CHECK"):
                c.skip_group()
                c.accept("NOT")
                c.accept("ENFORCED")
            elif c.accept("AUTO_INCREMENT"):
                auto_increment = True
            elif c.accept("REFERENCES"):
                self.references()
            elif c.accept_any(
                "COMMENT", "SRID", "COLUMN_FORMAT", "STORAGE",
                "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "COMPRESSED", "REF_SYSTEM_ID",
                "WITH", "WITHOUT", "NOT",
            ):  # fmt: skip
                self.skip_option_value()
            else:
                raise SyntaxError(f"a column attribute not understood at {c.where()}")
        if charset != type_spec.charset or collation != type_spec.collation:
            type_spec = st.TypeSpec(
                type_spec.base, type_spec.args, type_spec.unsigned, type_spec.zerofill,
                charset, collation,
            )  # fmt: skip
        return st.ColumnSpec(
            name, type_spec, null, primary, generated, invisible, auto_increment or base_serial
        )

    def skip_option_value(self) -> None:
        """What follows an attribute word: ``[=] value`` or, for WITH/WITHOUT/NOT, one
        word (SYSTEM VERSIONING, SECONDARY)."""
        c = self.c
        token = c.token()
        if token is None or token.upper in (",", ")"):
            return
        if c.accept("="):
            c.next()
        elif token.kind in ("string", "number") or token.upper in (
            "FIXED", "DYNAMIC", "DEFAULT", "DISK", "MEMORY", "SYSTEM", "SECONDARY", "ZLIB",
        ):  # fmt: skip
            c.next()
            c.accept("VERSIONING")

    def references(self) -> None:
        c = self.c
        self.table_name()
        self.found.pop()  # a foreign key's parent is not touched
        if c.peek() == "(":
            c.skip_group()
        while True:
            if c.accept("MATCH"):
                c.next()
            elif c.accept("ON"):
                c.accept_any("DELETE", "UPDATE")
                if not (c.accept_any("RESTRICT", "CASCADE") or c.accept("NO", "ACTION")):
                    c.expect("SET")
                    c.accept_any("NULL", "DEFAULT")
            else:
                return

    def skip_value(self) -> None:
        """A DEFAULT or ON UPDATE value: a literal, a name, a call or a parenthesized
        expression, with unary signs and binary operators between them."""
        c = self.c
        while True:
            while c.accept_any("+", "-", "~", "!"):
                pass
            token = c.next()
            if token.upper == "(":
                c.index -= 1
                c.skip_group()
            elif token.kind == "word":
                following = c.token()
                if following is not None and following.kind == "string":
                    c.next()  # _utf8mb4'x', x'0F', b'1', DATE '2020-01-01'
                elif c.peek() == "(":
                    c.skip_group()
                elif token.upper == "NEXT" and c.accept("VALUE", "FOR"):
                    self.table_name()
                    self.found.pop()
            while token.kind == "string" and (following := c.token()) is not None:
                if following.kind != "string":
                    break
                c.next()
            if c.peek() in ("+", "-", "*", "/", "%", "||", "DIV", "MOD", "&", "|", "^"):
                c.next()
                continue
            return
