"""Where a destination's worker sends its records: the broker seam.

``build_worker`` (``bridge.mq.worker``) asks a ``SenderFactory`` for each destination's sender;
the runner picks the factory once with ``sender_factory(config)``. Kafka (``KafkaSenders``,
one ``KafkaProducer`` per destination) is the one broker today.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bridge.config import BridgeConfig, DestinationConfig, KafkaConfig
from bridge.mq.producer import KafkaProducer, RecordSender


class SenderFactory(Protocol):
    """Makes the sender of each destination's worker, which owns it and closes it when it ends.

    Adding a broker = implement this + register it in ``SENDERS`` (a constructor from the
    whole config, which holds the broker's settings). For example, a sender printing records::

        class PrintSender:
            def send_batch(self, records, timeout_s=None, cancel=None) -> None:
                for record in records:
                    print(record.topic, record.partition, record.value)

            def close(self, timeout_s: float = 5.0) -> None:
                pass

        class PrintSenders:
            max_record_bytes = 1 << 20

            def sender(self, destination: DestinationConfig) -> RecordSender:
                return PrintSender()

        SENDERS["print"] = lambda config: PrintSenders()
    """

    @property
    def max_record_bytes(self) -> int:
        """The largest record the broker takes: bigger ones follow the destination's
        oversize policy."""
        ...

    def sender(self, destination: DestinationConfig) -> RecordSender:
        """A new sender for ``destination``'s worker."""
        ...


class KafkaSenders:
    """One ``KafkaProducer`` per destination, all from the config's ``kafka`` section."""

    def __init__(self, config: KafkaConfig) -> None:
        self._config = config

    @property
    def max_record_bytes(self) -> int:
        return self._config.max_message_bytes

    def sender(self, destination: DestinationConfig) -> RecordSender:
        return KafkaProducer(self._config, client_id=f"canal-bridge-{destination.name}")


# broker -> its sender factory, from the whole config
SENDERS: dict[str, Callable[[BridgeConfig], SenderFactory]] = {
    "kafka": lambda config: KafkaSenders(config.kafka),
}
# The config has no key choosing a broker: its kafka section is the only one.
BROKER = "kafka"


def sender_factory(config: BridgeConfig) -> SenderFactory:
    """The sender factory of the configured broker."""
    return SENDERS[BROKER](config)
