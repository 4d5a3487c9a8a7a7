"""Errors of the MQ layer (message building, record sizes, delivery); a malformed routing
rule is a config error (``bridge.config.rules.RuleSyntaxError``)."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class MqError(BridgeError):
    """Base class of every error raised by ``bridge.mq``."""


class RecordTooLarge(MqError):
    """A message exceeds the producer's size limit and the oversize policy is ``fail``.

    canal loops forever (rollback, resend) on such a message; we stop with the facts instead.
    """

    def __init__(self, topic: str, partition: int, size: int, limit: int, where: str) -> None:
        super().__init__(
            f"record for {topic}[{partition}] is {size} bytes, over the limit of {limit} "
            f"({where}); raise message.max.bytes on producer and broker, or set "
            "mq.oversize to 'split' or 'dead_letter:<topic>'"
        )
        self.topic = topic
        self.partition = partition
        self.size = size
        self.limit = limit
        self.where = where


class BrokerRejectedTooLarge(RecordTooLarge):
    """The broker refused a record as too large (MSG_SIZE_TOO_LARGE / RECORD_LIST_TOO_LARGE).

    The record passed the producer's own limit, so the topic's ``max.message.bytes`` (or the
    broker's ``message.max.bytes``) is lower than ``kafka.producer.message.max.bytes``. Resending
    cannot help (canal loops here); the oversize policy only acts on the producer's limit.
    """

    def __init__(self, topic: str, partition: int, size: int, limit: int, code: str) -> None:
        MqError.__init__(
            self,
            f"the broker rejected a {size}-byte record for {topic}[{partition}] as too large "
            f"({code}): the topic's max.message.bytes is below the producer's message.max.bytes "
            f"({limit}); set kafka.producer.message.max.bytes to at most the topic's limit so "
            "that mq.oversize applies, or raise the topic's max.message.bytes",
        )
        self.topic = topic
        self.partition = partition
        self.size = size
        self.limit = limit
        self.where = "broker"
        self.code = code


class DeliveryFailed(MqError):
    """A record of a batch was not confirmed by Kafka; the batch must not be acked.

    ``code`` is librdkafka's error name (``_MSG_TIMED_OUT``, ``NOT_ENOUGH_REPLICAS``, ...);
    ``fatal`` is true when the producer instance is unusable (idempotence state lost) and is
    replaced before the next batch. The worker rolls back and retries after a back-off.
    """

    def __init__(self, code: str, topic: str, reason: str, *, fatal: bool = False) -> None:
        super().__init__(f"delivery to {topic} failed: {code}: {reason}")
        self.code = code
        self.topic = topic
        self.reason = reason
        self.fatal = fatal


class DeliveryCancelled(DeliveryFailed):
    """The batch was abandoned before every record was confirmed because the worker stops."""

    def __init__(self, topic: str, pending: int) -> None:
        super().__init__("_CANCELLED", topic, f"stopped with {pending} record(s) unconfirmed")
        self.pending = pending


class ProducerSetupFailed(MqError):
    """librdkafka refused the producer/consumer settings (secret values are masked)."""


class TopicLookupFailed(MqError):
    """The cluster could not be asked about a topic (unreachable, not authorised, ...)."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"cannot look up topic {topic}: {reason}")
        self.topic = topic
        self.reason = reason


class BrokersRefused(MqError):
    """The brokers refused this client: its SASL login, or its check of their TLS
    certificate (the message names the keys to fix: ``bridge.mq.refusals``)."""


class RenderedRowsMisfit(MqError):
    """Rows the binlog reader process rendered ahead of their batch do not fit the record
    they must go into (a bug: the instance renders only where they always fit)."""
