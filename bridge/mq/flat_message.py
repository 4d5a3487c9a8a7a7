"""canal's FlatMessage (the ``canal-json`` wire format) built from a batch of Entries.

Verified against canal's ``MQMessageUtils.messageConverter`` / ``messagePartition`` and the
Kafka producer's fastjson serialisation:

* one FlatMessage per ROWDATA entry (one binlog rows event, or one DDL), in batch order;
  entries of the same table are *not* merged. TRANSACTIONBEGIN/END are skipped (and so are
  HEARTBEATs, which canal never hands to the MQ layer).
* ``pkNames`` come from the key columns of the first row, null when there are none or for DDL;
  ``sqlType``/``mysqlType``/``data``/``old`` are null when empty, so DDL has them all null and
  ``old`` is null for everything but UPDATE. Nulls are written (``WriteMapNullValue``).
* keys are serialised in fastjson's order, which is alphabetical.
* a message is split by partition keeping row order within each part; parts come out in
  ascending partition order.

One deliberate difference: canal accumulates the set of updated columns across the rows of an
UPDATE event, so a later row's ``old`` may list columns that did not change in that row. We
compute it per row, which is what ``old`` promises; a consumer merging ``old`` over ``data``
gets the same before-image either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from bridge.entry import (
    DML_EVENT_TYPES,
    Column,
    Entry,
    EntryType,
    EventType,
    Header,
    RowChange,
    RowData,
    row_images,
)
from bridge.model import value_class
from bridge.mq.rendering import message_gtid
from bridge.mq.routing import PartitionRouter, record_key

RowDict = dict[str, str | None]

# Entries that make no message: canal skips transaction markers (and never sees heartbeats).
SKIPPED_ENTRY_TYPES = (EntryType.TRANSACTIONBEGIN, EntryType.TRANSACTIONEND, EntryType.HEARTBEAT)


@value_class
class FlatMessage:
    """canal's FlatMessage; field names are Pythonic, ``to_dict`` gives canal's JSON names."""

    id: int
    database: str
    table: str
    pk_names: tuple[str, ...] | None
    is_ddl: bool
    type: str
    es: int
    ts: int
    sql: str
    gtid: str
    sql_type: dict[str, int] | None
    mysql_type: dict[str, str] | None
    data: tuple[RowDict, ...] | None
    old: tuple[RowDict, ...] | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in canal's (fastjson's alphabetical) order; arrays as lists."""
        fields = self._json_fields()
        for key in ("data", "old", "pkNames"):
            if fields[key] is not None:
                fields[key] = list(fields[key])
        return fields

    def to_json(self) -> bytes:
        # orjson writes tuples as arrays: no list copies of the rows, unlike to_dict().
        return orjson.dumps(self._json_fields())

    def _json_fields(self) -> dict[str, Any]:
        """canal's JSON names, in fastjson's alphabetical order; arrays still tuples."""
        return {
            "data": self.data,
            "database": self.database,
            "es": self.es,
            "gtid": self.gtid,
            "id": self.id,
            "isDdl": self.is_ddl,
            "mysqlType": self.mysql_type,
            "old": self.old,
            "pkNames": self.pk_names,
            "sql": self.sql,
            "sqlType": self.sql_type,
            "table": self.table,
            "ts": self.ts,
            "type": self.type,
        }

    def with_rows(self, data: Sequence[RowDict], old: Sequence[RowDict] | None) -> FlatMessage:
        """A copy carrying only ``data`` (and the matching ``old``) rows."""
        return replace(self, data=tuple(data) or None, old=tuple(old) if old else None)


@dataclass(frozen=True, slots=True)
class SourcedMessage:
    """A FlatMessage with the header of the entry it came from (for record headers, errors)."""

    message: FlatMessage
    header: Header


def build_flat_messages(entries: Iterable[Entry], batch_id: int, ts: int) -> list[SourcedMessage]:
    """One FlatMessage per ROWDATA entry of the batch, in order. ``ts`` is the build time (ms)."""
    built: list[SourcedMessage] = []
    for entry in entries:
        if entry.entry_type in SKIPPED_ENTRY_TYPES or entry.row_change is None:
            continue
        message = flat_message_of(entry, entry.row_change, batch_id, ts)
        built.append(SourcedMessage(message, entry.header))
    return built


def flat_message_of(entry: Entry, change: RowChange, batch_id: int, ts: int) -> FlatMessage:
    """The FlatMessage of one ROWDATA entry (``change`` is its row change)."""
    header = entry.header
    if change.is_ddl or change.event_type not in DML_EVENT_TYPES:
        return FlatMessage(
            id=batch_id,
            database=header.schema_name,
            table=header.table_name,
            pk_names=None,
            is_ddl=change.is_ddl,
            type=change.event_type.value,
            es=header.execute_time,
            ts=ts,
            sql=change.sql,
            gtid=message_gtid(header),
            sql_type=None,
            mysql_type=None,
            data=None,
            old=None,
        )
    sql_type: dict[str, int] = {}
    mysql_type: dict[str, str] = {}
    data: list[RowDict] = []
    old: list[RowDict] = []
    pk_names: list[str] | None = None
    is_delete = change.event_type is EventType.DELETE
    is_update = change.event_type is EventType.UPDATE
    rows = row_images(change)
    if rows and hasattr(rows[0], "new_plan") and all(type(r) is type(rows[0]) for r in rows):
        pk_names = _decoded_rows(rows, is_delete, is_update, sql_type, mysql_type, data, old)
    else:
        for index, row_data in enumerate(rows):
            names, values, sql_types, mysql_types, keys = _image(row_data, is_delete)
            if index == 0:
                pk_names = [name for name, key in zip(names, keys, strict=True) if key] or None
            sql_type.update(zip(names, sql_types, strict=True))
            mysql_type.update(zip(names, mysql_types, strict=True))
            row: RowDict = dict(zip(names, values, strict=True))
            if row:
                data.append(row)
            if is_update:
                old.append(_old_values(row_data, names, values))
    return FlatMessage(
        batch_id,
        header.schema_name,
        header.table_name,
        tuple(pk_names) if pk_names else None,
        False,
        change.event_type.value,
        header.execute_time,
        ts,
        change.sql,
        message_gtid(header),
        sql_type or None,
        mysql_type or None,
        tuple(data) or None,
        tuple(old) or None,
    )


def _text(column: Column) -> str | None:
    return None if column.is_null else column.value


# One image as FlatMessage needs it: names, texts (None for NULL), sql types, MySQL types, keys.
_Image = tuple[Sequence[str], Sequence[str | None], Sequence[int], Sequence[str], Sequence[bool]]


def _decoded_rows(  # noqa: PLR0917  (fills the caller's collections, once per message)
    rows: Sequence[Any],
    is_delete: bool,
    is_update: bool,
    sql_type: dict[str, int],
    mysql_type: dict[str, str],
    data: list[RowDict],
    old: list[RowDict],
) -> list[str] | None:
    """Rows straight from the parser (``bridge.parse.binlog.rows.DecodedRow``) carry their decoded
    images (plan, values, sql types per image): read those rather than Column objects. Same
    result as the generic loop: the last row's sql types win, MySQL types are per table
    definition. Returns the key names."""
    pk_names: list[str] | None = None
    last_plan: Any = None
    last_types: Sequence[int] = ()
    names: Sequence[str] = ()
    for index, row_data in enumerate(rows):
        if is_delete:
            plan, values, sql_types = row_data.old_plan, row_data.old_values, row_data.old_types
        else:
            plan, values, sql_types = row_data.new_plan, row_data.new_values, row_data.new_types
        if plan is None:
            names = ()
        else:
            if plan is not last_plan:
                last_plan, names, last_types = plan, plan.names, ()
                mysql_type.update(zip(names, plan.mysql_types, strict=True))
            if sql_types != last_types:  # rows mostly repeat their types: skip the update
                sql_type.update(zip(names, sql_types, strict=True))
                last_types = sql_types
            if values:
                data.append(dict(zip(names, values, strict=True)))
            if index == 0:
                pk_names = [n for n, key in zip(names, plan.keys, strict=True) if key] or None
        if is_update:
            old.append(_old_values(row_data, names, values))
    return pk_names


def _image(row_data: RowData, before: bool) -> _Image:
    """The before (DELETE) or after image of a row, from its Columns."""
    columns = row_data.before if before else row_data.after
    return (
        [c.name for c in columns],
        [_text(c) for c in columns],
        [c.sql_type for c in columns],
        [c.mysql_type for c in columns],
        [c.is_key for c in columns],
    )


def _old_values(row_data: Any, names: Sequence[str], values: Sequence[str | None]) -> RowDict:
    """An UPDATE row's ``old``: the before-image texts of the columns whose value changed."""
    if not hasattr(row_data, "old_plan"):
        updated = {c.name for c in row_data.after if c.updated}
        return {c.name: _text(c) for c in row_data.before if c.name in updated}
    if row_data.old_plan is None:
        return {}
    before_names, before_values = row_data.old_plan.names, row_data.old_values
    if before_names == names:
        return {
            name: old
            for name, old, new in zip(names, before_values, values, strict=True)
            if old != new
        }
    # Different present columns (MINIMAL/NOBLOB images): a column absent before is updated.
    olds = dict(zip(before_names, before_values, strict=True))
    updated = {
        name
        for name, new in zip(names, values, strict=True)
        if name not in olds or olds[name] != new
    }
    return {name: old for name, old in olds.items() if name in updated}


def partition_message(
    message: FlatMessage, router: PartitionRouter, partitions: int
) -> list[tuple[int, FlatMessage]]:
    """Split ``message`` by partition (canal's flat ``messagePartition``), ascending partitions.

    A message whose rows all land on one partition is returned as it is.
    """
    pk_names = message.pk_names or ()
    if message.is_ddl or not message.data:
        partition = router.partition_for(
            message.database, message.table, None, pk_names, partitions
        )
        return [(partition, message)]
    groups: dict[int, list[int]] = {}
    for index, row in enumerate(message.data):
        partition = router.partition_for(message.database, message.table, row, pk_names, partitions)
        groups.setdefault(partition, []).append(index)
    if len(groups) == 1:
        return [(next(iter(groups)), message)]
    return [(p, _select(message, groups[p])) for p in sorted(groups)]


def _select(message: FlatMessage, indexes: Sequence[int]) -> FlatMessage:
    data = message.data or ()
    old = message.old
    return message.with_rows([data[i] for i in indexes], [old[i] for i in indexes] if old else None)


def split_rows(message: FlatMessage, max_bytes: int) -> list[FlatMessage]:
    """Split ``message`` into consecutive row chunks whose JSON stays within ``max_bytes``.

    Greedy and exact: the size of a chunk is computed from the size of the row-less message
    plus each row's serialised size and the separating commas. A single row larger than the
    limit still makes a chunk of its own; the caller decides what to do with it. DDL and
    row-less messages are returned unchanged.
    """
    data = message.data
    if not data or len(message.to_json()) <= max_bytes:
        return [message]
    old = message.old
    empty = replace(message, data=(), old=() if old else None)
    base = len(empty.to_json())
    sizes = [
        len(orjson.dumps(row)) + (len(orjson.dumps(old[i])) + 1 if old else 0) + 1
        for i, row in enumerate(data)
    ]
    chunks: list[FlatMessage] = []
    start, total = 0, base
    for index, size in enumerate(sizes):
        # `size` counts a comma per list; the first row of a chunk needs none.
        first_cost = size - (2 if old else 1)
        if index > start and total + size > max_bytes:
            chunks.append(_select(message, range(start, index)))
            start, total = index, base
        total += first_cost if index == start else size
    chunks.append(_select(message, range(start, len(data))))
    return chunks


def message_key(message: FlatMessage) -> bytes:
    """The record key of a message: its rows' primary key when they all share one.

    A multi-row message whose rows have different keys (or a DDL) gets the table key
    ``database.table``. The key follows ``data``: the after-image, the before-image for DELETE.
    """
    if message.is_ddl or not message.data or not message.pk_names:
        return record_key(message.database, message.table)
    pk_names, data = message.pk_names, message.data
    if len(data) == 1:  # most rows events carry one row
        return record_key(message.database, message.table, [data[0].get(n) for n in pk_names])
    keys = {tuple(row.get(name) for name in pk_names) for row in data}
    if len(keys) != 1:
        return record_key(message.database, message.table)
    return record_key(message.database, message.table, next(iter(keys)))


def dead_letter_notice(
    message: FlatMessage, header: Header, *, topic: str, partition: int, size: int, limit: int
) -> bytes:
    """A small JSON saying what was too large and where it is in the binlog (rows left out)."""
    return orjson.dumps(
        {
            "reason": "oversize",
            "topic": topic,
            "partition": partition,
            "size": size,
            "limit": limit,
            "id": message.id,
            "database": message.database,
            "table": message.table,
            "type": message.type,
            "es": message.es,
            "rows": len(message.data or ()),
            "binlogFile": header.logfile_name,
            "binlogPosition": header.logfile_offset,
            "gtid": header.gtid,
        }
    )
