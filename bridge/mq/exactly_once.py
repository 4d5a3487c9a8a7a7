"""Exactly-once delivery: each batch is one Kafka transaction that also carries the
destination's cursor, so "records visible" and "cursor advanced" are one atomic step.

The cursor goes to a compacted offsets topic, one key per destination, as a
``CommittedCursor``: the last transaction boundary whose records are all committed (canal's
ack position, the same the meta manager stores) and how many row entries after it were
committed too. The second number is what a canal cursor cannot say: a batch may end inside a
source transaction (a huge one spans many batches, or a batch takes the first rows of the next
one), and those rows are in Kafka once their Kafka transaction commits. On start the instance
resumes at the boundary, as canal does, and the worker drops the rows already committed
(``CursorLedger.admit``): the source gives the same entries again in the same order.

Order at start matters (``resume``): the transactional producer is made first, which fences
the previous owner of the destination's ``transactional.id``; only then is the offsets topic
read (read_committed), so that no zombie can commit after the cursor was read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

# NewTopic and ConfigResource are public in confluent_kafka.admin; its stubs do not export them.
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # type: ignore[attr-defined]

from bridge.config import DestinationConfig, KafkaConfig
from bridge.entry import Entry, EntryType
from bridge.meta import ClientIdentity, MetaManager
from bridge.meta.base import MQ_CLIENT_ID
from bridge.meta.codec import decode_log_position, encode_log_position
from bridge.meta.exceptions import MetaCodecError
from bridge.mq.exceptions import MqError
from bridge.mq.producer import LibrdkafkaLog, connection_settings, masked
from bridge.mq.records import OutgoingRecord
from bridge.position import LogIdentity, LogPosition, ack_position_after, is_ack_point

log = logging.getLogger(__name__)

# How long start-up waits for the cluster (topic creation, reading the offsets topic).
STARTUP_TIMEOUT_S = 30.0
# Errors of a topic just created, which the cluster does not fully show yet.
_NOT_YET_KNOWN = frozenset(
    {
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
    }
)


class OffsetsTopicError(MqError):
    """The offsets topic cannot be created, read or used (wrong cleanup policy, bad record)."""


@dataclass(frozen=True, slots=True)
class CommittedCursor:
    """What the offsets topic holds for a destination (see the module docstring)."""

    cursor: LogPosition | None
    rows_after: int = 0

    def encode(self, destination: str) -> bytes:
        cursor = None if self.cursor is None else encode_log_position(self.cursor)
        return orjson.dumps(
            {"destination": destination, "cursor": cursor, "rowsAfter": self.rows_after}
        )

    @classmethod
    def decode(cls, value: bytes, where: str) -> CommittedCursor:
        try:
            data = orjson.loads(value)
            rows_after = data["rowsAfter"]
            if not isinstance(rows_after, int) or rows_after < 0:
                raise ValueError(f"rowsAfter must be an integer >= 0, got {rows_after!r}")
            cursor = data["cursor"]
            return cls(None if cursor is None else decode_log_position(cursor), rows_after)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, MetaCodecError) as exc:
            raise OffsetsTopicError(
                f"the committed cursor at {where} is damaged ({exc}); delete the destination's "
                "key from the offsets topic to start from the meta store's cursor instead"
            ) from None


@dataclass(frozen=True, slots=True)
class _State:
    cursor: LogPosition | None
    rows_seen: int  # rows after the cursor in this process's stream
    to_skip: int  # of the rows still to come, how many a previous process committed

    @property
    def committed(self) -> CommittedCursor:
        return CommittedCursor(self.cursor, self.rows_seen + self.to_skip)


class CursorLedger:
    """The cursor record of every batch, and the rows a previous process already committed.

    States follow the worker's batches: ``batch`` computes a batch's state from the one before
    (batches are built ahead of the previous one's confirmation), ``acked`` makes it the
    committed one, ``rolled_back`` forgets everything after the committed one.
    """

    def __init__(
        self,
        destination: str,
        topic: str,
        identity: LogIdentity,
        start: CommittedCursor,
        where_it_started: Callable[[], LogPosition | None] = lambda: None,
    ) -> None:
        """``where_it_started``: the position the instance started reading from (its meta
        cursor before the first ack), asked when the first batch has no transaction end yet:
        rows committed before any boundary then count from there, which the offsets record
        makes durable even if the meta store never flushed it."""
        self.destination = destination
        self.topic = topic
        self._identity = identity
        self._where_it_started = where_it_started
        self._key = destination.encode()
        # The stream resumes at the cursor: every row after it comes again, the first
        # ``rows_after`` of them already in Kafka.
        self._committed = _State(start.cursor, 0, start.rows_after)
        self._pending: dict[int, _State] = {}
        self._last = self._committed

    @property
    def committed(self) -> CommittedCursor:
        return self._committed.committed

    def batch(self, batch_id: int, entries: Sequence[Entry]) -> tuple[list[Entry], OutgoingRecord]:
        """The entries of a batch still to send, and the cursor record to commit with them."""
        state = self._last
        cursor, rows_seen, to_skip = state.cursor, state.rows_seen, state.to_skip
        if cursor is None:
            cursor = self._where_it_started()
        admitted: list[Entry] = []
        for entry in entries:
            if is_ack_point(entry):  # a snapshot row too: the progress rides on the cursor
                cursor = ack_position_after(self._identity, entry, cursor)
                # Rows still to skip outlive it: a data transaction's end cannot come between
                # the old cursor and the committed rows (it would have been the old cursor),
                # so this is an ack point only this process's stream has: the end of an empty
                # transaction the restarted sink passes, or a snapshot chunk put elsewhere.
                rows_seen = 0
            elif entry.entry_type is EntryType.ROWDATA:
                rows_seen += 1
                if to_skip > 0:
                    to_skip -= 1
                    continue
            admitted.append(entry)
        self._last = self._pending[batch_id] = _State(cursor, rows_seen, to_skip)
        value = self._last.committed.encode(self.destination)
        return admitted, OutgoingRecord(self.topic, 0, self._key, value, ())

    def acked(self, batch_id: int) -> None:
        self._committed = self._pending.pop(batch_id)

    def rolled_back(self) -> None:
        self._pending.clear()
        self._last = self._committed


def ensure_offsets_topic(kafka: KafkaConfig, topic: str) -> None:
    """Create the offsets topic (one partition, compacted) unless it exists; an existing one
    must be compacted, or old cursors would be deleted by retention."""
    settings = connection_settings(kafka)
    admin_settings: dict[str, Any] = {**settings, "logger": LibrdkafkaLog(settings)}
    admin = AdminClient(admin_settings)
    new = NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})
    try:
        admin.create_topics([new])[topic].result(STARTUP_TIMEOUT_S)
        log.info("created the offsets topic %s (compacted)", topic)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            reason = masked(exc.args[0].str(), settings)
            raise OffsetsTopicError(f"cannot create the offsets topic {topic}: {reason}") from None
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        try:
            entries = admin.describe_configs([resource])[resource].result(STARTUP_TIMEOUT_S)
            break
        except KafkaException as exc:
            # A topic just created may be unknown to the broker answering for a moment.
            if exc.args[0].code() in _NOT_YET_KNOWN and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            reason = masked(exc.args[0].str(), settings)
            raise OffsetsTopicError(f"cannot read the offsets topic {topic}: {reason}") from None
    policy = entries["cleanup.policy"].value
    if "compact" not in policy:
        raise OffsetsTopicError(
            f"the offsets topic {topic} has cleanup.policy={policy}: set it to compact "
            "(kafka-configs --alter --add-config cleanup.policy=compact), or name another "
            "topic in mq.offsets_topic"
        )


def read_committed_cursor(kafka: KafkaConfig, topic: str, destination: str) -> CommittedCursor:
    """The destination's last committed cursor in the offsets topic, or an empty one when it
    has none. Reads read_committed up to the end as it stands now: first waits until every
    transaction holding records below the high watermark is resolved (the last stable offset
    reaches it), so a commit whose markers are still being written is not missed."""
    settings = connection_settings(kafka)
    consumers = {
        level: Consumer(
            {
                **settings,
                "group.id": f"canal-bridge-offsets-{destination}",
                "enable.auto.commit": False,
                "isolation.level": level,
                "logger": LibrdkafkaLog(settings),
            }
        )
        for level in ("read_committed", "read_uncommitted")
    }
    reader = consumers["read_committed"]
    key = destination.encode()
    found: CommittedCursor | None = None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        metadata = reader.list_topics(topic, timeout=STARTUP_TIMEOUT_S)
        for partition in metadata.topics[topic].partitions:
            part = TopicPartition(topic, partition)
            _, end = _watermarks(consumers["read_uncommitted"], part, deadline)
            low, stable = _watermarks(reader, part, deadline)
            while stable < end:
                _before(deadline, f"a transaction on {topic}[{partition}] stays open")
                time.sleep(0.1)
                low, stable = _watermarks(reader, part, deadline)
            if end <= low:
                continue
            reader.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            while reader.position([part])[0].offset < end:
                _before(deadline, f"reading {topic}[{partition}] up to offset {end}")
                message = reader.poll(0.5)
                if message is None:
                    continue
                if message.error() is not None:
                    raise KafkaException(message.error())
                if message.key() == key:
                    where = f"{topic}[{partition}]@{message.offset()}"
                    found = CommittedCursor.decode(message.value() or b"", where)
    except KafkaException as exc:
        reason = masked(exc.args[0].str(), settings)
        raise OffsetsTopicError(f"cannot read the offsets topic {topic}: {reason}") from None
    finally:
        for consumer in consumers.values():
            consumer.close()
    return found or CommittedCursor(None)


def _watermarks(consumer: Consumer, part: TopicPartition, deadline: float) -> tuple[int, int]:
    """Low and high watermark (the last stable offset for read_committed), waiting while the
    partition of a topic just created is not served yet."""
    while True:
        try:
            low, high = consumer.get_watermark_offsets(part, timeout=STARTUP_TIMEOUT_S)
            return low, high
        except KafkaException as exc:
            if exc.args[0].code() not in _NOT_YET_KNOWN or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _before(deadline: float, doing: str) -> None:
    if time.monotonic() > deadline:
        raise OffsetsTopicError(
            f"{doing} for more than {STARTUP_TIMEOUT_S:.0f} s; is the broker's transaction "
            "coordinator up (transaction.state.log.* settings)?"
        )


def resume(kafka: KafkaConfig, destination: DestinationConfig, meta: MetaManager) -> CursorLedger:
    """Where an exactly-once destination resumes: the newer of the meta store's cursor and the
    offsets topic's committed one (the meta store is moved there), and the ledger that drops
    the rows committed after it. Call after the producer fenced the previous owner."""
    topic = destination.mq.offsets_topic
    ensure_offsets_topic(kafka, topic)
    committed = read_committed_cursor(kafka, topic, destination.name)
    client = ClientIdentity(destination.name, MQ_CLIENT_ID)
    if not meta.running:
        meta.start()
    if not meta.has_subscribe(client):
        meta.subscribe(client)
    stored = meta.get_cursor(client)
    start = CommittedCursor(stored)
    if committed.cursor is not None and (
        stored is None or stored.position.sort_key() <= committed.cursor.position.sort_key()
    ):
        if stored != committed.cursor:
            meta.update_cursor(client, committed.cursor)
        start = committed
    log.info(
        "%s: exactly-once delivery resumes at %s, %d row(s) after it already committed",
        destination.name,
        "the start position" if start.cursor is None else _where(start.cursor),
        start.rows_after,
    )
    identity = LogIdentity(destination.source.address, destination.source.slave_id)
    return CursorLedger(destination.name, topic, identity, start, lambda: meta.get_cursor(client))


def _where(cursor: LogPosition) -> str:
    position = cursor.position
    return f"{position.journal_name}:{position.position}"
