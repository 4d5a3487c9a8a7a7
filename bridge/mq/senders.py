"""Where a destination's worker sends its records: the broker seam.

``build_worker`` (``bridge.mq.worker``) asks a ``SenderFactory`` for each destination's sender;
the runner picks the factory once with ``sender_factory(config)``, by the config's ``broker``
name in ``SENDERS``: ``kafka`` (``KafkaSenders``, one ``KafkaProducer`` per destination, the
default) or ``memory`` (``bridge.mq.memory.MemorySenders``: records kept in memory and
confirmed at once, for tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bridge.config import BridgeConfig, DestinationConfig, KafkaConfig
from bridge.meta import MetaManager
from bridge.mq.exactly_once import resume
from bridge.mq.exceptions import MqError
from bridge.mq.memory import MemorySenders
from bridge.mq.producer import KafkaProducer, RecordSender
from bridge.mq.records import BatchCursor
from bridge.mq.transactional import TransactionalKafkaProducer, transactional_id


class SenderFactory(Protocol):
    """Makes the sender of each destination's worker, which owns it and closes it when it ends.

    Adding a broker = implement this + register it in ``SENDERS`` (a constructor from the
    whole config, which holds the broker's settings). For example, a sender printing records::

        class PrintSender:
            def start(self, records, timeout_s=None, cancel=None) -> Confirm:
                for record in records:
                    print(record.topic, record.partition, record.value)
                return confirmed  # printed: nothing to wait for

            def close(self, timeout_s: float = 5.0) -> None:
                pass

        class PrintSenders:
            max_record_bytes = 1 << 20

            def sender(self, destination: DestinationConfig) -> RecordSender:
                return PrintSender()

            def cursor(self, destination, meta) -> BatchCursor | None:
                return None  # no exactly-once delivery

        SENDERS["print"] = lambda config: PrintSenders()
    """

    @property
    def max_record_bytes(self) -> int:
        """The largest record the broker takes: bigger ones follow the destination's
        oversize policy."""
        ...

    def sender(self, destination: DestinationConfig) -> RecordSender:
        """A new sender for ``destination``'s worker. In exactly-once delivery, making it
        fences the destination's previous producer (a restarted or frozen process)."""
        ...

    def cursor(self, destination: DestinationConfig, meta: MetaManager) -> BatchCursor | None:
        """In exactly-once delivery: where the destination resumes (its meta store is moved
        there) and the cursor committed with each batch; None in at-least-once delivery.
        Called after ``sender``, so that no fenced producer can commit after it read."""
        ...


class KafkaSenders:
    """One ``KafkaProducer`` per destination, all from the config's ``kafka`` section."""

    def __init__(self, config: KafkaConfig) -> None:
        self._config = config

    @property
    def max_record_bytes(self) -> int:
        return self._config.max_message_bytes

    def sender(self, destination: DestinationConfig) -> RecordSender:
        client_id = f"canal-bridge-{destination.name}"
        if destination.mq.delivery == "exactly_once":
            return TransactionalKafkaProducer(
                self._config,
                transactional_id=transactional_id(destination.name),
                client_id=client_id,
            )
        return KafkaProducer(self._config, client_id=client_id)

    def cursor(self, destination: DestinationConfig, meta: MetaManager) -> BatchCursor | None:
        if destination.mq.delivery != "exactly_once":
            return None
        return resume(self._config, destination, meta)


# broker (the config's ``broker``) -> its sender factory, from the whole config
SENDERS: dict[str, Callable[[BridgeConfig], SenderFactory]] = {
    "kafka": lambda config: KafkaSenders(config.kafka),
    "memory": MemorySenders.from_config,
}


def sender_factory(config: BridgeConfig) -> SenderFactory:
    """The sender factory of the configured broker (``broker``)."""
    make = SENDERS.get(config.broker)
    if make is None:
        raise MqError(
            f"broker {config.broker!r} has no sender factory; registered: "
            f"{', '.join(sorted(SENDERS))}"
        )
    return make(config)
