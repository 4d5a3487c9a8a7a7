"""KafkaProducer without a broker: size limits, deadlines, cancel, settings and secrets.

Nothing listens on the bootstrap address, so every record stays queued until it times out.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from bridge.config import KafkaConfig, KafkaSasl
from bridge.mq.exceptions import (
    BrokerRejectedTooLarge,
    DeliveryCancelled,
    DeliveryFailed,
    ProducerSetupFailed,
    RecordTooLarge,
)
from bridge.mq.producer import KafkaProducer, connection_settings, masked
from bridge.mq.records import OutgoingRecord


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config(**producer: object) -> KafkaConfig:
    return KafkaConfig(bootstrap_servers=f"127.0.0.1:{_closed_port()}", producer=producer)


@pytest.fixture
def producer() -> Iterator[KafkaProducer]:
    made = KafkaProducer(config(**{"message.max.bytes": 2000}))
    yield made
    made.close(0)


def record(size: int = 10, partition: int = 0) -> OutgoingRecord:
    return OutgoingRecord("t", partition, b"k", b"v" * size, (("binlog.file", b"f"),))


def test_settings_keep_canal_bridge_defaults_and_add_a_message_timeout() -> None:
    made = KafkaProducer(config(), client_id="canal-bridge-example")
    try:
        settings = made._settings
        assert settings["acks"] == "all"
        assert settings["enable.idempotence"] is True
        assert settings["message.timeout.ms"] == 30_000
        assert settings["client.id"] == "canal-bridge-example"
        assert settings["delivery.report.only.error"] is True  # confirmed by an empty queue
        assert made.default_timeout_s == 35.0
    finally:
        made.close(0)


def test_user_message_timeout_is_kept() -> None:
    made = KafkaProducer(config(**{"delivery.timeout.ms": 4000}))
    try:
        assert "message.timeout.ms" not in made._settings
        assert made.default_timeout_s == 9.0
    finally:
        made.close(0)


def test_record_over_librdkafkas_limit_is_record_too_large(producer: KafkaProducer) -> None:
    with pytest.raises(RecordTooLarge, match=r"librdkafka message\.max\.bytes") as caught:
        producer.start([record(), record(5000)], timeout_s=5)()
    assert not isinstance(caught.value, BrokerRejectedTooLarge)
    assert (caught.value.size, caught.value.limit) == (5001, 2000)
    assert producer._client is not None
    # The record produced before it was purged: nothing is left to flush (no broker to take it).
    assert producer._client.flush(1) == 0


def test_deadline_with_records_unconfirmed_fails_and_purges(producer: KafkaProducer) -> None:
    started = time.monotonic()
    with pytest.raises(DeliveryFailed) as caught:
        producer.start([record(), record()], timeout_s=0.5)()
    assert caught.value.code == "_TIMED_OUT"
    assert time.monotonic() - started < 2
    assert producer._client is not None
    # No stale copy is left to go out after a retry (no broker could have taken one).
    assert producer._client.flush(1) == 0


def test_message_timeout_is_reported_as_delivery_failed() -> None:
    made = KafkaProducer(config(**{"message.timeout.ms": 300}))
    try:
        with pytest.raises(DeliveryFailed) as caught:
            made.start([record()])()
        assert caught.value.code == "_MSG_TIMED_OUT"
        assert not caught.value.fatal
    finally:
        made.close(0)


def test_cancel_abandons_the_batch_quickly(producer: KafkaProducer) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(DeliveryCancelled):
        producer.start([record()], timeout_s=30, cancel=cancel)()
    assert time.monotonic() - started < 1.5


class _HandedOverUntil(list[OutgoingRecord]):
    """A batch whose iteration stops after ``handed`` records, as ``bridge.ha.fencing``'s does
    once the lease is lost; its length is the whole batch's."""

    def __init__(self, records: list[OutgoingRecord], handed: int) -> None:
        super().__init__(records)
        self._handed = handed

    def __iter__(self) -> Iterator[OutgoingRecord]:
        return iter(self[: self._handed])


@pytest.mark.parametrize("cancelled", [True, False])
def test_records_never_handed_over_are_not_confirmed(
    producer: KafkaProducer, cancelled: bool
) -> None:
    """Nothing reached librdkafka, so its queue is empty at once: the batch is still not
    confirmed, its records were not sent."""
    cancel = threading.Event()
    if cancelled:
        cancel.set()
    batch = _HandedOverUntil([record(), record()], handed=0)
    with pytest.raises(DeliveryCancelled if cancelled else DeliveryFailed):
        producer.start(batch, timeout_s=5, cancel=cancel)()


@pytest.mark.timeout(10)
def test_empty_batch_returns_at_once(producer: KafkaProducer) -> None:
    """With no broker listening, any record or flush would wait for the message timeout
    (35 s, beyond the 10 s bound) and then fail; an empty batch must do neither."""
    assert producer.default_timeout_s > 10
    assert producer.start([], timeout_s=None)() is None  # type: ignore[func-returns-value]


def test_bad_setting_is_reported_without_secrets() -> None:
    kafka = KafkaConfig(
        bootstrap_servers="127.0.0.1:9",
        sasl=KafkaSasl(username="u", password=SecretStr("hunter2")),
        producer={"no.such.setting": 1},
    )
    with pytest.raises(ProducerSetupFailed, match=r"no\.such\.setting") as caught:
        KafkaProducer(kafka)
    assert "hunter2" not in str(caught.value)


def test_masked_hides_every_secret_value() -> None:
    settings = {"sasl.password": "hunter2", "ssl.key.password": "k3y", "client.id": "x"}
    assert masked("bad hunter2 and k3y for x", settings) == "bad *** and *** for x"


def test_connection_settings_leave_producer_settings_out() -> None:
    kafka = KafkaConfig(
        bootstrap_servers="127.0.0.1:9",
        sasl=KafkaSasl(username="u", password=SecretStr("p")),
        producer={"linger.ms": 5},
    )
    assert connection_settings(kafka) == {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
    }


def test_broker_down_is_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    made = KafkaProducer(config(**{"message.timeout.ms": 1500, "reconnect.backoff.max.ms": 100}))
    try:
        with (
            caplog.at_level(logging.DEBUG, logger="bridge.mq.producer"),
            pytest.raises(DeliveryFailed),
        ):
            made.start([record()])()
    finally:
        made.close(0)
    errors = [r for r in caplog.records if r.getMessage().startswith("Kafka producer error")]
    assert errors, "librdkafka's error_cb was not forwarded"
    warnings = [r for r in errors if r.levelno == logging.WARNING]
    codes = [r.getMessage().split(": ")[1] for r in warnings]  # "..error: _TRANSPORT: .."
    assert len(set(codes)) == len(codes), "an error code was logged at WARNING twice"
