"""Errors of the MQ layer (routing rules, message building, record sizes)."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class MqError(BridgeError):
    """Base class of every error raised by ``bridge.mq``."""


class RuleSyntaxError(MqError):
    """A routing rule (dynamic topic, partition hash, topic partitions, ddl, oversize) is malformed.

    Raised when rules are compiled, so a bad rule fails at config load, never mid-stream.
    """

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"{reason} (in rule {rule!r})")
        self.rule = rule
        self.reason = reason


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
