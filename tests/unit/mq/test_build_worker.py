"""One builder for a destination's worker: the sender factory's sender, both outlets wrapped by
the optional guard (HA fencing), the same for the plain and the HA path."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from bridge.config import BridgeConfig, DestinationConfig, KafkaConfig
from bridge.ha import FencedOutlets, FencedSender, FencedService, ZkFence, ZkLayout, ZkSession
from bridge.instance.api import CanalService, Message
from bridge.meta import ClientIdentity
from bridge.mq.formats import rows_encoder
from bridge.mq.producer import Confirm, KafkaProducer, RecordSender, confirmed
from bridge.mq.records import OutgoingRecord
from bridge.mq.senders import SENDERS, KafkaSenders, sender_factory
from bridge.mq.worker import build_worker

DESTINATION = DestinationConfig.model_validate(
    {
        "name": "example",
        "source": {"address": "127.0.0.1:3306", "username": "canal", "slave_id": 9},
        "batch_size": 77,
        "mq": {"topic": "t"},
    }
)


class IdleService:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def subscribe(self, client: ClientIdentity) -> None:
        self.calls.append(f"subscribe {client.destination} {client.client_id}")

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        return Message(-1, ())

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        self.calls.append(f"ack {batch_id}")

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        self.calls.append(f"rollback {batch_id}")

    def wake(self, client: ClientIdentity) -> None:
        self.calls.append("wake")


class QuietSender:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        return confirmed

    def close(self, timeout_s: float = 5.0) -> None:
        self.closed.set()


class OneSenderFactory:
    max_record_bytes = 4096

    def __init__(self) -> None:
        self.made: list[str] = []
        self.last = QuietSender()

    def sender(self, destination: DestinationConfig) -> RecordSender:
        self.made.append(destination.name)
        return self.last


class RecordingGuard:
    """Wraps each outlet in a pass-through that notes its use."""

    def __init__(self) -> None:
        self.used: list[str] = []

    def service(self, service: CanalService) -> CanalService:
        guard = self

        class Wrapped:
            def subscribe(self, client: ClientIdentity) -> None:
                guard.used.append("service")
                service.subscribe(client)

            get_without_ack = service.get_without_ack
            ack = service.ack
            rollback = service.rollback
            wake = service.wake

        return Wrapped()

    def sender(self, sender: RecordSender, destination: str) -> RecordSender:
        guard = self

        class Wrapped:
            start = sender.start

            def close(self, timeout_s: float = 5.0) -> None:
                guard.used.append(f"sender of {destination}")
                sender.close(timeout_s)

        return Wrapped()


def run_briefly(worker_service: IdleService, factory: OneSenderFactory, guard: object) -> None:
    worker = build_worker(
        DESTINATION,
        worker_service,  # type: ignore[arg-type]
        factory.sender(DESTINATION),
        guard,  # type: ignore[arg-type]
        encoder=rows_encoder(DESTINATION.mq),
    )
    assert worker.client == ClientIdentity("example", 1001)
    assert worker.settings.batch_size == 77
    worker.start()
    worker.stop()
    assert worker.join(5)
    assert worker.error is None


def test_the_worker_gets_its_sender_from_the_factory_and_owns_it() -> None:
    service, factory = IdleService(), OneSenderFactory()
    run_briefly(service, factory, None)
    assert factory.made == ["example"]
    assert service.calls[0] == "subscribe example 1001"
    assert factory.last.closed.is_set(), "the worker closes the sender it was given"


def test_a_guard_wraps_both_outlets() -> None:
    service, factory, guard = IdleService(), OneSenderFactory(), RecordingGuard()
    run_briefly(service, factory, guard)
    assert guard.used == ["service", "sender of example"]
    assert service.calls[0] == "subscribe example 1001"
    assert factory.last.closed.is_set()


def test_ha_fencing_is_such_a_guard() -> None:
    session = ZkSession("127.0.0.1:1", 4000)  # never started: nothing is asked of ZooKeeper
    outlets = FencedOutlets(ZkFence(session, ZkLayout("/x")), "10.0.0.1:11111")
    assert isinstance(outlets.service(IdleService()), FencedService)
    assert isinstance(outlets.sender(QuietSender(), "example"), FencedSender)


def test_kafka_is_the_default_broker() -> None:
    kafka = KafkaConfig(bootstrap_servers="127.0.0.1:1", producer={"message.max.bytes": 12345})
    config = BridgeConfig(kafka=kafka, destinations=(DESTINATION,))
    senders = sender_factory(config)
    assert isinstance(senders, KafkaSenders)
    assert set(SENDERS) == {"kafka", "memory"}
    assert config.broker == "kafka"  # the default
    assert senders.max_record_bytes == 12345
    sender = senders.sender(DESTINATION)
    try:
        assert isinstance(sender, KafkaProducer)
    finally:
        sender.close(0)
