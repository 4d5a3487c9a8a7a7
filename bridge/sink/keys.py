"""``mq.key_columns``: the columns that key a table's records, for tables without a primary
key (whose records would all share the table's key) or to override the one they have
(Debezium's ``message.key.columns``).

Rules use canal's field-filter syntax, ``schema.table:tenant/seq`` (a table name with regex
characters is an anchored, case-insensitive regex). The sink marks exactly those columns as
the table's key in both row images, before any format writes them, so the record key
(``database.table:<values>``), ``$pk$`` partitioning, a key change's split, ``pkNames`` and the
protobuf ``isKey`` all follow them, in the table's column order, in the pure-Python and the
compiled writers alike (rows straight from the parser keep their form, with a re-keyed plan).

A named column a row of the table lacks stops the destination (``MissingKeyColumn``); the
instance also checks the definitions at start and after each DDL (``missing_key_column``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from bridge.entry import Column, Entry, RowData, decoded_row_change, row_images
from bridge.sink.exceptions import MissingKeyColumn
from bridge.sink.filters import _parse_field_rules, _TableName

_IMAGE_FIELDS = ("old_plan", "old_values", "old_types", "new_plan", "new_values", "new_types")
_MAX_PLANS = 4096


class KeyColumns:
    """Marks the columns ``spec`` names as their table's key (module docstring)."""

    def __init__(self, spec: str = "", *, cache_size: int = 4096) -> None:
        self.spec = spec
        self._rules: list[tuple[_TableName, frozenset[str]]] = _parse_field_rules(spec)
        # Per table: the upper-cased key column names, or None when no rule names it.
        self.columns_for: Callable[[str, str], frozenset[str] | None] = lru_cache(
            maxsize=cache_size
        )(self._evaluate)
        self._plans: dict[int, tuple[Any, Any]] = {}  # id(plan) -> (plan, re-keyed plan)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def __repr__(self) -> str:
        return f"KeyColumns({self.spec!r})"

    def _evaluate(self, schema: str, table: str) -> frozenset[str] | None:
        name = f"{schema}.{table}"
        for rule, columns in self._rules:
            if rule.matches(name):
                return columns  # the first rule naming the table
        return None

    def missing(self, schema: str, table: str, columns: Iterable[str]) -> str | None:
        """The first key column the rules name for the table that ``columns`` lacks."""
        keys = self.columns_for(schema, table)
        if keys is None:
            return None
        present = {column.upper() for column in columns}
        return next((key for key in sorted(keys) if key not in present), None)

    def apply(self, entry: Entry) -> Entry:
        """A copy of a DML entry whose images mark exactly the named columns as key (the entry
        itself when no rule names its table). Raises ``MissingKeyColumn``."""
        change = decoded_row_change(entry)
        if change is None:
            return entry
        schema, table = entry.header.schema_name, entry.header.table_name
        keys = self.columns_for(schema, table)
        if keys is None:
            return entry
        rows = tuple(self._row(row, keys, schema, table) for row in row_images(change))
        return replace(entry, row_change=replace(change, row_datas=rows))

    def _row(self, row: RowData, keys: frozenset[str], schema: str, table: str) -> RowData:
        if hasattr(row, "new_plan"):
            return self._decoded(row, keys, schema, table)
        return RowData(
            before=self._columns(row.before, keys, schema, table),
            after=self._columns(row.after, keys, schema, table),
        )

    def _columns(
        self, columns: tuple[Column, ...], keys: frozenset[str], schema: str, table: str
    ) -> tuple[Column, ...]:
        if not columns:
            return columns
        self._check(schema, table, (c.name for c in columns))
        return tuple(
            c if c.is_key == (c.name.upper() in keys) else replace(c, is_key=not c.is_key)
            for c in columns
        )

    def _decoded(self, row: Any, keys: frozenset[str], schema: str, table: str) -> RowData:
        """A parser row (``DecodedRow``) of the same type and values, its plans re-keyed."""
        keyed: RowData = object.__new__(type(row))
        for field in _IMAGE_FIELDS:
            setattr(keyed, field, getattr(row, field))
        for plan_field in ("old_plan", "new_plan"):
            plan = getattr(row, plan_field)
            if plan is not None:
                setattr(keyed, plan_field, self._keyed_plan(plan, keys, schema, table))
        return keyed

    def _keyed_plan(self, plan: Any, keys: frozenset[str], schema: str, table: str) -> Any:
        """``plan`` with the named columns as its keys; made once per plan (the compiled
        writer caches what it reads of a plan on the plan)."""
        known = self._plans.get(id(plan))
        if known is not None and known[0] is plan:
            return known[1]
        self._check(schema, table, plan.names)
        keyed = type(plan).described(
            [
                (index, name, name.upper() in keys, mysql_type, null_type)
                for (_, index, name, _, mysql_type, null_type) in plan.columns
            ]
        )
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[id(plan)] = (plan, keyed)
        return keyed

    def _check(self, schema: str, table: str, columns: Iterable[str]) -> None:
        column = self.missing(schema, table, columns)
        if column is not None:
            raise MissingKeyColumn(f"{schema}.{table}", column.lower())
