"""The exactly-once pieces against the real broker: one batch = one Kafka transaction across
topics, a failed batch leaves nothing visible read_committed (the at-least-once producer leaves
its first records), fencing by transactional.id, the offsets topic, and the worker's oversize
policies inside the transaction.

Visibility is read to the end of each partition as it stands (``read``), once the broker has
resolved every transaction on it, so "nothing there" is a fact and not a wait that ran out.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # type: ignore[attr-defined]

from bridge.config import DestinationConfig, KafkaConfig, MqConfig
from bridge.entry import Entry, EventType, RowData
from bridge.meta import MemoryMetaManager
from bridge.mq.exactly_once import (
    CommittedCursor,
    OffsetsTopicError,
    ensure_offsets_topic,
    read_committed_cursor,
)
from bridge.mq.exceptions import BrokerRejectedTooLarge, RecordTooLarge
from bridge.mq.formats import rows_encoder
from bridge.mq.producer import KafkaProducer
from bridge.mq.records import OutgoingRecord, RecordBuilder
from bridge.mq.senders import KafkaSenders
from bridge.mq.transactional import ProducerFenced, TransactionalKafkaProducer
from bridge.mq.worker import MqWorker, build_worker
from bridge.position import EntryPosition, LogIdentity, LogPosition, resume_position_after
from tests.doubles import ScriptedService
from tests.unit.mq.conftest import EntryMaker

pytestmark = pytest.mark.timeout(240)

Isolation = Literal["read_committed", "read_uncommitted"]
LIMIT = 4096  # the producer's message.max.bytes where a test needs a small one
READ_TIMEOUT_S = 30
IDENTITY = LogIdentity("127.0.0.1:3306", 9)


@dataclass(frozen=True)
class Seen:
    topic: str
    partition: int
    key: bytes
    value: bytes


def unique(name: str) -> str:
    return f"eo-{name}-{uuid.uuid4().hex[:8]}"


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None
) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(30)
    return name


def read(bootstrap: str, topic: str, isolation: Isolation) -> list[Seen]:
    """Every record of ``topic`` a consumer at ``isolation`` sees, up to the end as it stands:
    first waits until no transaction on a partition is open (the last stable offset reaches
    the high watermark), then reads each partition up to that end."""
    settings = {"bootstrap.servers": bootstrap, "group.id": unique("reader")}
    consumer = Consumer({**settings, "enable.auto.commit": False, "isolation.level": isolation})
    stable_reader = Consumer({**settings, "isolation.level": "read_committed"})
    deadline = time.monotonic() + READ_TIMEOUT_S
    seen: list[Seen] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        for partition in sorted(partitions):
            part = TopicPartition(topic, partition)
            while True:
                _, end = consumer.get_watermark_offsets(part, timeout=10, cached=False)
                _, stable = stable_reader.get_watermark_offsets(part, timeout=10, cached=False)
                if stable >= end:
                    break
                assert time.monotonic() < deadline, f"a transaction on {topic} stays open"
                time.sleep(0.1)
            consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            while end > 0 and consumer.position([part])[0].offset < end:
                assert time.monotonic() < deadline, f"{topic}[{partition}] not read to {end}"
                message = consumer.poll(0.2)
                if message is None or message.error() is not None:
                    continue
                seen.append(Seen(topic, partition, message.key() or b"", message.value() or b""))
    finally:
        consumer.close()
        stable_reader.close()
    return seen


def as_seen(records: list[OutgoingRecord]) -> list[Seen]:
    return [Seen(r.topic, r.partition, r.key, r.value) for r in records]


def record(topic: str, text: str, partition: int = 0, size: int = 0) -> OutgoingRecord:
    value = text.encode() + b"x" * max(0, size - len(text))
    return OutgoingRecord(topic, partition, text.encode(), value, ())


def transactional(bootstrap: str, tid: str, **producer: str | int) -> TransactionalKafkaProducer:
    config = KafkaConfig(bootstrap_servers=bootstrap, producer=producer)
    return TransactionalKafkaProducer(config, transactional_id=tid)


@pytest.fixture
def closing() -> Iterator[list[KafkaProducer]]:
    producers: list[KafkaProducer] = []
    yield producers
    for producer in producers:
        producer.close(timeout_s=5)


def cursor_at(offset: int) -> LogPosition:
    return LogPosition(IDENTITY, EntryPosition("mysql-bin.000007", offset, 1, None, 1_700_000_000))


# --- one batch, one transaction ---------------------------------------------------------------


def test_a_batch_to_several_topics_is_visible_whole_once_it_is_confirmed(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    data = create_topic(kafka_bootstrap, unique("data"), partitions=3)
    dead_letter = create_topic(kafka_bootstrap, unique("dlq"))
    ddl = create_topic(kafka_bootstrap, unique("ddl"))
    offsets = unique("offsets")
    ensure_offsets_topic(KafkaConfig(bootstrap_servers=kafka_bootstrap), offsets)
    batch = [
        *(record(data, f"row-{i}", partition=i % 3) for i in range(9)),
        record(dead_letter, "notice"),
        record(ddl, "alter"),
        OutgoingRecord(offsets, 0, b"d1", CommittedCursor(cursor_at(400), 2).encode("d1"), ()),
    ]
    producer = transactional(kafka_bootstrap, unique("tid"))
    closing.append(producer)
    for topic in (data, dead_letter, ddl, offsets):  # nothing before the batch
        assert read(kafka_bootstrap, topic, "read_uncommitted") == []

    producer.start(batch)()

    for topic in (data, dead_letter, ddl, offsets):
        expected = [s for s in as_seen(batch) if s.topic == topic]
        assert sorted(read(kafka_bootstrap, topic, "read_committed"), key=repr) == sorted(
            expected, key=repr
        ), topic
    cursor = read_committed_cursor(KafkaConfig(bootstrap_servers=kafka_bootstrap), offsets, "d1")
    assert cursor == CommittedCursor(cursor_at(400), 2)


def failing_batch(kafka_bootstrap: str) -> tuple[list[OutgoingRecord], list[str]]:
    """Records to a data and a DDL topic, then one the broker refuses (over its topic's
    max.message.bytes, under the producer's limit): the first are written when it fails."""
    data = create_topic(kafka_bootstrap, unique("data"), partitions=2)
    ddl = create_topic(kafka_bootstrap, unique("ddl"))
    small = create_topic(kafka_bootstrap, unique("small"), config={"max.message.bytes": "1024"})
    batch = [
        record(data, "row-1", 0),
        record(data, "row-2", 1),
        record(ddl, "alter"),
        record(small, "too-large", size=8000),
    ]
    return batch, [data, ddl, small]


def test_a_batch_failing_part_way_is_aborted_whole(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    batch, topics = failing_batch(kafka_bootstrap)
    producer = transactional(kafka_bootstrap, unique("tid"))
    closing.append(producer)
    with pytest.raises(BrokerRejectedTooLarge):
        producer.start(batch)()

    written = [s for s in as_seen(batch) if s.value != batch[-1].value]
    uncommitted = [s for topic in topics for s in read(kafka_bootstrap, topic, "read_uncommitted")]
    assert sorted(uncommitted, key=repr) == sorted(written, key=repr), "records were written"
    for topic in topics:
        assert read(kafka_bootstrap, topic, "read_committed") == [], topic

    # The producer goes on: the next batch commits, and only it is visible.
    retry = [record(topics[0], "row-3", 0)]
    producer.start(retry)()
    assert read(kafka_bootstrap, topics[0], "read_committed") == as_seen(retry)


def test_the_at_least_once_producer_leaves_the_first_records_of_a_failed_batch(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    """The negative case of the test above: the same batch, no transaction."""
    batch, topics = failing_batch(kafka_bootstrap)
    producer = KafkaProducer(KafkaConfig(bootstrap_servers=kafka_bootstrap))
    closing.append(producer)
    with pytest.raises(BrokerRejectedTooLarge):
        producer.start(batch)()
    visible = [s for topic in topics for s in read(kafka_bootstrap, topic, "read_committed")]
    assert sorted(visible, key=repr) == sorted(as_seen(batch[:-1]), key=repr)


def test_a_record_over_the_producers_limit_aborts_what_was_delivered_before_it(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    """RecordTooLarge at produce time (librdkafka's message.max.bytes) after earlier records
    of the batch were delivered: a queue of two makes the producer wait for the delivery of
    all but the last two before it produces the next, so ten are in the log when the large
    one fails, and none of them becomes visible."""
    data = create_topic(kafka_bootstrap, unique("data"))
    settings = {"message.max.bytes": LIMIT, "queue.buffering.max.messages": 2}
    producer = transactional(kafka_bootstrap, unique("tid"), **settings)
    closing.append(producer)
    early = [record(data, f"row-{i:02d}", size=1000) for i in range(12)]
    with pytest.raises(RecordTooLarge) as failed:
        producer.start([*early, record(data, "huge", size=2 * LIMIT)])()
    assert not isinstance(failed.value, BrokerRejectedTooLarge)
    assert "librdkafka message.max.bytes" in str(failed.value)
    in_log = read(kafka_bootstrap, data, "read_uncommitted")
    assert len(in_log) >= 10 and set(in_log) <= set(as_seen(early))
    assert read(kafka_bootstrap, data, "read_committed") == []


# --- fencing ----------------------------------------------------------------------------------


def test_a_second_producer_with_the_same_id_fences_the_first_for_good(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("fenced"))
    tid = unique("tid")
    first = transactional(kafka_bootstrap, tid)
    closing.append(first)
    first.start([record(topic, "first-1")])()

    second = transactional(kafka_bootstrap, tid)  # init_transactions fences the first
    closing.append(second)
    with pytest.raises(ProducerFenced) as fenced:
        first.start([record(topic, "zombie-1")])()
    assert fenced.value.transactional_id == tid
    with pytest.raises(ProducerFenced):
        first.start([record(topic, "zombie-2")])()
    with pytest.raises(ProducerFenced):
        first.start([])()  # not even an empty batch passes

    second.start([record(topic, "second-1")])()
    assert [s.key for s in read(kafka_bootstrap, topic, "read_committed")] == [
        b"first-1",
        b"second-1",
    ]


def test_a_new_producer_aborts_the_open_transaction_of_the_one_it_fences(
    kafka_bootstrap: str,
) -> None:
    """A frozen process holds an open transaction: its records never become visible."""
    topic = create_topic(kafka_bootstrap, unique("open"))
    tid = unique("tid")
    zombie = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": tid})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, key=b"zombie", value=b"open")
    assert zombie.flush(30) == 0
    assert [s.key for s in read_uncommitted_now(kafka_bootstrap, topic)] == [b"zombie"]

    successor = transactional(kafka_bootstrap, tid)
    try:
        successor.start([record(topic, "successor")])()
    finally:
        successor.close()
    assert [s.key for s in read(kafka_bootstrap, topic, "read_committed")] == [b"successor"]


def read_uncommitted_now(bootstrap: str, topic: str) -> list[Seen]:
    """What read_uncommitted shows while a transaction is open (``read`` would wait for it)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("peek"),
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",  # librdkafka's default is read_committed
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        message = None
        deadline = time.monotonic() + READ_TIMEOUT_S
        while message is None or message.error() is not None:
            assert time.monotonic() < deadline, "the open transaction's record is not there"
            message = consumer.poll(0.2)
        return [Seen(topic, 0, message.key() or b"", message.value() or b"")]
    finally:
        consumer.close()


# --- the offsets topic ------------------------------------------------------------------------


def topic_config(bootstrap: str, topic: str) -> tuple[int, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return partitions, entries["cleanup.policy"].value


def test_ensure_offsets_topic_creates_it_compacted_and_refuses_a_deleting_one(
    kafka_bootstrap: str,
) -> None:
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)
    offsets = unique("offsets")
    ensure_offsets_topic(kafka, offsets)
    assert topic_config(kafka_bootstrap, offsets) == (1, "compact")
    ensure_offsets_topic(kafka, offsets)  # an existing compacted topic is fine

    plain = create_topic(kafka_bootstrap, unique("plain"), config={"cleanup.policy": "delete"})
    with pytest.raises(OffsetsTopicError) as refused:
        ensure_offsets_topic(kafka, plain)
    assert f"{plain} has cleanup.policy=delete: set it to compact" in str(refused.value)
    assert "mq.offsets_topic" in str(refused.value)
    assert "offsets_topic" in MqConfig.model_fields  # the key the message names


def test_read_committed_cursor_takes_the_destinations_last_committed_record(
    kafka_bootstrap: str, closing: list[KafkaProducer]
) -> None:
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)
    offsets = unique("offsets")
    ensure_offsets_topic(kafka, offsets)
    assert read_committed_cursor(kafka, offsets, "d1") == CommittedCursor(None)

    def cursor_record(destination: str, cursor: CommittedCursor) -> OutgoingRecord:
        return OutgoingRecord(offsets, 0, destination.encode(), cursor.encode(destination), ())

    producer = transactional(kafka_bootstrap, unique("tid"))
    closing.append(producer)
    producer.start([cursor_record("d1", CommittedCursor(cursor_at(100)))])()
    producer.start([cursor_record("d1", CommittedCursor(cursor_at(200), 3))])()
    producer.start([cursor_record("d2", CommittedCursor(cursor_at(900)))])()
    # An aborted transaction: its newer cursor for d1 is in the log, never committed.
    aborting = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": unique("tid")})
    aborting.init_transactions(30)
    aborting.begin_transaction()
    aborted = CommittedCursor(cursor_at(300))
    aborting.produce(offsets, key=b"d1", value=aborted.encode("d1"), partition=0)
    assert aborting.flush(30) == 0
    aborting.abort_transaction(30)
    raw = [s.value for s in read(kafka_bootstrap, offsets, "read_uncommitted")]
    assert aborted.encode("d1") in raw, "the aborted record is in the log"

    assert read_committed_cursor(kafka, offsets, "d1") == CommittedCursor(cursor_at(200), 3)
    assert read_committed_cursor(kafka, offsets, "d2") == CommittedCursor(cursor_at(900))
    assert read_committed_cursor(kafka, offsets, "d3") == CommittedCursor(None)

    producer.start([OutgoingRecord(offsets, 0, b"d1", b'{"cursor": "garbage"', ())])()
    with pytest.raises(OffsetsTopicError) as damaged:
        read_committed_cursor(kafka, offsets, "d1")
    assert f"the committed cursor at {offsets}[0]@" in str(damaged.value)
    assert "is damaged" in str(damaged.value)
    assert read_committed_cursor(kafka, offsets, "d2") == CommittedCursor(cursor_at(900))


# --- the worker's oversize policies inside the transaction ------------------------------------


def unstamped(seen: Seen) -> tuple[str, bytes, bytes]:
    """A record without what the worker stamps on each message (batch id, send time, and the
    size of a dead-letter notice, which counts them)."""
    body = orjson.loads(seen.value)
    for stamped in ("id", "ts", "size"):
        body.pop(stamped, None)
    return seen.topic, seen.key, orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def orders(make: EntryMaker, ids: range, note_size: int) -> list[Entry]:
    rows = [RowData(after=make.order(str(i), note="x" * note_size)) for i in ids]
    return [make.begin(), make.rows(EventType.INSERT, rows), make.end()]


@pytest.mark.parametrize("policy", ["dead_letter", "split"])
def test_oversize_policies_commit_with_the_batch_exactly_once(
    kafka_bootstrap: str, policy: str
) -> None:
    data = create_topic(kafka_bootstrap, unique("data"))
    dead_letter = create_topic(kafka_bootstrap, unique("dlq"))
    ddl = create_topic(kafka_bootstrap, unique("ddl"))
    offsets = unique("offsets")
    name = unique("dest")
    destination = DestinationConfig.model_validate(
        {
            "name": name,
            "source": {"address": IDENTITY.source_address, "username": "c", "slave_id": 9},
            "get_timeout_ms": 50,
            "mq": {
                "topic": data,
                "delivery": "exactly_once",
                "offsets_topic": offsets,
                "oversize": f"dead_letter:{dead_letter}" if policy == "dead_letter" else "split",
                "ddl": f"topic:{ddl}",
            },
        }
    )
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap, producer={"message.max.bytes": LIMIT})
    make = EntryMaker()
    batches = [
        [*orders(make, range(60), 200), *orders(make, range(60, 62), 10)],  # 60 rows: oversize
        [make.ddl("ALTER TABLE orders ADD c INT"), *orders(make, range(62, 64), 10)],
        orders(make, range(64, 66), 10),
    ]
    senders = KafkaSenders(kafka)
    sender = senders.sender(destination)
    ledger = senders.cursor(destination, MemoryMetaManager())
    assert ledger is not None
    encoder = rows_encoder(destination.mq, senders.max_record_bytes)
    service = ScriptedService(batches)
    worker: MqWorker = build_worker(destination, service, sender, encoder=encoder, cursor=ledger)
    worker.start()
    try:
        assert service.wait_acked(len(batches), timeout_s=90)
    finally:
        worker.stop()
        assert worker.join(30)
    assert worker.error is None

    # What one build of each batch gives, without the cursor records: each exactly once.
    plain = RecordBuilder(rows_encoder(destination.mq, senders.max_record_bytes))
    expected = Counter(
        s for n, batch in enumerate(batches, 1) for s in as_seen(plain.build(batch, n, 0))
    )
    got = Counter(
        s
        for topic in (data, dead_letter, ddl)
        for s in read(kafka_bootstrap, topic, "read_committed")
    )

    assert Counter(map(unstamped, got.elements())) == Counter(map(unstamped, expected.elements()))
    assert all(n == 1 for n in got.values())
    topics = Counter(s.topic for s in got.elements())
    if policy == "dead_letter":
        (notice,) = (s for s in got if s.topic == dead_letter)
        assert orjson.loads(notice.value)["rows"] == 60
    else:
        assert topics[dead_letter] == 0
        assert topics[data] > 3 + 2  # the 60 rows came in several parts
    ids = [
        row["id"]
        for s in read(kafka_bootstrap, data, "read_committed")
        for row in orjson.loads(s.value)["data"]
    ]
    first = 0 if policy == "split" else 60
    assert ids == [str(i) for i in range(first, 66)]
    assert topics[ddl] == 1

    # One cursor record per acked batch; the last one is after the last transaction.
    cursors = [
        s for s in read(kafka_bootstrap, offsets, "read_committed") if s.key == name.encode()
    ]
    assert len(cursors) == len(batches)
    last = CommittedCursor(LogPosition(IDENTITY, resume_position_after(batches[-1][-1])))
    assert read_committed_cursor(kafka, offsets, name) == last
