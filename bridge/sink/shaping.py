"""Column shaping (``columns.mask`` / ``hash`` / ``truncate``): personal data masked, hashed
or cut before a change is stored, so no record path ever sees the original value.

Rules use canal's field-filter syntax, ``schema.table:col1/col2`` (a table name with regex
characters is an anchored, case-insensitive regex), entries comma-separated; ``truncate``
gives each column its length, ``schema.table:body=100/title=20``. A value becomes:

* mask: ``mask_length`` asterisks (Debezium's ``column.mask.with.N.chars``);
* hash: the lowercase hex SHA-256 of the UTF-8 bytes of the salt followed by the value's text
  (Debezium's salted ``column.mask.hash``): the same in every process and after restarts, so
  joins on a hashed column still work;
* truncate: its first N characters (``column.truncate.to.N.chars``).

A NULL stays NULL; the column's type, name and key flag stay. A column several rules name is
masked before hashed before truncated (the first that applies). Values are the texts of the
destination's value mode, before any format writes them: both row images (FlatMessage
``data`` and ``old``, protobuf columns), streamed and snapshot rows alike. Two equal masks
are equal, so an UPDATE of a masked column only does not list it in ``old``.

A key column masked or hashed would make record keys and partitions follow the masked value:
refused (``MaskedKeyColumn``, which stops the destination) unless ``mask_keys`` accepts it.

Rows straight from the parser keep their form (a ``DecodedRow``: plan, values, types), with
new values, so the compiled FlatMessage writer still writes them; it is recognised by its
attributes, as ``bridge.mq.rendering.native_rows`` does (the sink may not import the parser).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from bridge.entry import Column, Entry, RowData, decoded_row_change, row_images
from bridge.sink.exceptions import InvalidFilter, MaskedKeyColumn
from bridge.sink.filters import _parse_field_rules, _TableName

Shape = Callable[[str], str]
# Per column name (upper-cased): how its value is shaped, and whether that hides the value
# (mask, hash: refused on a key column without mask_keys) or only shortens it (truncate).
Shapes = dict[str, tuple[Shape, bool]]
_MAX_PLANS = 4096
_IMAGE_FIELDS = ("old_plan", "old_values", "old_types", "new_plan", "new_values", "new_types")


def parse_truncate_rules(spec: str) -> list[tuple[_TableName, dict[str, int]]]:
    """``db.t:body=100/title=20,...`` -> [(db.t, {BODY: 100, TITLE: 20}), ...]."""
    rules: list[tuple[_TableName, dict[str, int]]] = []
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, columns = item.rpartition(":")
        lengths: dict[str, int] = {}
        for part in (p.strip() for p in columns.split("/") if p.strip()):
            column, eq, length = part.partition("=")
            if not eq or not column.strip() or not length.strip().isdigit():
                raise InvalidFilter(item, f"expected column=length, got {part!r}")
            if int(length) < 1:
                raise InvalidFilter(item, f"{column.strip()}: the length must be at least 1")
            lengths[column.strip().upper()] = int(length)
        if not sep or not name.strip() or not lengths:
            raise InvalidFilter(item, "expected schema.table:column=length/column2=length")
        rules.append((_TableName(name.strip(), item), lengths))
    return rules


class ColumnShaper:
    """Masks, hashes and truncates the columns its rules name (module docstring).

    ``salt`` is a secret: it is held as bytes, never shown by ``repr`` nor put in an error.
    """

    def __init__(
        self,
        mask: str = "",
        hash_columns: str = "",
        truncate: str = "",
        *,
        mask_length: int = 8,
        salt: str = "",
        mask_keys: bool = False,
        cache_size: int = 4096,
    ) -> None:
        self.mask, self.hash_columns, self.truncate = mask, hash_columns, truncate
        self._masked = _parse_field_rules(mask)
        self._hashed = _parse_field_rules(hash_columns)
        self._truncated = parse_truncate_rules(truncate)
        if self._hashed and not salt:
            raise InvalidFilter(hash_columns, "hashing needs a salt")
        self._stars = "*" * mask_length
        self._salted = hashlib.sha256(salt.encode())  # the salt's state, copied per value
        self.mask_keys = mask_keys
        # Per plan of rows straight from the parser: the positions to shape (``_steps``).
        self._plans: dict[int, tuple[Any, tuple[tuple[int, Shape], ...]]] = {}
        # Per table: its column shapes, or None when none of its columns is shaped.
        self.shapes_for: Callable[[str, str], Shapes | None] = lru_cache(maxsize=cache_size)(
            self._evaluate
        )

    def __bool__(self) -> bool:
        return bool(self._masked or self._hashed or self._truncated)

    def __repr__(self) -> str:
        return (
            f"ColumnShaper(mask={self.mask!r}, hash={self.hash_columns!r}, "
            f"truncate={self.truncate!r}, mask_keys={self.mask_keys})"
        )

    def _evaluate(self, schema: str, table: str) -> Shapes | None:
        name = f"{schema}.{table}"
        shapes: Shapes = {}
        for rule, lengths in self._truncated:
            if rule.matches(name):
                for column, length in lengths.items():
                    shapes[column] = (_truncate(length), False)
        for rule, columns in self._hashed:
            if rule.matches(name):
                shapes.update(dict.fromkeys(columns, (self._hash, True)))
        for rule, columns in self._masked:
            if rule.matches(name):
                shapes.update(dict.fromkeys(columns, (self._mask, True)))
        return shapes or None

    def hides(self, schema: str, table: str, column: str) -> bool:
        """Whether the rules mask or hash that column (truncating does not hide a value)."""
        shapes = self.shapes_for(schema, table)
        found = shapes.get(column.upper()) if shapes is not None else None
        return found is not None and found[1]

    def _mask(self, _value: str) -> str:
        return self._stars

    def _hash(self, value: str) -> str:
        digest = self._salted.copy()
        digest.update(value.encode())
        return digest.hexdigest()

    def apply(self, entry: Entry) -> Entry:
        """A copy of a DML entry whose row images hold the shaped values (the entry itself
        when no column of its table is shaped). Raises ``MaskedKeyColumn`` for a masked or
        hashed key column without ``mask_keys``."""
        change = decoded_row_change(entry)
        if change is None:
            return entry
        header = entry.header
        shapes = self.shapes_for(header.schema_name, header.table_name)
        if shapes is None:
            return entry
        schema, table = header.schema_name, header.table_name
        rows = tuple(self._row(row, shapes, schema, table) for row in row_images(change))
        return replace(entry, row_change=replace(change, row_datas=rows))

    def _row(self, row: RowData, shapes: Shapes, schema: str, table: str) -> RowData:
        if hasattr(row, "new_plan"):
            return self._decoded(row, shapes, schema, table)
        return RowData(
            before=self._columns(row.before, shapes, schema, table),
            after=self._columns(row.after, shapes, schema, table),
        )

    def _columns(
        self, columns: tuple[Column, ...], shapes: Shapes, schema: str, table: str
    ) -> tuple[Column, ...]:
        out = []
        for column in columns:
            found = shapes.get(column.name.upper())
            if found is None or column.is_null:
                out.append(column)
                continue
            shape, hides = found
            if hides and column.is_key:
                self._refuse_key(schema, table, column.name)
            out.append(replace(column, value=shape(column.value)))
        return tuple(out)

    def _decoded(self, row: Any, shapes: Shapes, schema: str, table: str) -> RowData:
        """A parser row (``DecodedRow``) of the same type, its values shaped."""
        shaped: RowData = object.__new__(type(row))
        for field in _IMAGE_FIELDS:
            setattr(shaped, field, getattr(row, field))
        for plan_field, values_field in (("old_plan", "old_values"), ("new_plan", "new_values")):
            plan = getattr(row, plan_field)
            if plan is None:
                continue
            steps = self._steps(plan, shapes, schema, table)
            if not steps:
                continue
            values = list(getattr(row, values_field))
            for position, shape in steps:
                value = values[position]
                if value is not None:
                    values[position] = shape(value)
            setattr(shaped, values_field, tuple(values))
        return shaped

    def _steps(
        self, plan: Any, shapes: Shapes, schema: str, table: str
    ) -> tuple[tuple[int, Shape], ...]:
        """The positions of a plan's shaped columns and their shapes, made once per plan (a
        table definition and present-columns bitmap); a hidden key column is refused here."""
        known = self._plans.get(id(plan))
        if known is not None and known[0] is plan:
            return known[1]
        steps = []
        for position, (_, _, name, key, _, _) in enumerate(plan.columns):
            found = shapes.get(name.upper())
            if found is None:
                continue
            shape, hides = found
            if hides and key:
                self._refuse_key(schema, table, name)
            steps.append((position, shape))
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[id(plan)] = (plan, tuple(steps))
        return self._plans[id(plan)][1]

    def _refuse_key(self, schema: str, table: str, column: str) -> None:
        if not self.mask_keys:
            raise MaskedKeyColumn(f"{schema}.{table}", column)


def _truncate(length: int) -> Shape:
    def cut(value: str) -> str:
        return value[:length]

    return cut
