"""``canal-bridge tail``: print the FlatMessages of a topic as they arrive, one line each.

Reads with partitions assigned directly (no consumer group join, nothing committed), so it
starts at once and leaves no trace in the cluster but a short-lived group id.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicPartition

from bridge.config import KafkaConfig
from bridge.mq.exceptions import MqError, TopicLookupFailed
from bridge.mq.producer import LibrdkafkaLog, connection_settings, masked

log = logging.getLogger(__name__)

POLL_S = 0.5


def tail(
    config: KafkaConfig,
    topic: str,
    from_beginning: bool = False,
    max_messages: int | None = None,
    out: TextIO | None = None,
    *,
    idle_timeout_s: float | None = None,
    stop: threading.Event | None = None,
    read_committed: bool = True,
) -> int:
    """Print the records of ``topic`` to ``out`` (one ``format_record`` line each).

    1. Find the topic's partitions (TopicLookupFailed when it does not exist).
    2. Assign them all, at the beginning or at the end (only what arrives from now on).
    3. Print each record until ``max_messages`` were printed, ``stop`` is set or nothing
       arrived for ``idle_timeout_s``. Transient consumer errors are logged; fatal ones raise.

    Returns how many records were printed. ``read_committed`` (librdkafka's default) leaves
    out records of aborted or still open transactions: what a consumer of an exactly-once
    topic sees.
    """
    settings: dict[str, Any] = {
        **connection_settings(config),
        "group.id": f"canal-bridge-tail-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed" if read_committed else "read_uncommitted",
    }
    consumer = Consumer({**settings, "logger": LibrdkafkaLog(settings)})
    printed = 0
    try:
        # Step 1
        try:
            metadata = consumer.list_topics(topic, timeout=10)
        except KafkaException as exc:
            raise TopicLookupFailed(topic, masked(exc.args[0].str(), settings)) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            raise TopicLookupFailed(topic, "no such topic")
        # Step 2
        start = OFFSET_BEGINNING if from_beginning else OFFSET_END
        consumer.assign([TopicPartition(topic, p, start) for p in sorted(found.partitions)])
        # Step 3
        last_seen = time.monotonic()
        while max_messages is None or printed < max_messages:
            if stop is not None and stop.is_set():
                break
            msg = consumer.poll(POLL_S)
            if msg is None:
                if idle_timeout_s is not None and time.monotonic() - last_seen >= idle_timeout_s:
                    break
                continue
            err = msg.error()
            if err is not None:
                if err.fatal():
                    raise MqError(f"tail of {topic} failed: {masked(err.str(), settings)}")
                log.warning("tail of %s: %s", topic, masked(err.str(), settings))
                continue
            last_seen = time.monotonic()
            line = format_record(msg.partition() or 0, msg.offset() or 0, msg.value(), msg.key())
            print(line, file=out, flush=True)
            printed += 1
    finally:
        consumer.close()
    return printed


def format_record(
    partition: int, offset: int, value: bytes | None, key: bytes | None = None
) -> str:
    """One compact line: ``partition@offset TYPE db.table es=... id=N`` then the rows (or the
    SQL of a DDL). A tombstone (null value, ``mq.tombstones``), a dead-letter notice and
    anything that is not a FlatMessage are shown as such."""
    where = f"{partition}@{offset}"
    if value is None and key:
        return f"{where} TOMBSTONE key={key.decode('utf-8', 'replace')}"
    try:
        message = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError:
        message = None
    if not isinstance(message, dict):
        raw = "null" if value is None else value[:200].decode("utf-8", "replace")
        return f"{where} (not a FlatMessage) {raw}"
    if message.get("reason") == "oversize":
        return (
            f"{where} DEAD-LETTER {message.get('database')}.{message.get('table')} "
            f"{message.get('type')} {message.get('rows')} rows, {message.get('size')} bytes > "
            f"{message.get('limit')}, at {message.get('binlogFile')}:"
            f"{message.get('binlogPosition')}"
        )
    head = (
        f"{where} {message.get('type')} {message.get('database')}.{message.get('table')} "
        f"es={_time(message.get('es'))} id={message.get('id')}"
    )
    if message.get("isDdl"):
        return f"{head} sql={message.get('sql')}"
    line = f"{head} data={_compact(message.get('data'))}"
    if message.get("old"):
        line += f" old={_compact(message.get('old'))}"
    return line


def _time(ms: object) -> str:
    if not isinstance(ms, int):
        return str(ms)
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _compact(value: object) -> str:
    return orjson.dumps(value).decode()
