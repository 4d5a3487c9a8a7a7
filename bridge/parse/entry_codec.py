"""Entries as ``marshal`` data, to carry them from the binlog reader's process to the instance's.

``marshal`` writes tuples of strings, ints and None at C speed but knows no classes, so an
Entry travels as a flat tuple, enums as their values. Row images stay what the parser decoded
(a plan, then tuples of texts and sql types): a plan is sent once, by number, the first time a
batch uses it, and every later row names it by that number. Rows the parser built as Columns
(rare) travel column by column. Given the destination's ``AheadEncoding``, the rows of a rows
event travel as what its encoder wrote ahead of the batch instead (a few bytes objects, no row
objects on either side). ``EntryDecoder`` rebuilds entries equal to the originals, or to the
originals with their rows encoded.

An entry's flat tuple (``FlatEntry``) holds, in order: the header's logfile name, offset,
server id, execute time, schema, table, event type value (or None), GTID and event length;
the entry type's value; the transaction id; and None or the row change as (event type value,
is_ddl, sql, ddl schema, rows). The binlog reader's converter writes the commonest entries in
this form directly (``EventConverter.flat_entries``); ``encode`` passes them on as they are.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence
from typing import Any

from bridge.entry import (
    AheadEncode,
    Column,
    EncodedAhead,
    EncodedRows,
    Entry,
    EntryType,
    EventType,
    Header,
    RowChange,
    RowData,
    row_images,
)
from bridge.parse.binlog.rows import DecodedRow, Plan, decoded_row

NO_PLAN = -1

# One column of a plan without its decoder: (index, name, is_key, mysql_type, null sql_type).
PlanColumn = tuple[int, str, bool, str, int]
# An entry as it crosses (module docstring), and where it holds what is read of it elsewhere.
FlatEntry = tuple[Any, ...]
FLAT_LOGFILE_NAME, FLAT_LOGFILE_OFFSET, FLAT_SCHEMA_NAME, FLAT_TABLE_NAME = 0, 1, 4, 5
FLAT_EVENT_TYPE, FLAT_EVENT_LENGTH, FLAT_ENTRY_TYPE, FLAT_CHANGE = 6, 8, 9, 11
_EVENT_TYPES = {t.value: t for t in EventType}
# The entry type of a FlatEntry's value for it (its FLAT_ENTRY_TYPE item).
FLAT_ENTRY_TYPES = {t.value: t for t in EntryType}


# Enum values are read as ``_value_`` here: ``.value`` is a Python-level property, three
# calls per entry.


class EntryEncoder:
    """Turns batches of entries into ``marshal`` bytes; remembers the plans already sent."""

    def __init__(self, encode_ahead: AheadEncode | None = None) -> None:
        """``encode_ahead``: ``AheadEncoding.encode``, or None to send every change's rows."""
        self._encode_ahead = encode_ahead
        self._plan_ids: dict[Plan, int] = {}
        self._new_plans: list[tuple[int, tuple[PlanColumn, ...]]] = []

    def encode(self, entries: Sequence[Entry | FlatEntry]) -> bytes:
        """A batch of entries, some perhaps already flat (the converter's)."""
        flat = [entry if isinstance(entry, tuple) else self._entry(entry) for entry in entries]
        plans, self._new_plans = self._new_plans, []
        return marshal.dumps((plans, flat))

    def _plan_id(self, plan: Plan | None) -> int:
        if plan is None:
            return NO_PLAN
        plan_id = self._plan_ids.get(plan)
        if plan_id is None:
            plan_id = self._plan_ids[plan] = len(self._plan_ids)
            columns = tuple((c[1], c[2], c[3], c[4], c[5]) for c in plan.columns)
            self._new_plans.append((plan_id, columns))
        return plan_id

    def _entry(self, entry: Entry) -> FlatEntry:
        h = entry.header
        change = entry.row_change
        flat_change = None
        if change is not None:
            # A tuple carries encoded rows (their parts), a list row images.
            encode = self._encode_ahead
            rows: Any = change.row_datas
            if type(rows) is EncodedAhead:
                rows = rows.parts
            else:
                rows = encode(h, change) if encode is not None else None
            if rows is None:
                rows = [self._row(row) for row in row_images(change)]
            flat_change = (
                change.event_type._value_,
                change.is_ddl,
                change.sql,
                change.ddl_schema_name,
                rows,
            )
        return (
            h.logfile_name,
            h.logfile_offset,
            h.server_id,
            h.execute_time,
            h.schema_name,
            h.table_name,
            None if h.event_type is None else h.event_type._value_,
            h.gtid,
            h.event_length,
            entry.entry_type._value_,
            entry.transaction_id,
            flat_change,
        )

    def _row(self, row: RowData) -> tuple[Any, ...]:
        if type(row) is DecodedRow:
            return (
                self._plan_id(row.old_plan),
                row.old_values,
                row.old_types,
                self._plan_id(row.new_plan),
                row.new_values,
                row.new_types,
            )
        return (_columns(row.before), _columns(row.after))


def _columns(columns: Sequence[Column]) -> tuple[tuple[Any, ...], ...]:
    return tuple(
        (c.index, int(c.sql_type), c.name, c.is_key, c.updated, c.is_null, c.value, c.mysql_type)
        for c in columns
    )


class EntryDecoder:
    """Rebuilds the entries of ``EntryEncoder``'s batches, in order."""

    def __init__(self, revive: Callable[..., EncodedRows] | None = None) -> None:
        """``revive``: ``AheadEncoding.revive``, given when the encoder sends encoded rows."""
        self._plans: dict[int, Plan | None] = {NO_PLAN: None}
        self._revive = revive

    def decode(self, data: bytes) -> list[Entry]:
        plans, flat = marshal.loads(data)
        for plan_id, columns in plans:
            self._plans[plan_id] = Plan.described(columns)
        entry_types, entry = FLAT_ENTRY_TYPES, self._entry
        entries: list[Entry] = []
        append = entries.append
        for item in flat:
            if item[FLAT_CHANGE] is None and item[FLAT_EVENT_TYPE] is None:
                # A BEGIN, an END or a heartbeat (two thirds of the entries of one-row
                # transactions): the header is the first nine items as they are.
                append(Entry(Header(*item[:9]), entry_types[item[FLAT_ENTRY_TYPE]], None, item[10]))
            else:
                append(entry(*item))
        return entries

    def entry(self, flat: FlatEntry) -> Entry:
        """One entry of a flat tuple (its plans, if any, already decoded)."""
        return self._entry(*flat)

    def _entry(  # noqa: PLR0917  (one positional field per flat tuple item)
        self,
        logfile_name: str,
        logfile_offset: int,
        server_id: int,
        execute_time: int,
        schema_name: str,
        table_name: str,
        event_type: str | None,
        gtid: str,
        event_length: int,
        entry_type: str,
        transaction_id: str,
        change: tuple[Any, ...] | None,
    ) -> Entry:
        header = Header(
            logfile_name,
            logfile_offset,
            server_id,
            execute_time,
            schema_name,
            table_name,
            None if event_type is None else _EVENT_TYPES[event_type],
            gtid,
            event_length,
        )
        row_change = None
        if change is not None:
            kind, is_ddl, sql, ddl_schema_name, rows = change
            row_change = RowChange(
                _EVENT_TYPES[kind],
                is_ddl,
                sql,
                ddl_schema_name,
                self._encoded(rows) if type(rows) is tuple else self._rows(rows),
            )
        return Entry(header, FLAT_ENTRY_TYPES[entry_type], row_change, transaction_id)

    def _encoded(self, parts: tuple[Any, ...]) -> EncodedRows:
        if self._revive is None:
            raise TypeError("encoded rows arrived, but this decoder was given no revive")
        return self._revive(*parts)

    def _rows(self, rows: list[tuple[Any, ...]]) -> tuple[RowData, ...]:
        plans = self._plans
        built: list[RowData] = []
        for row in rows:
            if len(row) == 6:
                old_plan, old_values, old_types, new_plan, new_values, new_types = row
                built.append(
                    decoded_row(
                        plans[old_plan],
                        old_values,
                        old_types,
                        plans[new_plan],
                        new_values,
                        new_types,
                    )
                )
            else:
                before, after = row
                built.append(
                    RowData(tuple(Column(*c) for c in before), tuple(Column(*c) for c in after))
                )
        return tuple(built)


def entry_of(flat: FlatEntry) -> Entry:
    """The entry a flat tuple without rows stands for (a transaction's BEGIN or END): what the
    parser's retry reads its position from."""
    if flat[FLAT_CHANGE] is not None:
        raise ValueError("entry_of takes a flat entry without a row change")
    return EntryDecoder().entry(flat)


def binlog_end(entry: Entry | FlatEntry) -> tuple[str, int]:
    """Where ``entry``'s event ends in the binlog: (file, offset + length)."""
    if isinstance(entry, tuple):
        return entry[FLAT_LOGFILE_NAME], entry[FLAT_LOGFILE_OFFSET] + entry[FLAT_EVENT_LENGTH]
    header = entry.header
    return header.logfile_name, header.logfile_offset + header.event_length
