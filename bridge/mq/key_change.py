"""``mq.key_change: split``: an UPDATE that moves a row to another partition key goes out as
a DELETE of the old key plus an INSERT of the new one, each placed on its own key's partition.

Why: canal hashes an UPDATE by its after-image only, so a key-changing UPDATE lands on the
new key's partition while the row's INSERT and earlier UPDATEs sit on the old key's. A
consumer reading partitions independently (every Kafka consumer group does) can then apply
the new key's UPDATE before the old key's INSERT, and keeps a stale row under the old key.
Split, every event of a key is on that key's partition, so reading each partition in order
keeps every key's events in order.

When a row "changes its key": the destination spreads the table's rows over more than one
partition by hashing row values (``partition_hash`` ``$pk$`` or named columns, and the topic
has 2+ partitions: ``Placement.route`` is None), and a value the hash reads differs between the
row's before and after image (NULL and '' hash alike, so NULL -> '' is no change; a column
missing from either image, a MINIMAL row image, is not known to change). Only then can the two
halves land on different partitions. A table hashed by name, a fixed partition or a
one-partition topic keeps every event of the table on one partition: the UPDATE stays canal's,
so those consumers see exactly what canal sends. With named columns the "key" is those columns:
a row whose primary key stays but whose hashed column changes is split too (it leaves one
partition and enters another).

Why here, once, for every format: ``KeyChangeSplitter`` wraps the destination's
``RowsEncoder``, and ``bridge.mq.formats.rows_encoder`` (the one place any format's encoder is
chosen) installs it. The split works on the Entry model, before placement: the halves are plain
DELETE and INSERT entries at the UPDATE's binlog position, which every encoder (FlatMessage in
Python or compiled, protobuf, any format added later) writes and places like any other entry,
so none of them has to know. The paths that write a record without reading rows (the compiled
one-call record, rows rendered ahead in the binlog reader's process) run only where a table's
partition does not depend on its rows, which is exactly where nothing is split, and nothing
hashes in Rust: no native change is needed, and ``ahead`` is declined so the rows reach here.

Order: the rows event becomes consecutive entries in its row order: runs of rows that keep
their key stay one UPDATE; each key-changing row becomes DELETE(old) then INSERT(new).
Consecutive key-changing rows are not merged into one DELETE and one INSERT: ``UPDATE ... SET
id = id + 1`` can move row A into the key row B just left, and merged halves would put the
INSERT of that key before its DELETE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from bridge.entry import Column, Entry, EntryType, EventType, RowData
from bridge.mq.records import OutgoingRecord, Placement, RowsEncoder, RowsEncoderStep
from bridge.mq.routing import Row, hashed_value


def split_key_changes(entry: Entry, placement: Placement) -> tuple[Entry, ...]:
    """``entry`` with its key-changing UPDATE rows split into DELETE + INSERT entries, in row
    order (see the module docstring); ``(entry,)`` itself when no row changes its key."""
    change = entry.row_change
    if (
        change is None
        or change.event_type is not EventType.UPDATE
        or change.is_ddl
        or entry.entry_type is not EntryType.ROWDATA
        or type(change.row_datas) is not tuple  # rendered ahead: only where nothing splits
        or not change.row_datas
    ):
        return (entry,)
    header = entry.header
    database, table = header.schema_name, header.table_name
    if placement.route(database, table) is not None:  # one partition for all the table's rows
        return (entry,)
    rows: tuple[RowData, ...] = change.row_datas
    columns = placement.partitions.hashed_columns(database, table, _key_names(rows[0]))
    if not columns:
        return (entry,)
    moved = [_moves(row, columns) for row in rows]
    if not any(moved):
        return (entry,)
    parts: list[Entry] = []
    kept: list[RowData] = []
    for row, moves in zip(rows, moved, strict=True):
        if not moves:
            kept.append(row)
            continue
        if kept:
            parts.append(_with_rows(entry, EventType.UPDATE, tuple(kept)))
            kept = []
        parts.append(_with_rows(entry, EventType.DELETE, (RowData(before=row.before),)))
        parts.append(_with_rows(entry, EventType.INSERT, (RowData(after=_inserted(row.after)),)))
    if kept:
        parts.append(_with_rows(entry, EventType.UPDATE, tuple(kept)))
    return tuple(parts)


class KeyChangeSplitter(RowsEncoderStep):
    """A destination's encoder with ``mq.key_change: split`` applied before it: each entry
    goes through ``split_key_changes``, then each part through ``encoder``, in order. It
    declines ``ahead`` (the split reads row images; it is installed only where partitions are
    hashed, where the FlatMessage encoders decline to render ahead anyway)."""

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        parts = split_key_changes(entry, self.placement)
        encode = self.encoder.encode
        if len(parts) == 1:
            return encode(parts[0], batch_id, ts)
        return [record for part in parts for record in encode(part, batch_id, ts)]


def with_key_change(
    mode: Literal["split", "update"], encoder: RowsEncoder, placement: Placement
) -> RowsEncoder:
    """``encoder`` as ``mq.key_change`` wants it: wrapped in a ``KeyChangeSplitter`` for
    ``split`` where some table's partition may depend on row values; unchanged for ``update``
    (canal's UPDATE hashed by its new key) and where no partition hash is configured."""
    if mode == "update" or not placement.partitions.hashing:
        return encoder
    return KeyChangeSplitter(encoder, placement)


def _with_rows(entry: Entry, event_type: EventType, rows: tuple[RowData, ...]) -> Entry:
    """A part of ``entry``: its binlog position and transaction, these rows of this kind."""
    change = entry.row_change
    assert change is not None
    header = entry.header
    if event_type is not header.event_type:
        header = replace(header, event_type=event_type)
    return replace(
        entry, header=header, row_change=replace(change, event_type=event_type, row_datas=rows)
    )


def _moves(row: RowData, columns: Sequence[str]) -> bool:
    """Whether a value the partition hash reads differs between the row's images."""
    before, after = _image(row, before=True), _image(row, before=False)
    for column in columns:
        old, new = hashed_value(before, column), hashed_value(after, column)
        if old is not None and new is not None and old != new:
            return True
    return False


def _key_names(row: RowData) -> tuple[str, ...]:
    """The primary-key columns as the FlatMessage names them: the after image's key flags."""
    plan = _plan(row, before=False)
    if plan is not None:
        return tuple(n for n, key in zip(plan.names, plan.keys, strict=True) if key)
    return tuple(c.name for c in row.after if c.is_key)


def _image(row: RowData, *, before: bool) -> Row:
    """One image of a row as names -> texts (None for NULL). Rows straight from the parser
    carry their decoded values: read those, no Column objects made for rows that stay."""
    plan = _plan(row, before=before)
    if plan is not None:
        values = getattr(row, "old_values" if before else "new_values")
        return dict(zip(plan.names, values, strict=True))
    columns = row.before if before else row.after
    return {c.name: None if c.is_null else c.value for c in columns}


def _plan(row: RowData, *, before: bool) -> Any:
    """The decoded image's plan of a parser row (``bridge.parse.binlog.rows.DecodedRow``, which this
    package may not import), or None for a row of Columns or one without that image."""
    return getattr(row, "old_plan" if before else "new_plan", None)


def _inserted(after: tuple[Column, ...]) -> tuple[Column, ...]:
    """An UPDATE's after image as an INSERT's: every column counts as set (canal's
    ``isUpdate`` is true on every column of an INSERT)."""
    return tuple(c if c.updated else replace(c, updated=True) for c in after)
