"""Row images of a binlog rows event -> canal's ``RowData`` / ``Column`` objects.

The input is the body of a WRITE/UPDATE/DELETE rows event after ``number_of_columns``, without
the checksum::

    columns-present bitmap      ceil(n/8) bytes
    [after-image bitmap]        ceil(n/8) bytes, UPDATE and PARTIAL_UPDATE only
    rows until the end:         per image: NULL bitmap over the present columns, then the
                                values of the present non-NULL columns; UPDATE: before, after;
                                PARTIAL_UPDATE: before, value_options [+ partial_bits], after

A ``RowDecoder`` is built once per table definition: it binds one value decoder per column
(``bridge.parse.binlog.values``) and caches a plan per present-columns bitmap, so decoding a row is
a loop over precomputed tuples. Following canal's ``LogEventConvert.parseOneRow``:

- INSERT rows fill ``after`` (every column ``updated``), DELETE rows ``before`` (none updated),
  UPDATE rows both; before-image columns are never ``updated``; an after-image column is
  ``updated`` unless the before image has the same column with the same nullness and text
  (canal's ``isUpdate``; a column missing from the before image counts as updated).
- Columns absent from an image (``binlog_row_image=MINIMAL/NOBLOB``) are left out.
- PARTIAL_UPDATE rows (type 39, ``binlog_row_value_options=PARTIAL_JSON``) come out as the
  UPDATE rows of the same change: a JSON column logged as diffs gets the document rebuilt
  from its before image (``bridge.parse.binlog.json_diff``), rendered by its own decoder.

Failures raise subclasses of ``SchemaMismatch`` (``bridge.parse.binlog.values.RowDecodeError``): the
event's column count differs from the table's, a value runs past the body, or bytes are left
over; the message names the table, and the caller adds the binlog position.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import tzinfo
from typing import Any, Literal

from bridge.entry import Column, RowData
from bridge.parse.binlog.codes import MysqlType
from bridge.parse.binlog.compiled import Spec, column_spec, image_reader
from bridge.parse.binlog.json_diff import (
    JsonDiffNotApplicable,
    PartialJsonWithoutBase,
    applied_document,
    partial_columns,
)
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from bridge.parse.binlog.values import (
    DecodeOptions,
    RowDecodeError,
    TruncatedRowImage,
    UnsupportedColumnType,
    ValueDecoder,
    make_decoder,
    null_sql_type,
    prefixed_span,
)

RowsKind = Literal["insert", "update", "delete", "partial_update"]

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


def _failing(error: UnsupportedColumnType) -> ValueDecoder:
    """Stands in for an undecodable column: the table stays usable while that column is NULL or
    absent, and the error surfaces on the first value that needs it."""

    def fail(data: bytes, pos: int) -> tuple[str, int, int]:
        raise error

    return fail


class Plan:
    """What to do for one present-columns bitmap, and what a row image of it looks like."""

    __slots__ = (
        "columns",
        "flat",
        "indexes",
        "keys",
        "mysql_types",
        "names",
        "null_bytes",
        "read",
    )

    def __init__(
        self, steps: tuple[tuple[Any, ...], ...], specs: Sequence[Spec | None] = ()
    ) -> None:
        # Per present column: (decoder, index, name, is_key, mysql_type, null sql_type), and
        # how the compiled reader decodes it (``bridge.parse.binlog.compiled``; () for none).
        self.columns = steps
        self.indexes = tuple(step[1] for step in steps)
        self.names: tuple[str, ...] = tuple(step[2] for step in steps)
        self.keys: tuple[bool, ...] = tuple(step[3] for step in steps)
        self.mysql_types: tuple[str, ...] = tuple(step[4] for step in steps)
        self.null_bytes = (len(steps) + 7) // 8
        # What the compiled record path keeps of this plan (its PlanInfo), made on first use.
        self.flat: object = None
        python_reader = _image_reader(steps, self.null_bytes)
        self.read: ImageReader = image_reader(steps, specs, python_reader)

    @classmethod
    def described(cls, columns: Sequence[tuple[int, str, bool, str, int]]) -> Plan:
        """The plan of rows decoded in another process (``bridge.parse.entry_codec``): the columns
        as ``(index, name, is_key, mysql_type, null sql_type)``, no decoders and no reader."""
        plan = cls.__new__(cls)
        plan.columns = tuple((None, *column) for column in columns)
        plan.indexes = tuple(column[0] for column in columns)
        plan.names = tuple(column[1] for column in columns)
        plan.keys = tuple(column[2] for column in columns)
        plan.mysql_types = tuple(column[3] for column in columns)
        plan.null_bytes = (len(columns) + 7) // 8
        plan.flat = None
        plan.read = _decoded_elsewhere
        return plan


# (data, pos) -> (values, sql types, position after the image)
ImageReader = Callable[[bytes, int], tuple[tuple[str | None, ...], tuple[int, ...], int]]


def _decoded_elsewhere(
    data: bytes, pos: int
) -> tuple[tuple[str | None, ...], tuple[int, ...], int]:
    raise TypeError("this plan's rows were decoded in another process; it has no reader")


def _image_reader(steps: tuple[tuple[Any, ...], ...], null_bytes: int) -> ImageReader:
    """Straight-line code reading one image of these columns: the NULL bitmap once, then per
    column an inlined NULL test and a call of its value decoder; no loop, no tuple unpacking
    per column. Generated once per table definition and present-columns bitmap."""
    lines = ["def read(data, pos):", f"    end = pos + {null_bytes}"]
    lines.append("    if end > len(data):\n        raise IndexError(end)")
    if null_bytes == 1:
        lines.append("    nulls = data[pos]")
    else:
        lines.append("    nulls = from_bytes(data[pos:end], 'little')")
    lines.append("    pos = end")
    namespace: dict[str, Any] = {"from_bytes": int.from_bytes}
    for i, step in enumerate(steps):
        namespace[f"d{i}"], namespace[f"n{i}"] = step[0], step[5]
        lines += [
            f"    if nulls & {1 << i}:",
            f"        v{i} = None",
            f"        t{i} = n{i}",
            "    else:",
            f"        v{i}, t{i}, pos = d{i}(data, pos)",
        ]
    values = "".join(f"v{i}, " for i in range(len(steps)))
    types = "".join(f"t{i}, " for i in range(len(steps)))
    lines.append(f"    return ({values}), ({types}), pos")
    exec("\n".join(lines), namespace)  # our own generated source
    reader: ImageReader = namespace["read"]
    return reader


# One decoded image: its plan, the values (None for NULL) and the sql types, column by column.
Image = tuple[Plan, tuple[str | None, ...], tuple[int, ...]]

_BEFORE = RowData.__dict__["before"]  # RowData's own slots, where DecodedRow caches Columns
_AFTER = RowData.__dict__["after"]


class DecodedRow(RowData):
    """A ``RowData`` holding its images as decoded values; the ``Column`` objects are made the
    first time ``before`` / ``after`` is read (then kept).

    Building eight-field Columns for every value was the largest cost of decoding, and most
    rows never need them: the FlatMessage builder reads the images directly. Values and types
    are tuples of strings and ints, which the garbage collector stops tracking, so rows waiting
    in the store cost little at each collection. A DecodedRow is equal to the ``RowData`` with
    the same Columns.
    """

    __slots__ = ("new_plan", "new_types", "new_values", "old_plan", "old_types", "old_values")

    # Each image: its plan (None: the row has no such image), values and sql types.
    old_plan: Plan | None
    old_values: tuple[str | None, ...]
    old_types: tuple[int, ...]
    new_plan: Plan | None
    new_values: tuple[str | None, ...]
    new_types: tuple[int, ...]

    @property
    def old_image(self) -> Image | None:
        plan = self.old_plan
        return None if plan is None else (plan, self.old_values, self.old_types)

    @property
    def new_image(self) -> Image | None:
        plan = self.new_plan
        return None if plan is None else (plan, self.new_values, self.new_types)

    @property
    def before(self) -> tuple[Column, ...]:
        try:
            columns: tuple[Column, ...] = _BEFORE.__get__(self)
        except AttributeError:
            old = self.old_image
            columns = _columns(old, False) if old is not None else ()
            _BEFORE.__set__(self, columns)
        return columns

    @property
    def after(self) -> tuple[Column, ...]:
        try:
            columns: tuple[Column, ...] = _AFTER.__get__(self)
        except AttributeError:
            new, old = self.new_image, self.old_image
            if new is None:
                columns = ()
            elif old is None:
                columns = _columns(new, True)
            else:
                columns = _updated_columns(new, old)
            _AFTER.__set__(self, columns)
        return columns

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowData):
            return (self.before, self.after) == (other.before, other.after)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.before, self.after))

    def __reduce__(self) -> tuple[Any, ...]:
        return RowData, (self.before, self.after)


_NO_VALUES: tuple[Any, ...] = ()
_new_object = object.__new__


def decoded_row(  # noqa: PLR0917  (one positional field per image part; runs once per row)
    old_plan: Plan | None,
    old_values: tuple[str | None, ...],
    old_types: tuple[int, ...],
    new_plan: Plan | None,
    new_values: tuple[str | None, ...],
    new_types: tuple[int, ...],
) -> DecodedRow:
    """A DecodedRow of its images, its ``before`` / ``after`` slots left for the properties
    to fill (``RowData.__init__`` would set them)."""
    row: DecodedRow = _new_object(DecodedRow)
    row.old_plan = old_plan
    row.old_values = old_values
    row.old_types = old_types
    row.new_plan = new_plan
    row.new_values = new_values
    row.new_types = new_types
    return row


def _columns(image: Image, updated: bool) -> tuple[Column, ...]:
    """The Columns of an INSERT's after image (all ``updated``) or of a before image (none)."""
    plan, values, types = image
    make = Column
    return tuple(
        [
            make(index, sql_type, name, key, updated, value is None, value or "", mysql_type)
            for (_, index, name, key, mysql_type, _), value, sql_type in zip(
                plan.columns, values, types, strict=True
            )
        ]
    )


def _updated_columns(image: Image, before: Image) -> tuple[Column, ...]:
    """The Columns of an UPDATE's after image: ``updated`` as canal's ``isUpdate``."""
    plan, values, types = image
    if plan is before[0]:
        olds: Sequence[Any] = before[1]
    else:
        by_index = dict(zip(before[0].indexes, before[1], strict=True))
        olds = [by_index.get(i, _MISSING) for i in plan.indexes]
    make = Column
    return tuple(
        [
            make(index, sql_type, name, key, value != old, value is None, value or "", mysql_type)
            for (_, index, name, key, mysql_type, _), value, sql_type, old in zip(
                plan.columns, values, types, olds, strict=True
            )
        ]
    )


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
        steps = [self._step(col, options) for col in table.columns]
        self._steps = tuple(step for step, _ in steps)
        self._specs = tuple(spec for _, spec in steps)
        self._plans: dict[bytes, Plan] = {}
        # JSON columns in column order (the partial_bits of a PARTIAL_UPDATE) and the size
        # of their length prefix, to render a rebuilt document with the column's decoder.
        json_columns = [col for col in table.columns if col.type_code == MysqlType.JSON]
        self._json_columns = tuple(col.index for col in json_columns)
        self._json_prefix = {col.index: col.max_length or 4 for col in json_columns}
        # Their readers of a document's span (what their decoders read first), to step over
        # a before image's documents without rendering them.
        self._json_span = {index: prefixed_span(size) for index, size in self._json_prefix.items()}

    @staticmethod
    def _step(col: ColumnMeta, options: DecodeOptions) -> tuple[tuple[Any, ...], Spec | None]:
        """A column's step of a plan, and its compiled reader spec (None: Python only)."""
        try:
            decoder = make_decoder(col, options)
            spec = column_spec(col, options)
        except UnsupportedColumnType as exc:
            decoder, spec = _failing(exc), None
        step = (
            decoder,
            col.index,
            col.name,
            col.is_key,
            col.mysql_type,
            null_sql_type(col, options),
        )
        return step, spec

    def decode(
        self, kind: RowsKind, body: bytes, column_count: int | None = None
    ) -> tuple[RowData, ...]:
        """All rows of one event body. ``column_count`` is the event's ``number_of_columns``
        (defaults to the table's); a different count raises ``ColumnCountMismatch``.

        ``kind`` "partial_update" is a PARTIAL_UPDATE_ROWS_EVENT (type 39), whose body starts
        where an UPDATE_ROWS v2's (type 31) does: after the post header, its extra data and
        ``number_of_columns``. Its rows equal those of the same change logged as an UPDATE;
        a partial JSON column whose before image is absent (``binlog_row_image=MINIMAL``)
        raises ``PartialJsonWithoutBase``, a diff that does not fit the before image
        ``JsonDiffNotApplicable``."""
        before_plan, after_plan, pos = self.images(kind, body, column_count)
        return self._decoded(kind, body, before_plan, after_plan, pos)

    def decode_images(
        self, kind: RowsKind, body: bytes, before_plan: Plan, after_plan: Plan, pos: int
    ) -> tuple[RowData, ...]:
        """``decode`` of an event whose ``images`` are known, without working them out again."""
        return self._decoded(kind, body, before_plan, after_plan, pos)

    def _decoded(
        self, kind: RowsKind, body: bytes, before_plan: Plan, after_plan: Plan, pos: int
    ) -> tuple[RowData, ...]:
        with self._row_errors(body):
            if kind == "insert":
                return self._single(body, pos, after_plan, after=True)
            if kind == "delete":
                return self._single(body, pos, before_plan, after=False)
            if kind == "partial_update":
                body = self._update_body(body, pos, before_plan, after_plan)
            return self._updates(body, pos, before_plan, after_plan)

    @contextmanager
    def _row_errors(self, body: bytes) -> Iterator[None]:
        """Raises what reading ``body`` fails on as a ``RowDecodeError`` naming the table: an
        image running past the end is a ``TruncatedRowImage``."""
        try:
            yield
        except (struct.error, IndexError) as exc:
            raise TruncatedRowImage(
                f"table {self.table.full_name}: a row image runs past the end of the "
                f"{len(body)}-byte rows event"
            ) from exc
        except RowDecodeError as exc:
            if not str(exc).startswith("table "):
                exc.args = (f"table {self.table.full_name}: {exc}",)
            raise

    def images(
        self, kind: RowsKind, body: bytes, column_count: int | None = None
    ) -> tuple[Plan, Plan, int]:
        """The plans of the event's images (before, after: the same one but for an UPDATE)
        and where its images start in ``body``; raises where they cannot fit, as ``decode``.
        What an encoder that writes rows straight from the bytes takes
        (``AheadEncoding.encode_event``), with the body."""
        count = len(self._steps)
        if column_count is not None and column_count != count:
            raise ColumnCountMismatch(self.table, column_count)
        bitmap_size = (count + 7) // 8
        before_plan = self._plan(body[:bitmap_size])
        pos = bitmap_size
        after_plan = before_plan
        if kind in ("update", "partial_update"):
            after_plan = self._plan(body[pos : pos + bitmap_size])
            pos += bitmap_size
        if len(body) < pos or (len(body) > pos and not (before_plan.columns or after_plan.columns)):
            raise TruncatedRowImage(
                f"table {self.table.full_name}: a {len(body)}-byte rows event body does not fit "
                "its column bitmaps"
            )
        return before_plan, after_plan, pos

    def _plan(self, bitmap: bytes) -> Plan:
        plan = self._plans.get(bitmap)
        if plan is None:
            present = int.from_bytes(bitmap, "little")
            chosen = [i for i in range(len(self._steps)) if present >> i & 1]
            plan = Plan(tuple(self._steps[i] for i in chosen), [self._specs[i] for i in chosen])
            if len(self._plans) < _MAX_PLANS:
                self._plans[bitmap] = plan
        return plan

    def _single(self, data: bytes, pos: int, plan: Plan, after: bool) -> tuple[RowData, ...]:
        """INSERT or DELETE rows: one image each."""
        rows = []
        end = len(data)
        read = plan.read
        none = _NO_VALUES
        while pos < end:
            values, types, pos = read(data, pos)
            if after:
                rows.append(decoded_row(None, none, none, plan, values, types))
            else:
                rows.append(decoded_row(plan, values, types, None, none, none))
        self._check_end(pos, end)
        return tuple(rows)

    def _updates(
        self, data: bytes, pos: int, before_plan: Plan, after_plan: Plan
    ) -> tuple[RowData, ...]:
        rows = []
        end = len(data)
        read_old, read_new = before_plan.read, after_plan.read
        while pos < end:
            old_values, old_types, pos = read_old(data, pos)
            new_values, new_types, pos = read_new(data, pos)
            rows.append(
                decoded_row(before_plan, old_values, old_types, after_plan, new_values, new_types)
            )
        self._check_end(pos, end)
        return tuple(rows)

    def update_body(self, data: bytes, pos: int, before_plan: Plan, after_plan: Plan) -> bytes:
        """A PARTIAL_UPDATE body (images from ``pos``) rebuilt as the UPDATE body the same change
        logs without ``PARTIAL_JSON``: each row's value options are dropped and each partial
        column's diffs applied to its before document, so that any reader of UPDATE images,
        the compiled one included, reads it.

        Images without a partial column are copied as they are (by the plans' readers,
        compiled or not: in a PARTIAL_JSON session every UPDATE is logged this way, most
        without a diff). A row with a partial column reads its before image a second time, in
        Python, for the binary documents, and its after image in Python
        (``_applied_image``). Raises as ``decode`` does."""
        with self._row_errors(data):
            return self._update_body(data, pos, before_plan, after_plan)

    def _update_body(self, data: bytes, pos: int, before_plan: Plan, after_plan: Plan) -> bytes:
        parts = [data[:pos]]
        end = len(data)
        read_old, read_new = before_plan.read, after_plan.read
        json_columns = self._json_columns
        while pos < end:
            start = pos
            _, _, pos = read_old(data, pos)
            parts.append(data[start:pos])
            partial, pos = partial_columns(data, pos, json_columns)
            image = pos
            if partial.isdisjoint(after_plan.indexes):
                _, _, pos = read_new(data, pos)
                parts.append(data[image:pos])
            else:
                documents = self._json_documents(before_plan, data, start)
                pos = self._applied_image(after_plan, data, pos, partial, documents, parts)
        self._check_end(pos, end)
        return b"".join(parts)

    def _json_documents(self, plan: Plan, data: bytes, pos: int) -> dict[int, bytes | None]:
        """The binary documents of the JSON columns in the image at ``pos`` (None: NULL)."""
        documents: dict[int, bytes | None] = {}
        nulls, pos = _null_bits(plan, data, pos)
        spans = self._json_span
        for i, step in enumerate(plan.columns):
            index = step[1]
            if nulls >> i & 1:
                if index in spans:
                    documents[index] = None
            elif index in spans:  # the document's bytes, without rendering it
                start, pos = spans[index](data, pos)
                documents[index] = data[start:pos]
            else:
                _, _, pos = step[0](data, pos)
        return documents

    def _applied_image(  # noqa: PLR0917 (one image's walk and where it goes)
        self,
        plan: Plan,
        data: bytes,
        pos: int,
        partial: frozenset[int],
        documents: dict[int, bytes | None],
        parts: list[bytes],
    ) -> int:
        """Appends to ``parts`` the after image at ``pos`` with the diffs of its ``partial``
        columns applied to their before ``documents`` (each written with its column's length
        prefix); returns where the image ends."""
        start = pos
        nulls, pos = _null_bits(plan, data, pos)
        parts.append(data[start:pos])
        for i, (decoder, index, name, _, _, _) in enumerate(plan.columns):
            if nulls >> i & 1:
                continue
            if index not in partial:
                start = pos
                _, _, pos = decoder(data, pos)
                parts.append(data[start:pos])
                continue
            if index not in documents:
                raise PartialJsonWithoutBase(self.table.full_name, name)
            before = documents[index]
            if before is None:
                raise JsonDiffNotApplicable(
                    f"table {self.table.full_name}: column `{name}` is NULL in the before "
                    "image, which a partial JSON update cannot change"
                )
            try:
                document, pos = applied_document(before, data, pos)
            except RowDecodeError as exc:
                exc.args = (f"table {self.table.full_name}: column `{name}`: {exc}",)
                raise
            parts.append(len(document).to_bytes(self._json_prefix[index], "little"))
            parts.append(document)
        return pos

    def _check_end(self, pos: int, end: int) -> None:
        if pos != end:
            raise TruncatedRowImage(
                f"table {self.table.full_name}: the last row image ends at byte {pos} of a "
                f"{end}-byte rows event"
            )


def _null_bits(plan: Plan, data: bytes, pos: int) -> tuple[int, int]:
    """An image's NULL bitmap at ``pos`` -> (the bits, position of the first value)."""
    end = pos + plan.null_bytes
    if end > len(data):
        raise IndexError(end)
    return int.from_bytes(data[pos:end], "little"), end


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
