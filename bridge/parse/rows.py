"""Row images of a binlog rows event -> canal's ``RowData`` / ``Column`` objects.

The input is the body of a WRITE/UPDATE/DELETE rows event after ``number_of_columns``, without
the checksum::

    columns-present bitmap      ceil(n/8) bytes
    [after-image bitmap]        ceil(n/8) bytes, UPDATE only
    rows until the end:         per image: NULL bitmap over the present columns, then the
                                values of the present non-NULL columns; UPDATE: before, after

A ``RowDecoder`` is built once per table definition: it binds one value decoder per column
(``bridge.parse.values``) and caches a plan per present-columns bitmap, so decoding a row is a
loop over precomputed tuples. Following canal's ``LogEventConvert.parseOneRow``:

- INSERT rows fill ``after`` (every column ``updated``), DELETE rows ``before`` (none updated),
  UPDATE rows both; before-image columns are never ``updated``; an after-image column is
  ``updated`` unless the before image has the same column with the same nullness and text
  (canal's ``isUpdate``; a column missing from the before image counts as updated).
- Columns absent from an image (``binlog_row_image=MINIMAL/NOBLOB``) are left out.

Failures raise subclasses of ``SchemaMismatch`` (``bridge.parse.values.RowDecodeError``): the
event's column count differs from the table's, a value runs past the body, or bytes are left
over; the message names the table, and the caller adds the binlog position.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields, replace
from datetime import tzinfo
from typing import Any, Literal

from bridge.entry import Column, RowData
from bridge.parse.table_meta import ColumnMeta, TableMeta
from bridge.parse.values import (
    DecodeOptions,
    RowDecodeError,
    TruncatedRowImage,
    UnsupportedColumnType,
    ValueDecoder,
    make_decoder,
    null_sql_type,
)

RowsKind = Literal["insert", "update", "delete"]

_MAX_PLANS = 64  # distinct present-column bitmaps cached per table


class ColumnCountMismatch(RowDecodeError):
    """The rows event has a different number of columns than the table definition."""

    def __init__(self, table: TableMeta, event_columns: int) -> None:
        self.table = table
        self.event_columns = event_columns
        listed = ", ".join(f"{c.name} {c.mysql_type}" for c in table.columns)
        super().__init__(
            f"table {table.full_name}: the rows event has {event_columns} columns but the "
            f"table definition has {len(table.columns)} ({listed}); the table was probably "
            "altered since this definition was loaded"
        )


def _row_factory() -> Callable[[tuple[Column, ...], tuple[Column, ...]], RowData]:
    """``RowData(before, after)`` without the frozen dataclass ``__init__`` (see below)."""
    if tuple(f.name for f in fields(RowData)) != ("before", "after"):
        return RowData
    set_before, set_after = (getattr(RowData, n).__set__ for n in ("before", "after"))
    new = object.__new__

    def make(before: tuple[Column, ...], after: tuple[Column, ...]) -> RowData:
        row: RowData = new(RowData)
        set_before(row, before)
        set_after(row, after)
        return row

    return make


def _column_factory() -> Callable[..., Column]:
    """A positional ``Column`` constructor about twice as fast as the frozen dataclass
    ``__init__`` (which pays ``object.__setattr__`` per field): slot descriptors set directly.
    Falls back to ``Column`` itself if its fields ever change."""
    names = ("index", "sql_type", "name", "is_key", "updated", "is_null", "value", "mysql_type")
    if tuple(f.name for f in fields(Column)) != names:
        return Column
    setters = [getattr(Column, n).__set__ for n in names]
    s0, s1, s2, s3, s4, s5, s6, s7 = setters
    new = object.__new__

    def make(  # noqa: PLR0917  (positional on purpose: this runs once per value)
        index: int,
        sql_type: int,
        name: str,
        is_key: bool,
        updated: bool,
        is_null: bool,
        value: str,
        mysql_type: str,
    ) -> Column:
        column: Column = new(Column)
        s0(column, index)
        s1(column, sql_type)
        s2(column, name)
        s3(column, is_key)
        s4(column, updated)
        s5(column, is_null)
        s6(column, value)
        s7(column, mysql_type)
        return column

    return make


new_column = _column_factory()
new_row = _row_factory()


def _failing(error: UnsupportedColumnType) -> ValueDecoder:
    """Stands in for an undecodable column: the table stays usable while that column is NULL or
    absent, and the error surfaces on the first value that needs it."""

    def fail(data: bytes, pos: int) -> tuple[str, int, int]:
        raise error

    return fail


class _Plan:
    """What to do for one present-columns bitmap."""

    __slots__ = ("columns", "indexes", "null_bytes")

    def __init__(self, steps: tuple[tuple[Any, ...], ...]) -> None:
        # Per present column: (decoder, index, name, is_key, mysql_type, null sql_type).
        self.columns = steps
        self.indexes = tuple(step[1] for step in steps)
        self.null_bytes = (len(steps) + 7) // 8


class RowDecoder:
    """Decodes the row images of one table definition (one TABLE_MAP)."""

    def __init__(
        self,
        table: TableMeta,
        time_zone: tzinfo | None = None,
        options: DecodeOptions | None = None,
    ) -> None:
        """``time_zone`` renders TIMESTAMP columns (``None``: the process's local zone, like
        canal's JVM default); it overrides ``options.time_zone``."""
        options = options or DecodeOptions()
        if time_zone is not None:
            options = replace(options, time_zone=time_zone)
        self.table = table
        self.options = options
        self._steps = tuple(self._step(col, options) for col in table.columns)
        self._plans: dict[bytes, _Plan] = {}

    @staticmethod
    def _step(col: ColumnMeta, options: DecodeOptions) -> tuple[Any, ...]:
        try:
            decoder = make_decoder(col, options)
        except UnsupportedColumnType as exc:
            decoder = _failing(exc)
        return (
            decoder,
            col.index,
            col.name,
            col.is_key,
            col.mysql_type,
            null_sql_type(col, options),
        )

    def decode(
        self, kind: RowsKind, body: bytes, column_count: int | None = None
    ) -> tuple[RowData, ...]:
        """All rows of one event body. ``column_count`` is the event's ``number_of_columns``
        (defaults to the table's); a different count raises ``ColumnCountMismatch``."""
        count = len(self._steps)
        if column_count is not None and column_count != count:
            raise ColumnCountMismatch(self.table, column_count)
        bitmap_size = (count + 7) // 8
        before_plan = self._plan(body[:bitmap_size])
        pos = bitmap_size
        after_plan = before_plan
        if kind == "update":
            after_plan = self._plan(body[pos : pos + bitmap_size])
            pos += bitmap_size
        if len(body) < pos or (len(body) > pos and not (before_plan.columns or after_plan.columns)):
            raise TruncatedRowImage(
                f"table {self.table.full_name}: a {len(body)}-byte rows event body does not fit "
                "its column bitmaps"
            )
        try:
            if kind == "insert":
                return self._single(body, pos, after_plan, after=True)
            if kind == "delete":
                return self._single(body, pos, before_plan, after=False)
            return self._updates(body, pos, before_plan, after_plan)
        except (struct.error, IndexError) as exc:
            raise TruncatedRowImage(
                f"table {self.table.full_name}: a row image runs past the end of the "
                f"{len(body)}-byte rows event"
            ) from exc
        except RowDecodeError as exc:
            if not str(exc).startswith("table "):
                exc.args = (f"table {self.table.full_name}: {exc}",)
            raise

    def _plan(self, bitmap: bytes) -> _Plan:
        plan = self._plans.get(bitmap)
        if plan is None:
            present = int.from_bytes(bitmap, "little")
            steps = tuple(step for i, step in enumerate(self._steps) if present >> i & 1)
            plan = _Plan(steps)
            if len(self._plans) < _MAX_PLANS:
                self._plans[bitmap] = plan
        return plan

    def _single(self, data: bytes, pos: int, plan: _Plan, after: bool) -> tuple[RowData, ...]:
        """INSERT or DELETE rows: one image each, read and built in one pass."""
        rows = []
        end = len(data)
        steps = plan.columns
        size = plan.null_bytes
        make = new_column
        from_bytes = int.from_bytes
        while pos < end:
            nulls = from_bytes(data[pos : pos + size], "little")
            pos += size
            columns: list[Column] = []
            add = columns.append
            for decode, index, name, key, mysql_type, null_type in steps:
                if nulls & 1:
                    add(make(index, null_type, name, key, after, True, "", mysql_type))
                else:
                    value, sql_type, pos = decode(data, pos)
                    add(make(index, sql_type, name, key, after, False, value, mysql_type))
                nulls >>= 1
            image = tuple(columns)
            rows.append(new_row((), image) if after else new_row(image, ()))
        self._check_end(pos, end)
        return tuple(rows)

    def _updates(
        self, data: bytes, pos: int, before_plan: _Plan, after_plan: _Plan
    ) -> tuple[RowData, ...]:
        rows = []
        end = len(data)
        read = self._read_image
        make = new_column
        aligned = before_plan.indexes == after_plan.indexes
        while pos < end:
            old_values, old_types, pos = read(data, pos, before_plan)
            new_values, new_types, pos = read(data, pos, after_plan)
            before = tuple(
                [
                    make(index, sql_type, name, key, False, value is None, value or "", mtype)
                    for (_, index, name, key, mtype, _), value, sql_type in zip(
                        before_plan.columns, old_values, old_types, strict=True
                    )
                ]
            )
            if aligned:
                olds = old_values
            else:
                by_index = dict(zip(before_plan.indexes, old_values, strict=True))
                olds = [by_index.get(i, _MISSING) for i in after_plan.indexes]
            after = tuple(
                [
                    make(index, sql_type, name, key, value != old, value is None, value or "", mt)
                    for (_, index, name, key, mt, _), value, sql_type, old in zip(
                        after_plan.columns, new_values, new_types, olds, strict=True
                    )
                ]
            )
            rows.append(new_row(before, after))
        self._check_end(pos, end)
        return tuple(rows)

    @staticmethod
    def _read_image(data: bytes, pos: int, plan: _Plan) -> tuple[list[str | None], list[int], int]:
        """One image: its values (``None`` for NULL), sql types and the position after it."""
        size = plan.null_bytes
        nulls = int.from_bytes(data[pos : pos + size], "little")
        if pos + size > len(data):
            raise IndexError(pos + size)
        pos += size
        values: list[str | None] = []
        types: list[int] = []
        add_value = values.append
        add_type = types.append
        for decode, _, _, _, _, null_type in plan.columns:
            if nulls & 1:
                add_value(None)
                add_type(null_type)
            else:
                value, sql_type, pos = decode(data, pos)
                add_value(value)
                add_type(sql_type)
            nulls >>= 1
        return values, types, pos

    def _check_end(self, pos: int, end: int) -> None:
        if pos != end:
            raise TruncatedRowImage(
                f"table {self.table.full_name}: the last row image ends at byte {pos} of a "
                f"{end}-byte rows event"
            )


class _Missing:
    """Compares unequal to everything: a column absent from the before image is updated."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


_MISSING: Any = _Missing()
