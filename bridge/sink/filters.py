"""canal's table filter (``filter.regex`` / ``filter.black.regex``) and field filters.

Table patterns are comma-separated regexes over ``schema.table``, each matched against the
whole name (canal anchors every item as ``^...$``), case-insensitively. Patterns are Python
regexes: a ``.`` between schema and table is written ``\\.`` in the regex itself (canal's
``.properties`` files double the backslash because of Java's escaping; the config loader,
not this module, deals with that). Filters are built once and cache their verdict per name,
because the sink asks for every entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

from bridge.entry import Column, Entry, EntryType, RowData, row_images
from bridge.sink.exceptions import InvalidFilter

ColumnPredicate = Callable[[str], bool]


def _compile(patterns: str) -> re.Pattern[str] | None:
    """One case-insensitive alternation of the fully anchored items; None when empty."""
    items = [item.strip() for item in patterns.split(",") if item.strip()]
    if not items:
        return None
    for item in items:
        try:
            re.compile(item)
        except re.error as exc:
            raise InvalidFilter(item, f"not a valid regex ({exc})") from exc
    joined = "|".join(f"(?:{item})" for item in items)
    try:
        return re.compile(joined, re.IGNORECASE)
    except re.error as exc:  # e.g. inline global flags inside one item
        raise InvalidFilter(patterns, f"items cannot be combined ({exc})") from exc


class TableFilter:
    """Accepts ``schema.table`` if the white list matches (or is empty) and the black doesn't."""

    def __init__(self, regex: str = "", black_regex: str = "", *, cache_size: int = 4096) -> None:
        self.regex = regex
        self.black_regex = black_regex
        self._white = _compile(regex)
        self._black = _compile(black_regex)
        # Whether ``schema.table`` passes, cached by name: the sink asks for every rows event
        # (a call into the cache, not a method calling it: half the cost per event).
        self.accepts: Callable[[str, str], bool] = lru_cache(maxsize=cache_size)(self._evaluate)

    def accepts_name(self, name: str) -> bool:
        """``name`` is ``schema.table``; split at the first dot, as MySQL names hold none."""
        schema, _, table = name.partition(".")
        return self.accepts(schema, table)

    def _evaluate(self, schema: str, table: str) -> bool:
        name = f"{schema}.{table}"
        if self._white is not None and self._white.fullmatch(name) is None:
            return False
        return self._black is None or self._black.fullmatch(name) is None

    def __repr__(self) -> str:
        return f"TableFilter(regex={self.regex!r}, black_regex={self.black_regex!r})"

    def __reduce__(self) -> tuple[type[TableFilter], tuple[str, str]]:
        """Pickled as its patterns (the binlog reader's process gets one: its schema history
        follows only the tables the destination selects)."""
        return TableFilter, (self.regex, self.black_regex)


# canal's isWildCard characters: a table name holding none of them is a plain name.
_REGEX_CHARS = frozenset("*?+|(){}[]\\$^")


class _TableName:
    """The table part of a field rule: a plain name (canal's exact, upper-cased lookup) or,
    as an extension, an anchored case-insensitive regex when it holds regex characters."""

    def __init__(self, text: str, item: str) -> None:
        self.text = text
        self._regex: re.Pattern[str] | None = None
        if any(char in _REGEX_CHARS for char in text):
            try:
                self._regex = re.compile(text, re.IGNORECASE)
            except re.error as exc:
                raise InvalidFilter(item, f"not a valid regex ({exc})") from exc
        else:
            schema, dot, table = text.partition(".")
            if not (schema and dot and table) or ":" in text:
                raise InvalidFilter(item, "expected schema.table:column1/column2")

    def matches(self, name: str) -> bool:
        if self._regex is None:
            return self.text.upper() == name.upper()
        return self._regex.fullmatch(name) is not None


def _parse_field_rules(spec: str) -> list[tuple[_TableName, frozenset[str]]]:
    """``db.t:c1/c2,db.t2:c3`` -> [(db.t, {C1, C2}), ...]; columns compare upper-cased."""
    rules: list[tuple[_TableName, frozenset[str]]] = []
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, columns = item.rpartition(":")
        if not sep or not name.strip():
            raise InvalidFilter(item, "expected schema.table:column1/column2")
        names = frozenset(c.strip().upper() for c in columns.split("/") if c.strip())
        if not names:
            raise InvalidFilter(item, "no column listed after ':'")
        rules.append((_TableName(name.strip(), item), names))
    return rules


def _columns(rules: list[tuple[_TableName, frozenset[str]]], name: str) -> frozenset[str]:
    """Union of the columns of every rule naming the table."""
    return frozenset().union(*(columns for table, columns in rules if table.matches(name)))


class FieldFilter:
    """canal's ``filter.field`` (keep only the listed columns) and ``filter.black.field``.

    Table names are exact and case-insensitive as in canal (a name with regex characters is
    taken as an anchored regex instead). As in canal, a table with a white rule keeps exactly
    the listed columns, key columns only if listed, and its black rule is then ignored; a table
    with only a black rule loses the listed columns.
    """

    def __init__(self, field: str = "", black_field: str = "", *, cache_size: int = 4096) -> None:
        self.field = field
        self.black_field = black_field
        self._white = _parse_field_rules(field)
        self._black = _parse_field_rules(black_field)
        # A predicate over a table's column names, or None when every column is kept; cached
        # by name, and called as the cache itself (as ``TableFilter.accepts``).
        self.columns_for: Callable[[str, str], ColumnPredicate | None] = lru_cache(
            maxsize=cache_size
        )(self._evaluate)

    def __bool__(self) -> bool:
        return bool(self._white or self._black)

    def _evaluate(self, schema: str, table: str) -> ColumnPredicate | None:
        name = f"{schema}.{table}"
        white = _columns(self._white, name)
        if white:
            return lambda column: column.upper() in white
        black = _columns(self._black, name)
        if black:
            return lambda column: column.upper() not in black
        return None

    def apply(self, entry: Entry) -> Entry:
        """A copy of a DML entry whose row images hold only the allowed columns."""
        change = entry.row_change
        if entry.entry_type is not EntryType.ROWDATA or change is None or change.is_ddl:
            return entry
        keep = self.columns_for(entry.header.schema_name, entry.header.table_name)
        if keep is None:
            return entry

        def images(columns: tuple[Column, ...]) -> tuple[Column, ...]:
            return tuple(column for column in columns if keep(column.name))

        row_datas = tuple(
            RowData(before=images(data.before), after=images(data.after))
            for data in row_images(change)
        )
        return replace(entry, row_change=replace(change, row_datas=row_datas))

    def __repr__(self) -> str:
        return f"FieldFilter(field={self.field!r}, black_field={self.black_field!r})"
