"""The RowsEncoder contract, run against every registered format (built by
``bridge.mq.formats.rows_encoder``, as a destination builds it, compiled where the module
is loaded and in pure Python) and against the example of ``RowsEncoder``'s docstring, run
as it is written there.

What it can say of every format: for a batch of row changes over several tables (insert,
update, delete; rows spread over partitions by key, by table, or not at all) and a DDL,

* every row is in exactly one record, on its table's topic and its row's partition;
* the rows of each topic and partition come in batch order (a DDL written inline too);
* a record's key is empty (a record of many tables) or names its table, with the primary
  key its rows share.

What a record looks like inside is the format's: a reader per format recovers its rows.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from bridge import native
from bridge.config import MqConfig
from bridge.entry import AheadEncoding, Entry, EventType, RowData
from bridge.mq import formats, records
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.formats import ENCODERS, Loaded, placement_of, rows_encoder
from bridge.mq.records import OutgoingRecord, Placement, RecordBuilder, RowsEncoder
from bridge.mq.routing import record_key
from tests.unit.mq.conftest import EntryMaker, change_of, decode

TS = 1_700_000_000_123


@dataclass(frozen=True)
class Mark:
    """What the contract follows of a row (or a DDL): its table, kind and key."""

    schema: str
    table: str
    kind: str  # INSERT, UPDATE, DELETE, or DDL
    id: str | None  # the row's primary key ("id"), None for a DDL


Reader = Callable[[OutgoingRecord], list[Mark]]


def read_flat_message(record: OutgoingRecord) -> list[Mark]:
    message = orjson.loads(record.value)
    schema, table = message["database"], message["table"]
    if message["isDdl"]:
        return [Mark(schema, table, "DDL", None)]
    return [Mark(schema, table, message["type"], row["id"]) for row in message["data"]]


def read_protobuf(record: OutgoingRecord) -> list[Mark]:
    marks = []
    for entry in decode(record)[2]:
        if entry.entryType != pb.ROWDATA:
            continue  # transaction begin/end
        change, header = change_of(entry), entry.header
        schema, table = header.schemaName, header.tableName
        if change.isDdl:
            marks.append(Mark(schema, table, "DDL", None))
            continue
        kind = pb.EventType.Name(change.eventType)
        for row in change.rowDatas:
            image = row.beforeColumns if change.eventType == pb.DELETE else row.afterColumns
            marks.append(Mark(schema, table, kind, next(c.value for c in image if c.isKey)))
    return marks


def read_row_json(record: OutgoingRecord) -> list[Mark]:
    schema, _, table = record.key.decode().partition(":")[0].partition(".")
    value = orjson.loads(record.value)
    return [Mark(schema, table, value["type"], value["row"]["id"])]


READERS: dict[str, Reader] = {
    "flat_message": read_flat_message,
    "protobuf": read_protobuf,
    "row_json": read_row_json,  # the docstring's example
}


def docstring_example() -> dict[str, formats.EncoderFactory]:
    """The example of ``RowsEncoder``'s docstring, run as written: what it registers."""
    doc = inspect.getdoc(RowsEncoder) or ""
    code = textwrap.dedent(doc.split("::", 1)[1].split("\n\nEvery", 1)[0])
    registry: dict[str, formats.EncoderFactory] = {}
    namespace: dict[str, Any] = {
        **vars(records),
        "AheadEncoding": AheadEncoding,
        "EventType": EventType,
        "orjson": orjson,
        "record_key": record_key,
        "ENCODERS": registry,
    }
    exec(code, namespace)
    return registry


def test_every_format_has_a_reader_and_the_example_registers_one() -> None:
    assert set(READERS) == {*ENCODERS, *docstring_example()}


def paths() -> Iterator[Any]:
    for name in ENCODERS:
        yield pytest.param(name, None, id=f"{name}-python")
        if native.module is not None and name == "flat_message":
            yield pytest.param(name, Loaded.MODULE, id=f"{name}-compiled")
    yield pytest.param("row_json", None, id="docstring-example")


ROUTINGS = {
    "fixed": {"topic": "t", "partitions": 1},
    "fixed-partition": {"topic": "t", "partitions": 4, "partition": 2},
    "routed": {
        "topic": "t",
        "partitions": 3,
        # shop.orders by key, crm's tables by table name, shop.users by none (partition 0)
        "dynamic_topic": r"orders:shop\.orders,crm",
        "partition_hash": r"shop\.orders:id,crm\..*",
        "dynamic_topic_partitions": "crm:5",
    },
}


def batch(make: EntryMaker) -> list[Entry]:
    def update(*ids: str) -> Entry:
        rows = [RowData(before=make.order(i, "old"), after=make.order(i, "new")) for i in ids]
        return make.rows(EventType.UPDATE, rows)

    def delete(*ids: str, schema: str = "shop", table: str = "orders") -> Entry:
        rows = [RowData(before=make.order(i)) for i in ids]
        return make.rows(EventType.DELETE, rows, schema, table)

    return [
        make.begin(),
        make.insert("1", "2", "3", "4", "5"),
        make.insert("7", schema="shop", table="users"),
        update("2", "5"),
        make.insert("10", "11", schema="crm", table="accounts"),
        delete("1"),
        make.ddl("ALTER TABLE orders ADD c INT"),
        make.insert("6"),
        delete("10", schema="crm", table="accounts"),
        make.insert("12", schema="crm", table="leads"),
        make.end(),
    ]


def expected_marks(entries: list[Entry]) -> list[Mark]:
    marks = []
    for entry in entries:
        change, h = entry.row_change, entry.header
        if change is None:
            continue
        if change.is_ddl:
            marks.append(Mark(h.schema_name, h.table_name, "DDL", None))
            continue
        for row in change.row_datas:
            image = row.before if change.event_type is EventType.DELETE else row.after
            key = next(c.value for c in image if c.is_key)
            marks.append(Mark(h.schema_name, h.table_name, change.event_type.name, key))
    return marks


def where_it_goes(placement: Placement, mark: Mark) -> tuple[str, int]:
    topic = placement.topics.topic_for(mark.schema, mark.table)
    count = placement.partition_counts.count_for(topic)
    row = None if mark.id is None else {"id": mark.id}
    partition = placement.partitions.partition_for(mark.schema, mark.table, row, ["id"], count)
    return topic, partition


@pytest.mark.parametrize("routing", list(ROUTINGS))
@pytest.mark.parametrize(("name", "compiled"), list(paths()))
def test_the_contract(
    make: EntryMaker,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    compiled: Loaded | None,
    routing: str,
) -> None:
    if name in ENCODERS:
        mq = MqConfig.model_validate({**ROUTINGS[routing], "format": name})
    else:  # the example, registered as its docstring says (the config takes no such name)
        for added, factory in docstring_example().items():
            monkeypatch.setitem(ENCODERS, added, factory)
        monkeypatch.setattr(formats, "format_name", lambda _: name)
        mq = MqConfig.model_validate(ROUTINGS[routing])
    encoder = rows_encoder(mq, compiled=compiled)
    entries = batch(make)
    built = RecordBuilder(encoder).build(entries, 1, TS)
    placement = placement_of(mq)
    read = READERS[name]

    # Every row in one record, on its table's topic and its row's partition; per topic and
    # partition in batch order.
    got: dict[tuple[str, int], list[Mark]] = {}
    for record in built:
        marks = read(record)
        assert marks, "a record without rows nor DDL"
        for mark in marks:
            assert (record.topic, record.partition) == where_it_goes(placement, mark), mark
        got.setdefault((record.topic, record.partition), []).extend(marks)
        assert_key(record, marks)
    expected = expected_marks(entries)
    if not any(mark.kind == "DDL" for marks in got.values() for mark in marks):
        expected = [mark for mark in expected if mark.kind != "DDL"]  # left out by the format
    want: dict[tuple[str, int], list[Mark]] = {}
    for mark in expected:
        want.setdefault(where_it_goes(placement, mark), []).append(mark)
    assert got == want
    if routing == "routed":
        assert len(want) >= 5, "the batch spreads over several topics and partitions"


def assert_key(record: OutgoingRecord, marks: list[Mark]) -> None:
    """Empty (a record of many tables), or the table's, with the key its rows share."""
    if not record.key:
        return
    ((schema, table),) = {(mark.schema, mark.table) for mark in marks}
    ids = {mark.id for mark in marks}
    shared = [ids.pop()] if len(ids) == 1 and None not in ids else []
    assert record.key == record_key(schema, table, shared)
