"""ProtobufMessageEncoder (``mq.flat_message: false``): records decoded back with the
generated classes, as canal's ``CanalMessageDeserializer`` reads them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import orjson
import pytest

from bridge.config import DEFAULT_MAX_RECORD_BYTES, MqConfig
from bridge.config.rules import DdlPolicy, OversizePolicy
from bridge.entry import Entry, EventType, Header, RowData
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.exceptions import RecordTooLarge
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.formats import record_builder
from bridge.mq.protobuf_encoder import ProtobufMessageEncoder
from bridge.mq.records import OutgoingRecord, Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from tests.unit.mq.conftest import EntryMaker, change_of, decode

TS = 1_700_000_000_123


def placement(
    dynamic: str = "", hash_rules: str = "", partitions: int = 1, max_bytes: int = 0
) -> Placement:
    return Placement(
        CanalTopicRouter("example", dynamic),
        CanalPartitionRouter(hash_rules),
        TopicPartitions(partitions),
        max_bytes or DEFAULT_MAX_RECORD_BYTES,
    )


def builder(
    dynamic: str = "",
    hash_rules: str = "",
    partitions: int = 1,
    *,
    ddl: DdlPolicy | None = None,
    oversize: OversizePolicy | None = None,
    max_bytes: int = 0,
) -> RecordBuilder:
    where = placement(dynamic, hash_rules, partitions, max_bytes)
    encoder = ProtobufMessageEncoder(where, ddl, oversize, dynamic_topic=bool(dynamic))
    return RecordBuilder(encoder)


def ids(entries: Sequence[pb.Entry]) -> list[list[str]]:
    """The ``id`` values of each entry's rows (before image for DELETE)."""
    out = []
    for entry in entries:
        change = change_of(entry)
        delete = change.eventType == pb.DELETE
        out.append(
            [
                next(c.value for c in (r.beforeColumns if delete else r.afterColumns))
                for r in change.rowDatas
            ]
        )
    return out


def test_one_record_per_batch_with_every_entry_in_order(make: EntryMaker) -> None:
    begin, end = make.begin(), make.end()
    insert = make.insert("1", "2")
    batch = [begin, insert, make.heartbeat(), make.insert("3", table="lines"), end]
    (record,) = builder().build(batch, 41, TS)
    assert (record.topic, record.partition, record.key) == ("example", 0, b"")
    assert record.headers[1] == ("binlog.position", str(end.header.logfile_offset).encode())
    packet, batch_id, entries = decode(record)
    # canal's raw spelling: no version, the batch id in the body.
    assert not packet.HasField("version")
    assert batch_id == 41
    kinds = [pb.EntryType.Name(e.entryType) for e in entries]
    assert kinds == ["TRANSACTIONBEGIN", "ROWDATA", "ROWDATA", "TRANSACTIONEND"]
    assert pb.TransactionBegin.FromString(entries[0].storeValue) == pb.TransactionBegin()
    assert pb.TransactionEnd.FromString(entries[3].storeValue).transactionId == "77"
    header = entries[1].header
    assert header.version == 1
    assert (header.logfileName, header.logfileOffset) == (
        "mysql-bin.000003",
        insert.header.logfile_offset,
    )
    assert (header.serverId, header.executeTime, header.eventLength) == (1, 1_700_000_000_000, 100)
    assert (header.serverenCode, header.sourceType) == ("UTF-8", pb.MYSQL)
    assert (header.schemaName, header.tableName) == ("shop", "orders")
    assert [(p.key, p.value) for p in header.props] == [("rowsCount", "2")]
    assert not entries[0].header.props  # markers carry no rowsCount, nor an event type
    assert not entries[0].header.HasField("eventType")
    assert ids(entries[1:3]) == [["1", "2"], ["3"]]


def test_columns_carry_canals_fields(make: EntryMaker) -> None:
    insert = make.rows(EventType.INSERT, [RowData(after=make.order("1", note=None))])
    before, after = make.order("1", note="old"), make.order("1", note="new")
    after = (after[0], after[1], make.col("note", "new", updated=True, index=2))
    update = make.rows(EventType.UPDATE, [RowData(before=before, after=after)])
    delete = make.rows(EventType.DELETE, [RowData(before=make.order("1"))])
    (record,) = builder().build([insert, update, delete], 1, TS)
    entries = decode(record)[2]
    inserted, updated, deleted = (change_of(e) for e in entries)
    assert [pb.EventType.Name(c.eventType) for c in (inserted, updated, deleted)] == [
        "INSERT",
        "UPDATE",
        "DELETE",
    ]
    assert all(c.HasField("isDdl") and not c.isDdl for c in (inserted, updated, deleted))
    (row,) = inserted.rowDatas
    assert not row.beforeColumns
    key, region, note = row.afterColumns
    assert (key.name, key.isKey, key.sqlType, key.mysqlType, key.value) == (
        "id",
        True,
        -5,
        "bigint(20)",
        "1",
    )
    assert not region.isKey and region.HasField("isNull") and not region.isNull
    assert (note.isNull, note.value) == (True, "")
    (row,) = updated.rowDatas
    assert [c.value for c in row.beforeColumns] == ["1", "eu", "old"]
    assert [(c.name, c.updated) for c in row.afterColumns] == [
        ("id", False),
        ("region", False),
        ("note", True),
    ]
    assert row.afterColumns[2].index == 2
    (row,) = deleted.rowDatas
    assert [c.value for c in row.beforeColumns] == ["1", "eu", "n"] and not row.afterColumns


def test_ddl_entry(make: EntryMaker) -> None:
    (record,) = builder().build([make.ddl("ALTER TABLE orders ADD x INT")], 1, TS)
    (entry,) = decode(record)[2]
    change = change_of(entry)
    assert (change.isDdl, change.sql, change.ddlSchemaName) == (
        True,
        "ALTER TABLE orders ADD x INT",
        "shop",
    )
    assert change.eventType == pb.ALTER and not change.rowDatas
    assert not entry.header.props


def test_ddl_policies(make: EntryMaker) -> None:
    batch = [make.insert("1"), make.ddl("TRUNCATE TABLE orders", EventType.TRUNCATE)]
    (record,) = builder(ddl=DdlPolicy.parse("skip")).build(batch, 1, TS)
    assert ids(decode(record)[2]) == [["1"]]
    rows, ddl = builder(ddl=DdlPolicy.parse("topic:schema")).build(batch, 1, TS)
    assert (rows.topic, ddl.topic, ddl.partition) == ("example", "schema", 0)
    assert change_of(decode(ddl)[2][0]).eventType == pb.TRUNCATE


def test_dynamic_topic_routes_entries_and_drops_transaction_markers(make: EntryMaker) -> None:
    batch = [
        make.begin(),
        make.insert("1"),
        make.insert("2", schema="crm", table="people"),
        make.insert("3"),
        make.end(),
    ]
    records = builder(dynamic="shop").build(batch, 8, TS)
    assert [r.topic for r in records] == ["shop", "example"]
    packet, batch_id, entries = decode(records[0])
    # canal's rebuilt-message spelling: version 1 and no batch id (a consumer reads 0).
    assert (packet.version, batch_id) == (1, 0)
    assert ids(entries) == [["1"], ["3"]]
    assert ids(decode(records[1])[2]) == [["2"]]


def test_key_hash_makes_one_entry_per_row_on_the_flat_messages_partition(
    make: EntryMaker,
) -> None:
    keys = [str(i) for i in range(12)]
    batch = [make.begin(), make.insert(*keys), make.ddl("ALTER TABLE orders ADD y INT"), make.end()]
    records = builder(hash_rules=r"shop\..*:$pk$", partitions=4).build(batch, 3, TS)
    assert [r.partition for r in records] == sorted(r.partition for r in records)
    by_partition = {r.partition: decode(r)[2] for r in records}
    # The FlatMessage path is the reference for canal's hashing: same rows, same partitions.
    where = placement(hash_rules=r"shop\..*:$pk$", partitions=4)
    flat = RecordBuilder(FlatMessageEncoder(where)).build(batch[1:2], 3, TS)
    expected: dict[int, list[list[str]]] = {}
    for flat_record in flat:
        for row in orjson.loads(flat_record.value)["data"]:
            expected.setdefault(flat_record.partition, []).append([row["id"]])
    assert len(expected) > 1
    rows_by_partition = {
        p: ids([e for e in es if not change_of(e).isDdl]) for p, es in by_partition.items()
    }
    assert {p: rows for p, rows in rows_by_partition.items() if rows} == expected
    # The DDL goes to partition 0, after that partition's rows; no markers anywhere.
    assert change_of(by_partition[0][-1]).isDdl
    for entries in by_partition.values():
        for entry in entries:
            assert entry.entryType == pb.ROWDATA
            if not change_of(entry).isDdl:
                assert [(p.key, p.value) for p in entry.header.props] == [("rowsCount", "12")]


def test_table_hash_keeps_the_entry_whole(make: EntryMaker) -> None:
    batch = [make.insert("1", "2", "3")]
    (record,) = builder(hash_rules=r"shop\.orders", partitions=8).build(batch, 3, TS)
    assert ids(decode(record)[2]) == [["1", "2", "3"]]
    # Negative: a key rule over the same rows splits the entry.
    split = builder(hash_rules=r"shop\.orders:id", partitions=8).build(batch, 3, TS)
    assert sum(len(decode(r)[2]) for r in split) == 3


def test_delete_hashes_its_before_image(make: EntryMaker) -> None:
    rules = r"shop\..*:$pk$"
    inserted = builder(hash_rules=rules, partitions=16).build([make.insert("7")], 1, TS)
    delete = make.rows(EventType.DELETE, [RowData(before=make.order("7"))])
    deleted = builder(hash_rules=rules, partitions=16).build([delete], 1, TS)
    assert inserted[0].partition == deleted[0].partition
    # Negative: another key lands elsewhere, so the equality above says something.
    other = builder(hash_rules=rules, partitions=16).build([make.insert("8")], 1, TS)
    assert other[0].partition != inserted[0].partition


def _orders(make: EntryMaker, count: int, rows: int = 1) -> list[Entry]:
    return [make.insert(*(f"{i}-{j}" + "x" * 200 for j in range(rows))) for i in range(count)]


def test_oversize_fail_names_the_entries(make: EntryMaker) -> None:
    with pytest.raises(RecordTooLarge) as raised:
        builder(max_bytes=3000).build(_orders(make, 20), 1, TS)
    assert "20 entries of batch 1" in str(raised.value)
    # Negative: the same batch fits a larger limit in one record.
    assert len(builder(max_bytes=100_000).build(_orders(make, 20), 1, TS)) == 1


def test_oversize_split_between_entries_then_rows(make: EntryMaker) -> None:
    batch = [*_orders(make, 20), *_orders(make, 1, rows=30)]
    records = builder(oversize=OversizePolicy.parse("split"), max_bytes=3000).build(batch, 1, TS)
    assert len(records) > 2
    assert all(len(r.value) <= 3000 for r in records)
    entries = [e for r in records for e in decode(r)[2]]
    rows = [row for row_ids in ids(entries) for row in row_ids]
    assert rows == [f"{i}-0" + "x" * 200 for i in range(20)] + [
        f"0-{j}" + "x" * 200 for j in range(30)
    ]


def test_oversize_dead_letter_replaces_an_entry_too_large_alone(
    make: EntryMaker, caplog: pytest.LogCaptureFixture
) -> None:
    big = make.insert(*(str(i) + "x" * 300 for i in range(30)))
    small = make.insert("1")
    policy = OversizePolicy.parse("dead_letter:too-big")
    with caplog.at_level(logging.WARNING, logger="bridge.mq.dead_letter"):
        records = builder(oversize=policy, max_bytes=3000).build([small, big], 1, TS)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "sent to dead-letter topic too-big" in line and "xxx" not in line
    assert [r.topic for r in records] == ["too-big", "example"]
    notice = orjson.loads(records[0].value)
    assert (notice["reason"], notice["rows"], notice["binlogPosition"]) == (
        "oversize",
        30,
        big.header.logfile_offset,
    )
    assert ids(decode(records[1])[2]) == [["1"]]


class _Cursor:
    def batch(self, batch_id: int, entries: Sequence[Entry]) -> tuple[list[Entry], OutgoingRecord]:
        return list(entries), OutgoingRecord("offsets", 0, b"k", b"cursor", ())

    def acked(self, batch_id: int) -> None: ...

    def rolled_back(self) -> None: ...


def test_the_exactly_once_cursor_record_comes_after_the_batch(make: EntryMaker) -> None:
    encoder = ProtobufMessageEncoder(placement())
    records = RecordBuilder(encoder, _Cursor()).build([make.insert("1")], 1, TS)
    assert [r.topic for r in records] == ["example", "offsets"]
    # Nothing leaks into the next batch.
    assert RecordBuilder(encoder, _Cursor()).build([], 2, TS)[0].topic == "offsets"


def test_flat_message_false_chooses_this_encoder() -> None:
    mq = MqConfig(topic="t", flat_message=False)
    assert isinstance(record_builder(mq, compiled=None).encoder, ProtobufMessageEncoder)
    assert not isinstance(
        record_builder(MqConfig(topic="t"), compiled=None).encoder, ProtobufMessageEncoder
    )


def test_header_event_type_and_gtid(make: EntryMaker) -> None:
    entry = make.rows(EventType.INSERT, [RowData(after=make.order("1"))], gtid="u:5")
    entry = Entry(
        Header(**{**_fields(entry.header), "event_type": EventType.INSERT}),
        entry.entry_type,
        entry.row_change,
    )
    (record,) = builder().build([entry], 1, TS)
    header = decode(record)[2][0].header
    assert (header.eventType, header.gtid) == (pb.INSERT, "u:5")


def _fields(header: Header) -> dict[str, object]:
    return {name: getattr(header, name) for name in Header.__slots__}
