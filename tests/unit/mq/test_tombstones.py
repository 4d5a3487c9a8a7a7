"""mq.tombstones: a null-value record after each DELETE record keyed by its row, on the same
topic and partition, in the pure-Python and the compiled FlatMessage paths alike."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from bridge.config import MqConfig
from bridge.entry import Column, EventType, RowData
from bridge.mq.formats import record_builder, rows_encoder
from bridge.mq.records import OutgoingRecord
from bridge.parse.binlog.rows import Plan, decoded_row
from tests.native_paths import compiled_module, records_both_ways
from tests.unit.mq.conftest import EntryMaker

BATCH, TS = 5, 1_700_000_000_555
HASHED = MqConfig(topic="t", partitions=3, partition_hash=r"shop\..*:$pk$", tombstones=True)


def build(config: MqConfig, *entries: object) -> list[OutgoingRecord]:
    return record_builder(config, compiled=None).build(list(entries), BATCH, TS)  # type: ignore[arg-type]


def summary(records: list[OutgoingRecord]) -> list[tuple[int, str, str]]:
    """(partition, key, type or TOMBSTONE) per record."""
    return [
        (
            r.partition,
            r.key.decode(),
            "TOMBSTONE" if r.value is None else orjson.loads(r.value)["type"],
        )
        for r in records
    ]


def test_each_deleted_row_is_followed_by_its_tombstone_on_its_partition(
    make: EntryMaker,
) -> None:
    ids = ("1", "2", "3", "4")
    inserts = [make.insert(i) for i in ids]
    delete = make.rows(EventType.DELETE, [RowData(before=make.order(i)) for i in ids])
    records = build(HASHED, *inserts, delete)
    deletes = [r for r in records if r.value is not None and b'"DELETE"' in r.value]
    tombstones = [r for r in records if r.value is None]
    assert len(deletes) == len(tombstones) == len(ids)  # one message per deleted row
    for delete_record, tombstone in zip(deletes, tombstones, strict=True):
        assert records.index(tombstone) == records.index(delete_record) + 1
        assert (tombstone.topic, tombstone.partition, tombstone.key, tombstone.headers) == (
            delete_record.topic,
            delete_record.partition,
            delete_record.key,
            delete_record.headers,
        )
    inserted = {r.key: r.partition for r in records if r.value and b'"INSERT"' in r.value}
    assert {t.key: t.partition for t in tombstones} == {
        f"shop.orders:{i}".encode(): inserted[f"shop.orders:{i}".encode()] for i in ids
    }


def test_without_tombstones_a_delete_is_one_message_and_nothing_more(make: EntryMaker) -> None:
    plain = MqConfig(topic="t")
    delete = make.rows(EventType.DELETE, [RowData(before=make.order(i)) for i in ("1", "2")])
    assert summary(build(plain, delete)) == [(0, "shop.orders", "DELETE")]


def test_rows_reach_the_instance_to_be_written_row_by_row() -> None:
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled module is not built")
    assert rows_encoder(MqConfig(topic="t"), compiled=module).ahead() is not None
    assert rows_encoder(MqConfig(topic="t", tombstones=True), compiled=module).ahead() is None


def test_inserts_updates_and_ddl_get_none(make: EntryMaker) -> None:
    config = MqConfig(topic="t", tombstones=True)
    before, after = make.order("1", note="a"), make.order("1", note="b")
    update = make.rows(EventType.UPDATE, [RowData(before=before, after=after)])
    records = build(config, make.insert("1"), update, make.ddl("ALTER TABLE orders ADD c INT"))
    assert all(r.value is not None for r in records)


def test_a_table_without_a_key_gets_no_tombstone(make: EntryMaker) -> None:
    config = MqConfig(topic="t", tombstones=True)
    keyless: tuple[Column, ...] = (make.col("note", "x"),)
    delete = make.rows(EventType.DELETE, [RowData(before=keyless)], table="log")
    # Keyed by its table alone: a tombstone would erase every record keyed so.
    assert summary(build(config, delete)) == [(0, "shop.log", "DELETE")]


def test_the_delete_half_of_a_key_change_gets_its_tombstone(make: EntryMaker) -> None:
    before = make.order("1")
    after = (make.col("id", "2", key=True, updated=True), *make.order("2")[1:])
    update = make.rows(EventType.UPDATE, [RowData(before=before, after=after)])
    kinds = [kind for _, _, kind in summary(build(HASHED, update))]
    assert kinds == ["DELETE", "TOMBSTONE", "INSERT"]


def test_compiled_records_equal_the_pure_python_ones(make: EntryMaker) -> None:
    if compiled_module() is None:
        pytest.skip("the compiled module is not built")
    ids = ("1", "2", "3")
    plan = Plan.described([(0, "id", True, "int(11)", 4), (1, "note", False, "varchar(9)", 12)])
    entries = [
        make.rows(EventType.INSERT, [decoded_row(None, (), (), plan, ("0", "x"), (4, 12))]),
        make.rows(
            EventType.DELETE, [decoded_row(plan, (i, None), (4, 12), None, (), ()) for i in ids]
        ),
    ]
    config = MqConfig(topic="t", tombstones=True)  # where the compiled path writes records
    python, compiled, counting = records_both_ways(entries, config)
    assert compiled == python
    assert counting.written == 1 + len(ids) and counting.declined == 0  # a DELETE per row
    assert summary(compiled)[1:] == [
        (0, f"shop.orders:{i}", kind) for i in ids for kind in ("DELETE", "TOMBSTONE")
    ]


def test_tombstones_with_protobuf_are_refused_in_one_line() -> None:
    with pytest.raises(ValidationError) as raised:
        MqConfig(topic="t", format="protobuf", tombstones=True)
    (error,) = raised.value.errors()
    assert "tombstones needs format flat_message" in error["msg"]
    assert "remove tombstones" in error["msg"]
