"""The Kafka side of a destination: send a batch of records whole, or say what failed.

``RecordSender`` is what the MQ worker needs; ``KafkaProducer`` implements it over
confluent-kafka (librdkafka) with ``acks=all`` and idempotence, so that retries inside
librdkafka neither lose nor reorder records. One producer per destination: a flush waits for
the whole instance, and the first failure must belong to the batch that is acked or rolled
back. ``TopicInspector`` answers questions about topics (partition counts, size limits) for
``canal-bridge check``.

Delivery errors surface at one point (quix-streams' internal producer does the same): the
delivery callback records the batch's first failure, the batch's confirm raises it once it
is settled, and only a clean return lets the worker ack. Only failures are reported
(``delivery.report.only.error``): a producer sends one batch at a time, so the batch is
confirmed once librdkafka holds nothing more of it (a flush returned 0) and no failure came;
a report per record cost a Python call each, a third of the sender's time on a snapshot.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, Producer

# ConfigResource is public in confluent_kafka.admin; its stubs do not re-export it.
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from bridge.config import DEFAULT_MAX_RECORD_BYTES, KafkaConfig, ProducerValue
from bridge.mq.exceptions import (
    BrokerRejectedTooLarge,
    BrokersRefused,
    DeliveryCancelled,
    DeliveryFailed,
    MqError,
    ProducerSetupFailed,
    RecordTooLarge,
    TopicLookupFailed,
)
from bridge.mq.records import OutgoingRecord
from bridge.mq.refusals import refusal

log = logging.getLogger(__name__)
# librdkafka's own log lines (forwarded by confluent-kafka with Python levels).
librdkafka_log = logging.getLogger("bridge.mq.librdkafka")

# Broker (or librdkafka) refusing a record or a record batch for its size.
SIZE_ERRORS = frozenset({KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE})
# How long a record may wait for its acknowledgement inside librdkafka before it is reported
# failed (librdkafka's default is 5 minutes: too long to notice an outage and back off).
DEFAULT_MESSAGE_TIMEOUT_MS = 30_000
# Added to the message timeout for a batch's deadline: every record is reported by then.
SEND_GRACE_S = 5.0
# Flush in slices this long so that a stop request is seen quickly.
FLUSH_SLICE_S = 0.2
# Delivery reports are served every this many records while producing (and then by the
# flush): a poll per record releases the GIL each time, handing it to the parser thread for
# up to the interpreter's switch interval.
POLL_EVERY = 500
# The same librdkafka error (broker down, ...) is logged at WARNING at most this often.
REPEAT_LOG_INTERVAL_S = 60.0

_SECRET_WORDS = ("password", "secret")
# Settings a consumer or admin client shares with the producer: where and how to connect.
_CONNECTION_PREFIXES = ("bootstrap.", "security.", "sasl.", "ssl.", "socket.", "broker.")


# What ``RecordSender.start`` returns: called, it waits until Kafka confirmed every record of
# the batch, or raises DeliveryFailed (DeliveryCancelled once the send's ``cancel`` is set) or
# RecordTooLarge.
Confirm = Callable[[], None]


class RecordSender(Protocol):
    """Sends one batch of records at a time: ``start`` hands them to the client, the
    ``Confirm`` it returns waits for Kafka. The worker builds its next batch in between, on
    the same thread (a sending thread cost a GIL hand-over per batch, docs/benchmarks.md),
    and starts the next batch only after confirming this one."""

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        """Raises what refuses a record while they are handed over (RecordTooLarge by the
        client's own limit, DeliveryFailed; the records before it may be on their way, and
        the worker rolls the batch back); what Kafka reports is raised by the confirm."""
        ...

    def close(self, timeout_s: float = 5.0) -> None: ...


def confirmed() -> None:
    """The ``Confirm`` of a batch with nothing to wait for (no records)."""


def connection_settings(config: KafkaConfig) -> dict[str, ProducerValue]:
    """The librdkafka settings that say where and how to connect (for consumers, admin)."""
    return {
        name: value
        for name, value in config.as_librdkafka_dict().items()
        if name.startswith(_CONNECTION_PREFIXES)
    }


def masked(text: str, settings: Mapping[str, object]) -> str:
    """``text`` with the value of every secret setting replaced by ``***``."""
    for name, value in settings.items():
        if any(word in name for word in _SECRET_WORDS) and isinstance(value, str) and value:
            text = text.replace(value, "***")
    return text


class _RepeatFilter:
    """Logs a recurring librdkafka error (same code) at WARNING once per interval, DEBUG in
    between; keyed by code so that it stays small during a long outage."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._last: dict[int, float] = {}

    def level(self, code: int) -> int:
        now = self._clock()
        last = self._last.get(code)
        if last is not None and now - last < REPEAT_LOG_INTERVAL_S:
            return logging.DEBUG
        self._last[code] = now
        return logging.WARNING


class LibrdkafkaLog:
    """confluent-kafka's ``logger``: librdkafka's log lines into Python logging, secrets masked.

    Broker connection failures (facility FAIL) also reach ``error_cb``, which logs them
    without repeats; their log lines go to DEBUG so an outage does not flood the log.
    """

    _DUPLICATED = frozenset({"FAIL"})

    def __init__(self, settings: Mapping[str, object]) -> None:
        self._settings = settings

    def log(self, level: int, fmt: str, *args: object) -> None:
        if args and args[0] in self._DUPLICATED:
            level = logging.DEBUG
        if librdkafka_log.isEnabledFor(level):
            librdkafka_log.log(level, "%s", masked(fmt % args, self._settings))


class _BatchOutcome:
    """The first failure reported for the batch being sent (served by the poll() and flush()
    of ``start`` and its confirm, on the worker's thread).

    A record still in flight when an earlier batch was abandoned may report its failure
    during the next batch, which then fails too and is sent again: a retry too many, never
    an ack of a record that was not confirmed.
    """

    __slots__ = ("error", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.error: MqError | None = None

    def failed(self, err: KafkaError, msg: Any) -> None:
        if self.error is not None:
            return
        topic, partition = msg.topic(), msg.partition()
        if err.code() in SIZE_ERRORS:
            size = len(msg.value() or b"") + len(msg.key() or b"")
            self.error = BrokerRejectedTooLarge(topic, partition, size, self.limit, err.name())
        else:
            self.error = DeliveryFailed(err.name(), topic, err.str(), fatal=err.fatal())


class _Abandoned(Exception):
    """Internal: the deadline passed or the send was cancelled while producing."""


class KafkaProducer:
    """``RecordSender`` over confluent-kafka's Producer, built from ``KafkaConfig``.

    Defaults on top of ``as_librdkafka_dict()``: ``message.timeout.ms`` 30 s (unless set),
    delivery reports for failed records only (always), librdkafka logs and errors forwarded
    to Python logging. Secrets never reach a log line or an error message.
    """

    def __init__(
        self,
        config: KafkaConfig,
        *,
        client_id: str = "canal-bridge",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        settings: dict[str, Any] = config.as_librdkafka_dict()
        if "message.timeout.ms" not in settings and "delivery.timeout.ms" not in settings:
            settings["message.timeout.ms"] = DEFAULT_MESSAGE_TIMEOUT_MS
        settings.setdefault("client.id", client_id)
        settings["delivery.report.only.error"] = True
        self._settings = settings
        self._clock = clock
        self._repeats = _RepeatFilter(clock)
        self._fatal: KafkaError | None = None
        self._refused: tuple[str, str] | None = None  # (error name, refusal line)
        self._outcome = _BatchOutcome(0)  # the batch being sent, told of failed records
        self.max_message_bytes = int(settings.get("message.max.bytes", DEFAULT_MAX_RECORD_BYTES))
        timeout_ms = settings.get("message.timeout.ms") or settings["delivery.timeout.ms"]
        self.default_timeout_s = int(timeout_ms) / 1000 + SEND_GRACE_S
        self._client: Producer | None = self._new_client()

    # --- sending ------------------------------------------------------------------------------

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        """Produce ``records`` in order (step 1, raising librdkafka's refusal of a record at
        once); the returned confirm does steps 2 to 4.

        1. Produce each record to its partition; when librdkafka's queue is full
           (BufferError), serve delivery reports with poll() and try again.
        2. Flush in short slices until librdkafka holds none of them (each confirmed, or
           reported failed), one failed, ``cancel`` is set, the brokers refuse the client
           (SASL login, certificate: ``refusal``) or the deadline (``timeout_s``, default:
           message timeout + 5 s, counted from ``start``) passes.
        3. If records are still unconfirmed, purge them from the queue so that no stale copy
           is sent after the worker's retry, and report the batch failed: nothing is acked
           that was not confirmed.
        4. Raise the first failure: RecordTooLarge (librdkafka's own limit, or
           BrokerRejectedTooLarge from the broker), DeliveryCancelled, or DeliveryFailed. A
           fatal producer error (idempotence state lost) also replaces the client, so the
           next batch starts on a fresh one.

        The records are on their way once ``start`` returns: librdkafka's threads send them
        while the caller does something else, and the confirm usually finds them confirmed.
        """
        if not records:
            return confirmed
        client = self._client if self._client is not None else self._replace_client()
        deadline = self._clock() + (self.default_timeout_s if timeout_s is None else timeout_s)
        outcome = self._outcome = _BatchOutcome(self.max_message_bytes)
        self._refused = None
        try:
            produced = self._produce_all(client, records, deadline=deadline, cancel=cancel)
        except MqError as exc:
            self._abandon(client)
            if self._fatal is not None or (isinstance(exc, DeliveryFailed) and exc.fatal):
                self._discard()
            raise
        return functools.partial(
            self._confirm, client, records, produced, outcome, deadline, cancel
        )

    def _confirm(  # noqa: PLR0917  (the state ``start`` left, bound by a partial)
        self,
        client: Producer,
        records: Sequence[OutgoingRecord],
        produced: int,
        outcome: _BatchOutcome,
        deadline: float,
        cancel: threading.Event | None,
    ) -> None:
        """Steps 2 to 4 of ``start``."""
        drained = False
        while outcome.error is None and self._fatal is None and self._refused is None:
            left = deadline - self._clock()
            if left <= 0 or (cancel is not None and cancel.is_set()):
                break
            if client.flush(min(FLUSH_SLICE_S, left)) == 0:
                drained = True
                break
        # Step 3: the records librdkafka never took (the queue stayed full, or the records'
        # iteration stopped early: a lost lease, ``bridge.ha.fencing``) and those it still
        # holds (its queue length counts librdkafka's log lines too: served first, and not
        # read again once a flush drained it).
        unconfirmed = len(records) - produced
        if not drained:
            client.poll(0)
            unconfirmed += len(client)
        if unconfirmed > 0:
            if outcome.error is None and self._fatal is None:
                topic = records[0].topic
                if cancel is not None and cancel.is_set():
                    outcome.error = DeliveryCancelled(topic, unconfirmed)
                elif self._refused is not None:
                    code, line = self._refused
                    outcome.error = DeliveryFailed(code, topic, line)
                else:
                    outcome.error = DeliveryFailed(
                        "_TIMED_OUT", topic, f"{unconfirmed} record(s) unconfirmed"
                    )
            self._abandon(client)
        # Step 4
        if self._fatal is not None:
            fatal = self._fatal
            self._discard()
            raise DeliveryFailed(fatal.name(), records[0].topic, fatal.str(), fatal=True)
        if outcome.error is not None:
            if isinstance(outcome.error, DeliveryFailed) and outcome.error.fatal:
                self._discard()
            raise outcome.error

    def _produce_all(
        self,
        client: Producer,
        records: Sequence[OutgoingRecord],
        *,
        deadline: float,
        cancel: threading.Event | None,
    ) -> int:
        """Step 1 of ``start``. Headers go to librdkafka as a list (a tuple is refused),
        made once for the records that share them (a snapshot entry's rows, a split message).
        Each record's first try is inline (a snapshot batch holds thousands); a full queue
        goes to ``_produce``, which waits for room. Returns how many records librdkafka took,
        in order: fewer than ``records`` holds when its iteration ends early or the queue
        stays full until the deadline or ``cancel``."""
        shared: tuple[tuple[str, bytes], ...] | None = None
        headers: list[tuple[str, str | bytes | None]] = []
        produce = client.produce
        produced = 0
        for record in records:
            if record.headers is not shared:
                shared, headers = record.headers, list(record.headers)
            try:
                # All positional (``_produce`` too): callback and on_delivery None (the
                # client's, for failures), timestamp 0 (now), headers. A keyword argument
                # costs the binding's argument parsing 0.5 us per record.
                produce(
                    record.topic, record.value, record.key, record.partition, None, None, 0, headers
                )
            except BufferError:
                try:
                    self._produce(client, record, headers, deadline=deadline, cancel=cancel)
                except _Abandoned:
                    return produced
            except KafkaException as exc:
                raise self._produce_error(record, exc.args[0]) from exc
            produced += 1
            if produced % POLL_EVERY == 0:
                client.poll(0)
        return produced

    def _produce(
        self,
        client: Producer,
        record: OutgoingRecord,
        headers: list[tuple[str, str | bytes | None]],
        *,
        deadline: float,
        cancel: threading.Event | None,
    ) -> None:
        """One record, once librdkafka's queue has room; its refusal as an ``MqError``."""
        while True:
            try:
                client.produce(
                    record.topic, record.value, record.key, record.partition, None, None, 0, headers
                )
                return
            except BufferError:
                # The queue is full: wait for reports to make room (blocking, no busy loop).
                if self._clock() >= deadline or (cancel is not None and cancel.is_set()):
                    raise _Abandoned() from None
                client.poll(FLUSH_SLICE_S)
            except KafkaException as exc:
                raise self._produce_error(record, exc.args[0]) from exc

    def _produce_error(self, record: OutgoingRecord, err: KafkaError) -> MqError:
        if err.code() in SIZE_ERRORS:
            size = len(record.key) + len(record.value or b"")
            limit = self.max_message_bytes
            return RecordTooLarge(
                record.topic, record.partition, size, limit, "librdkafka message.max.bytes"
            )
        return DeliveryFailed(err.name(), record.topic, err.str(), fatal=err.fatal())

    def _abandon(self, client: Producer) -> None:
        """Drop what is still queued (not in flight) and serve the purge reports."""
        client.purge(in_queue=True, in_flight=False)
        client.poll(0)

    # --- lifecycle ----------------------------------------------------------------------------

    def close(self, timeout_s: float = 5.0) -> None:
        """Wait up to ``timeout_s`` for queued records, then drop whatever is left."""
        client, self._client = self._client, None
        if client is None:
            return
        left = client.flush(timeout_s)
        if left:
            log.warning("closing the producer with %d record(s) unconfirmed", left)
            client.purge()
            client.poll(0)

    def _new_client(self) -> Producer:
        settings = dict(self._settings)
        settings["error_cb"] = self._on_error
        settings["on_delivery"] = self._on_delivery
        settings["logger"] = LibrdkafkaLog(self._settings)
        try:
            return Producer(settings)
        except KafkaException as exc:
            reason = masked(str(exc.args[0].str()), self._settings)
            raise ProducerSetupFailed(f"invalid Kafka producer settings: {reason}") from None

    def _replace_client(self) -> Producer:
        self._fatal = None
        self._client = self._new_client()
        return self._client

    def _discard(self) -> None:
        """Forget a client hit by a fatal error; the next batch builds a new one."""
        client, self._client = self._client, None
        if client is not None:
            client.purge()
            client.poll(0)
        log.warning("producer discarded after a fatal error; a new one sends the next batch")

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        """librdkafka's delivery report: only for failed records (see the module's doc)."""
        if err is not None:
            self._outcome.failed(err, msg)

    def _on_error(self, err: KafkaError) -> None:
        """librdkafka's error_cb: instance-wide errors (brokers down, auth, fatal)."""
        refused = refusal(err)
        if refused is not None:
            self._refused = (err.name(), refused)
        text = masked(f"{err.name()}: {refused or err.str()}", self._settings)
        if err.fatal():
            self._fatal = err
            log.error("Kafka producer fatal error: %s", text)
            return
        log.log(self._repeats.level(err.code()), "Kafka producer error: %s", text)


class TopicInspector:
    """Facts about topics from the cluster, for ``canal-bridge check`` and diagnostics."""

    def __init__(self, config: KafkaConfig, timeout_s: float = 10.0) -> None:
        self._settings = connection_settings(config)
        self._timeout_s = timeout_s
        self._refused: str | None = None
        settings: dict[str, Any] = {
            **self._settings,
            "logger": LibrdkafkaLog(self._settings),
            "error_cb": self._on_error,
        }
        try:
            self._admin = AdminClient(settings)
        except KafkaException as exc:
            reason = masked(str(exc.args[0].str()), self._settings)
            raise ProducerSetupFailed(f"invalid Kafka admin settings: {reason}") from None

    def partitions_of(self, topic: str) -> int | None:
        """The partition count of ``topic``; None when the topic does not exist.

        Lists all topics instead of asking for one, which could auto-create it.
        """
        try:
            metadata = self._admin.list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            self._admin.poll(0)  # serves error_cb: why the brokers could not be reached
            if self._refused is not None:
                raise BrokersRefused(self._refused) from None
            raise TopicLookupFailed(topic, masked(exc.args[0].str(), self._settings)) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return None
        return len(found.partitions)

    def max_message_bytes_of(self, topic: str) -> int:
        """The topic's ``max.message.bytes`` (the largest record batch its brokers accept)."""
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        try:
            future = self._admin.describe_configs([resource])[resource]
            entries = future.result(timeout=self._timeout_s)
        except KafkaException as exc:
            raise TopicLookupFailed(topic, masked(exc.args[0].str(), self._settings)) from None
        except TimeoutError:
            raise TopicLookupFailed(topic, f"no answer within {self._timeout_s} s") from None
        return int(entries["max.message.bytes"].value)

    def _on_error(self, err: KafkaError) -> None:
        self._refused = refusal(err) or self._refused
