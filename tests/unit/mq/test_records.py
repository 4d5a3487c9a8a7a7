"""RecordBuilder: the records a batch becomes (topic, partition, key, value, headers)."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from bridge.config import DEFAULT_MAX_RECORD_BYTES
from bridge.config.rules import DdlPolicy, OversizePolicy, RuleSyntaxError
from bridge.entry import Entry, EntryType, EventType, RowData
from bridge.mq.exceptions import RecordTooLarge
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.flat_message import build_flat_messages, message_key
from bridge.mq.records import OutgoingRecord, Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from tests.unit.mq.conftest import EntryMaker

TS = 1_700_000_000_123


def builder(
    topic: str = "example",
    dynamic: str = "",
    hash_rules: str = "",
    partitions: int = 1,
    per_topic: str = "",
    *,
    ddl: DdlPolicy | None = None,
    oversize: OversizePolicy | None = None,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> RecordBuilder:
    placement = Placement(
        CanalTopicRouter(topic, dynamic),
        CanalPartitionRouter(hash_rules),
        TopicPartitions(partitions, per_topic),
        max_record_bytes,
    )
    return RecordBuilder(FlatMessageEncoder(placement, ddl, oversize))


def test_static_topic_record(make: EntryMaker) -> None:
    entry = make.rows(EventType.INSERT, [RowData(after=make.order("42"))], gtid="u:1-9")
    (record,) = builder().build([make.begin(), entry, make.end()], 5, TS)
    assert (record.topic, record.partition, record.key) == ("example", 0, b"shop.orders:42")
    assert orjson.loads(record.value)["data"] == [{"id": "42", "region": "eu", "note": "n"}]
    assert record.headers == (
        ("binlog.file", b"mysql-bin.000003"),
        ("binlog.position", str(entry.header.logfile_offset).encode()),
        ("binlog.server_id", b"1"),
        ("binlog.gtid", b"u:1-9"),
    )


class SeenEncoder:
    """A stand-in format noting the entries it is handed; ``rows_only`` as it is told."""

    def __init__(self, rows_only: bool) -> None:
        self.rows_only = rows_only
        self.seen: list[EntryType] = []

    def encode(self, entry: Entry, batch_id: int, ts: int) -> list[OutgoingRecord]:
        self.seen.append(entry.entry_type)
        return []

    def finish(self, batch_id: int, ts: int) -> list[OutgoingRecord]:
        return []

    def ahead(self) -> None:
        return None


@pytest.mark.parametrize("rows_only", [True, False])
def test_markers_reach_only_an_encoder_that_reads_them(make: EntryMaker, rows_only: bool) -> None:
    encoder = SeenEncoder(rows_only)
    RecordBuilder(encoder).build([make.begin(), make.insert("1"), make.end()], 1, TS)
    everything = [EntryType.TRANSACTIONBEGIN, EntryType.ROWDATA, EntryType.TRANSACTIONEND]
    assert encoder.seen == ([EntryType.ROWDATA] if rows_only else everything)


def test_gtid_header_left_out_when_unknown(make: EntryMaker) -> None:
    (record,) = builder().build([make.insert("1")], 1, TS)
    assert [name for name, _ in record.headers] == [
        "binlog.file",
        "binlog.position",
        "binlog.server_id",
    ]


def test_each_record_names_its_own_binlog_file_and_server(make: EntryMaker) -> None:
    """The file and server id headers are cached per (file, server id): records of other
    files or servers, in any order, carry their own."""
    entries = []
    for name, server_id in [("a.000001", 1), ("a.000002", 1), ("a.000001", 2), ("a.000001", 1)]:
        entry = make.insert("1")
        header = replace(entry.header, logfile_name=name, server_id=server_id)
        entries.append(replace(entry, header=header))
    records = builder().build(entries, 1, TS)
    assert [(r.headers[0][1], r.headers[2][1]) for r in records] == [
        (b"a.000001", b"1"),
        (b"a.000002", b"1"),
        (b"a.000001", b"2"),
        (b"a.000001", b"1"),
    ]


def test_dynamic_topics_hash_and_per_topic_partition_counts(make: EntryMaker) -> None:
    b = builder(
        dynamic=r"hot:shop\.orders,.*\..*",
        hash_rules=r".*\..*:$pk$",
        partitions=1,
        per_topic="hot:8",
    )
    entries = [make.insert(*[str(i) for i in range(16)]), make.insert("1", table="users")]
    records = b.build(entries, 9, TS)
    hot = [r for r in records if r.topic == "hot"]
    assert len({r.partition for r in hot}) > 1
    assert all(0 <= r.partition < 8 for r in hot)
    assert [r.partition for r in hot] == sorted(r.partition for r in hot)
    users = [r for r in records if r.topic == "shop_users"]
    assert [(r.partition, r.key) for r in users] == [(0, b"shop.users:1")]
    assert records[-1].topic == "shop_users"  # batch order kept across topics


def test_ddl_policies(make: EntryMaker) -> None:
    entries = [make.ddl("ALTER TABLE orders ADD c INT"), make.insert("1")]
    inline = builder(hash_rules=".*\\..*:id", partitions=4).build(entries, 1, TS)
    assert (inline[0].topic, inline[0].partition, inline[0].key) == ("example", 0, b"shop.orders")
    ddl_topic = builder(ddl=DdlPolicy.parse("topic:schema-changes")).build(entries, 1, TS)
    assert [r.topic for r in ddl_topic] == ["schema-changes", "example"]
    skipped = builder(ddl=DdlPolicy.parse("skip")).build(entries, 1, TS)
    assert [orjson.loads(r.value)["isDdl"] for r in skipped] == [False]


@pytest.mark.parametrize("text", ["", "topic:", "Inline", "topic", "drop"])
def test_bad_ddl_policy(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        DdlPolicy.parse(text)


@pytest.mark.parametrize("text", ["", "dead_letter:", "fail:x", "splitting"])
def test_bad_oversize_policy(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        OversizePolicy.parse(text)


def big_batch(make: EntryMaker) -> list[object]:
    rows = [RowData(after=make.order(str(i), "x" * 300)) for i in range(20)]
    return [make.begin(), make.rows(EventType.INSERT, rows), make.end()]


def test_oversize_fail_raises_with_the_facts(make: EntryMaker) -> None:
    with pytest.raises(RecordTooLarge) as info:
        builder(max_record_bytes=2000).build(big_batch(make), 3, TS)  # type: ignore[arg-type]
    assert info.value.topic == "example"
    assert info.value.size > info.value.limit
    assert "shop.orders INSERT in batch 3 at mysql-bin.000003:" in str(info.value)


def test_oversize_split_makes_records_under_the_limit(make: EntryMaker) -> None:
    b = builder(max_record_bytes=2000, oversize=OversizePolicy.parse("split"))
    records = b.build(big_batch(make), 3, TS)  # type: ignore[arg-type]
    assert len(records) > 1
    assert all(len(r.value) + len(r.key) + 256 <= 2000 for r in records)
    ids = [row["id"] for r in records for row in orjson.loads(r.value)["data"]]
    assert ids == [str(i) for i in range(20)]


def test_oversize_split_fails_on_a_single_huge_row(make: EntryMaker) -> None:
    entry = make.rows(EventType.INSERT, [RowData(after=make.order("1", "x" * 5000))])
    with pytest.raises(RecordTooLarge):
        builder(max_record_bytes=2000, oversize=OversizePolicy.parse("split")).build([entry], 1, TS)


def test_oversize_dead_letter_sends_a_notice(make: EntryMaker) -> None:
    b = builder(max_record_bytes=2000, oversize=OversizePolicy.parse("dead_letter:dlq"))
    (record,) = b.build(big_batch(make), 3, TS)  # type: ignore[arg-type]
    notice = orjson.loads(record.value)
    assert record.topic == "dlq"
    assert notice["reason"] == "oversize"
    assert (notice["topic"], notice["rows"], notice["id"]) == ("example", 20, 3)
    assert notice["binlogFile"] == "mysql-bin.000003"


class TestMessageKey:
    def messages(self, make: EntryMaker, *entries: object) -> list[bytes]:
        built = build_flat_messages(entries, 1, TS)  # type: ignore[arg-type]
        return [message_key(s.message) for s in built]

    def test_keys(self, make: EntryMaker) -> None:
        same_key = RowData(before=make.order("5", "a"), after=make.order("5", "b"))
        composite = RowData(after=(make.col("a", "1", key=True), make.col("b", None, key=True)))
        assert self.messages(
            make,
            make.insert("1"),
            make.insert("1", "2"),
            make.rows(EventType.UPDATE, [same_key, same_key]),
            make.rows(EventType.INSERT, [composite]),
            make.rows(EventType.INSERT, [RowData(after=(make.col("a", "1"),))]),
            make.rows(EventType.DELETE, [RowData(before=make.order("8"))]),
            make.ddl("CREATE DATABASE x", EventType.QUERY, table=""),
        ) == [
            b"shop.orders:1",
            b"shop.orders",
            b"shop.orders:5",
            b'shop.orders:["1",null]',
            b"shop.orders",
            b"shop.orders:8",
            b"shop",
        ]
