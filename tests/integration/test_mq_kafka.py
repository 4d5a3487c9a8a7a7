"""The MQ worker and producer against a real Kafka: exact records, per-key order, an outage
of the broker (our own throwaway one), topic size limits, and ``tail``.

The change stream comes from ``ScriptedService`` (canal's get/ack/rollback over scripted
batches), so these tests need Kafka only.
"""

from __future__ import annotations

import io
import resource
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bridge.config import DEFAULT_MAX_RECORD_BYTES, DestinationConfig, KafkaConfig
from bridge.config.rules import OversizePolicy
from bridge.entry import Entry, EventType, RowData
from bridge.meta import ClientIdentity
from bridge.mq.exceptions import BrokerRejectedTooLarge, RecordTooLarge
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.formats import rows_encoder
from bridge.mq.producer import KafkaProducer, TopicInspector
from bridge.mq.records import Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from bridge.mq.senders import KafkaSenders
from bridge.mq.tail import tail
from bridge.mq.worker import MqWorker, WorkerSettings, build_worker
from tests.doubles import ScriptedService
from tests.integration.kafka_broker import ThrowawayKafka
from tests.unit.mq.conftest import EntryMaker

pytestmark = [pytest.mark.services, pytest.mark.timeout(240)]

CLIENT = ClientIdentity("example")
TS = 1_700_000_000_123


@dataclass(frozen=True)
class Received:
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def unique(name: str) -> str:
    return f"mq-{name}-{uuid.uuid4().hex[:8]}"


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None
) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
    futures[name].result(timeout=30)
    return name


def consume(
    bootstrap: str, topic: str, count: int, timeout_s: float = 30, settle_s: float = 0
) -> list[Received]:
    """``count`` records of ``topic`` from the beginning (fewer if the timeout passes), then
    more until none arrives for ``settle_s``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "enable.auto.commit": False,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        received: list[Received] = []
        deadline = time.monotonic() + timeout_s
        last = time.monotonic()
        while time.monotonic() < deadline:
            if len(received) >= count and time.monotonic() - last >= settle_s:
                break
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            last = time.monotonic()
            headers = msg.headers() or []
            assert isinstance(headers, list)
            received.append(
                Received(
                    msg.partition() or 0,
                    msg.offset() or 0,
                    msg.key() or b"",
                    msg.value() or b"",
                    tuple((name, value) for name, value in headers if isinstance(value, bytes)),
                )
            )
        return received
    finally:
        consumer.close()


def nothing_more(bootstrap: str, topic: str, already: int) -> bool:
    return len(consume(bootstrap, topic, already + 1, timeout_s=3)) == already


def records_builder(
    topic: str,
    partitions: int = 3,
    *,
    oversize: OversizePolicy | None = None,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> RecordBuilder:
    placement = Placement(
        CanalTopicRouter(topic, ""),
        CanalPartitionRouter(r"shop\.orders:id"),
        TopicPartitions(partitions, ""),
        max_record_bytes,
    )
    return RecordBuilder(FlatMessageEncoder(placement, oversize=oversize))


def run_worker(
    service: ScriptedService,
    records: RecordBuilder,
    kafka: KafkaConfig,
    settings: WorkerSettings | None = None,
) -> MqWorker:
    worker = MqWorker(
        CLIENT,
        service,
        records,
        KafkaProducer(kafka),
        settings or WorkerSettings(get_timeout_s=0.1, send_timeout_s=30),
        wall_clock=lambda: TS / 1000,
    )
    worker.start()
    return worker


@pytest.fixture
def make() -> EntryMaker:
    return EntryMaker()


@pytest.fixture
def stopping() -> Iterator[list[MqWorker]]:
    """Workers to stop (by flag, joined) at the end of the test, whatever happened."""
    workers: list[MqWorker] = []
    yield workers
    for worker in workers:
        worker.stop()
        assert worker.join(30), "worker did not stop within 30 s"


def orders_batch(make: EntryMaker, *ids: str, note: str = "n") -> list[Entry]:
    rows = [RowData(after=make.order(i, note=note)) for i in ids]
    return [make.begin(), make.rows(EventType.INSERT, rows), make.end()]


def test_batch_records_arrive_exactly(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("exact"), partitions=3)
    update_before, update_after = make.order("2", note="a"), make.order("2", note="b")
    update_after = (*update_after[:2], make.col("note", "b", updated=True))
    batch = [
        make.begin(),
        make.rows(EventType.INSERT, [RowData(after=make.order(str(i))) for i in range(1, 7)]),
        make.rows(EventType.UPDATE, [RowData(before=update_before, after=update_after)]),
        make.rows(EventType.DELETE, [RowData(before=make.order("3"))], gtid="0-1-77"),
        make.ddl("ALTER TABLE orders ADD c INT"),
        make.end(),
    ]
    records = records_builder(topic)
    expected = records.build(batch, 1, TS)
    service = ScriptedService([batch])
    stopping.append(run_worker(service, records, KafkaConfig(bootstrap_servers=kafka_bootstrap)))
    assert service.wait_acked(1, timeout_s=60)
    received = consume(kafka_bootstrap, topic, len(expected))
    assert sorted((r.partition, r.key, r.value, r.headers) for r in received) == sorted(
        (e.partition, e.key, e.value, e.headers) for e in expected
    )
    # Within a partition the records keep the batch's order.
    for partition in range(3):
        got = [
            r.value for r in sorted(received, key=lambda r: r.offset) if r.partition == partition
        ]
        assert got == [e.value for e in expected if e.partition == partition]
    # Empty gets may come while Kafka confirms the batch: the worker looks for the next one.
    calls = [call for call in service.calls if call != ("get", -1)]
    assert calls[:3] == [("subscribe", 1001), ("get", 1), ("ack", 1)]
    assert nothing_more(kafka_bootstrap, topic, len(expected))


def test_per_key_order_over_many_batches(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("order"), partitions=3)
    destination = DestinationConfig.model_validate(
        {
            "name": "example",
            "source": {"address": "127.0.0.1:3306", "username": "canal", "slave_id": 9},
            "get_timeout_ms": 50,
            "mq": {"topic": topic, "partitions": 3, "partition_hash": r"shop\.orders:id"},
        }
    )
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap, producer={"linger.ms": 5})
    keys = [str(k) for k in range(1, 9)]
    batches = [orders_batch(make, *keys, note=f"v{version:03d}") for version in range(25)]
    service = ScriptedService(batches)
    senders = KafkaSenders(kafka)
    encoder = rows_encoder(destination.mq, senders.max_record_bytes)
    worker = build_worker(destination, service, senders.sender(destination), encoder=encoder)
    worker.start()
    stopping.append(worker)
    assert service.wait_acked(len(batches), timeout_s=90)
    progress = worker.progress()
    assert (progress.batches_acked, progress.rows_sent) == (25, 25 * len(keys))
    received = consume(kafka_bootstrap, topic, progress.messages_sent)
    assert len(received) == progress.messages_sent
    versions: dict[str, list[str]] = defaultdict(list)
    partitions: dict[str, set[int]] = defaultdict(set)
    for r in sorted(received, key=lambda r: (r.partition, r.offset)):
        for row in orjson.loads(r.value)["data"]:
            versions[row["id"]].append(row["note"])
            partitions[row["id"]].add(r.partition)
    assert sorted(versions) == sorted(keys)
    for key in keys:
        assert versions[key] == [f"v{v:03d}" for v in range(25)], key
        assert len(partitions[key]) == 1, key
    assert len({p for ps in partitions.values() for p in ps}) > 1


def test_broker_outage_backs_off_loses_nothing_and_stays_idle(
    tmp_path: Path, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    with ThrowawayKafka(tmp_path / "kafka") as broker:
        topic = create_topic(broker.bootstrap, unique("outage"), partitions=3)
        kafka = KafkaConfig(
            bootstrap_servers=broker.bootstrap,
            producer={"message.timeout.ms": 2000, "reconnect.backoff.max.ms": 1000},
        )
        settings = WorkerSettings(
            get_timeout_s=0.1, send_timeout_s=10, backoff_initial_s=0.2, backoff_max_s=2
        )
        service = ScriptedService()
        worker = run_worker(service, records_builder(topic), kafka, settings)
        stopping.append(worker)
        keys = [str(k) for k in range(1, 7)]
        for version in range(5):
            service.push(*orders_batch(make, *keys, note=f"v{version:02d}"))
        assert service.wait_acked(5, timeout_s=60)

        # The broker crashes; five more batches wait to be sent.
        broker.stop(kill=True)
        for version in range(5, 10):
            service.push(*orders_batch(make, *keys, note=f"v{version:02d}"))
        usage_before = resource.getrusage(resource.RUSAGE_SELF)
        cpu_before, wall_before = time.process_time(), time.monotonic()
        time.sleep(10)
        cpu = time.process_time() - cpu_before
        wall = time.monotonic() - wall_before
        usage_after = resource.getrusage(resource.RUSAGE_SELF)
        rollbacks_while_down = service.count("rollback")
        print(
            f"\noutage: {cpu:.3f} s CPU over {wall:.1f} s "
            f"({100 * cpu / wall:.1f}% of one core; user "
            f"{usage_after.ru_utime - usage_before.ru_utime:.3f} s, system "
            f"{usage_after.ru_stime - usage_before.ru_stime:.3f} s), "
            f"{rollbacks_while_down} rollbacks, {worker.progress().failures} failed sends"
        )
        assert service.acked == 5, "a batch was acked while the broker was down"
        assert rollbacks_while_down >= 2
        assert cpu / wall < 0.2, f"{cpu:.2f} s CPU in {wall:.1f} s while the broker was down"
        assert worker.running

        broker.start()
        assert service.wait_acked(10, timeout_s=90)
        progress = worker.progress()
        assert progress.consecutive_failures == 0
        assert progress.failures >= 2

        # Acked batches' records, and maybe copies of those of failed attempts.
        received = consume(broker.bootstrap, topic, progress.messages_sent, settle_s=2)
        assert len(received) >= progress.messages_sent
        worker.stop()
        assert worker.join(30)

    versions: dict[str, list[str]] = defaultdict(list)
    for r in sorted(received, key=lambda r: (r.partition, r.offset)):
        for row in orjson.loads(r.value)["data"]:
            versions[row["id"]].append(row["note"])
    for key in keys:
        # At least once and in order: duplicates of a resent batch may repeat a version.
        seen = versions[key]
        assert sorted(set(seen)) == [f"v{v:02d}" for v in range(10)], key
        assert seen == sorted(seen), key


def big_batch(make: EntryMaker, rows: int, note_size: int) -> list[Entry]:
    data = [RowData(after=make.order(str(i), note="x" * note_size)) for i in range(rows)]
    return [make.begin(), make.rows(EventType.INSERT, data), make.end()]


LIMIT = 4096


def small_limit_kafka(bootstrap: str) -> KafkaConfig:
    return KafkaConfig(bootstrap_servers=bootstrap, producer={"message.max.bytes": LIMIT})


def test_oversize_fail_stops_without_acking(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("fail"), config={"max.message.bytes": str(LIMIT)})
    kafka = small_limit_kafka(kafka_bootstrap)
    service = ScriptedService([big_batch(make, rows=1, note_size=6000)])
    worker = run_worker(service, records_builder(topic, 1, max_record_bytes=LIMIT), kafka)
    stopping.append(worker)
    assert worker.join(30)
    assert isinstance(worker.error, RecordTooLarge)
    assert service.calls == [("subscribe", 1001), ("get", 1), ("rollback", 1)]
    assert worker.progress().state == "failed"


def test_oversize_dead_letter_sends_a_notice(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    config = {"max.message.bytes": str(LIMIT)}
    topic = create_topic(kafka_bootstrap, unique("dl"), config=config)
    dlq = create_topic(kafka_bootstrap, unique("dlq"), config=config)
    records = records_builder(
        topic, 1, max_record_bytes=LIMIT, oversize=OversizePolicy.parse(f"dead_letter:{dlq}")
    )
    batch = [*big_batch(make, rows=1, note_size=6000), *orders_batch(make, "9")]
    service = ScriptedService([batch])
    stopping.append(run_worker(service, records, small_limit_kafka(kafka_bootstrap)))
    assert service.wait_acked(1, timeout_s=60)
    (notice,) = consume(kafka_bootstrap, dlq, 1)
    body = orjson.loads(notice.value)
    assert (body["reason"], body["table"], body["rows"]) == ("oversize", "orders", 1)
    assert body["size"] > LIMIT
    (small,) = consume(kafka_bootstrap, topic, 1)
    assert orjson.loads(small.value)["data"] == [{"id": "9", "region": "eu", "note": "n"}]


def test_oversize_split_sends_every_row_in_records_under_the_limit(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("split"), config={"max.message.bytes": str(LIMIT)})
    records = records_builder(
        topic, 1, max_record_bytes=LIMIT, oversize=OversizePolicy.parse("split")
    )
    service = ScriptedService([big_batch(make, rows=60, note_size=200)] * 2)
    stopping.append(run_worker(service, records, small_limit_kafka(kafka_bootstrap)))
    assert service.wait_acked(2, timeout_s=60)
    expected = len(records.build(service.batches[0], 1, TS)) * 2
    assert expected >= 6
    received = consume(kafka_bootstrap, topic, expected)
    assert len(received) == expected
    assert all(len(r.value) + len(r.key) < LIMIT for r in received)
    ids = [row["id"] for r in received for row in orjson.loads(r.value)["data"]]
    assert ids == [str(i) for i in range(60)] * 2


def test_topic_limit_below_the_producers_is_reported_not_retried(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(
        kafka_bootstrap, unique("broker"), config={"max.message.bytes": str(LIMIT)}
    )
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)  # producer limit: 1 000 000
    service = ScriptedService([big_batch(make, rows=1, note_size=6000)])
    worker = run_worker(service, records_builder(topic, 1), kafka)
    stopping.append(worker)
    assert worker.join(30)
    assert isinstance(worker.error, BrokerRejectedTooLarge)
    assert "max.message.bytes" in str(worker.error)
    calls = [call for call in service.calls if call != ("get", -1)]
    assert calls == [("subscribe", 1001), ("get", 1), ("rollback", 1)]
    assert TopicInspector(kafka).max_message_bytes_of(topic) == LIMIT


def test_topic_inspector_partition_counts(kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, unique("inspect"), partitions=3)
    inspector = TopicInspector(KafkaConfig(bootstrap_servers=kafka_bootstrap))
    assert inspector.partitions_of(topic) == 3
    assert inspector.partitions_of(unique("absent")) is None


def test_tail_prints_what_the_worker_sent(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("tail"), partitions=2)
    batch: Sequence[Entry] = [
        *orders_batch(make, "1", "2"),
        make.ddl("ALTER TABLE orders ADD c INT"),
    ]
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)
    service = ScriptedService([batch])
    records = records_builder(topic, 2)
    stopping.append(run_worker(service, records, kafka))
    assert service.wait_acked(1, timeout_s=60)
    count = len(records.build(batch, 1, TS))
    out = io.StringIO()
    printed = tail(
        kafka, topic, from_beginning=True, max_messages=count, out=out, idle_timeout_s=20
    )
    lines = out.getvalue().splitlines()
    assert printed == count == len(lines)
    assert any(
        " INSERT shop.orders es=2023-11-14T22:13:20.000Z id=1 data=" in line for line in lines
    )
    assert any(line.endswith("sql=ALTER TABLE orders ADD c INT") for line in lines)


def test_tail_from_the_end_prints_only_new_records(
    kafka_bootstrap: str, make: EntryMaker, stopping: list[MqWorker]
) -> None:
    topic = create_topic(kafka_bootstrap, unique("tailnew"))
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)
    service = ScriptedService([orders_batch(make, "1")])
    stopping.append(run_worker(service, records_builder(topic, 1), kafka))
    assert service.wait_acked(1, timeout_s=60)
    out = io.StringIO()
    result: list[int] = []
    reader = threading.Thread(
        target=lambda: result.append(tail(kafka, topic, max_messages=1, out=out, idle_timeout_s=30))
    )
    reader.start()
    time.sleep(2)  # let tail assign the partition at its end
    service.push(*orders_batch(make, "2"))
    reader.join(40)
    assert result == [1]
    assert '"id":"2"' in out.getvalue()
    assert '"id":"1"' not in out.getvalue()
