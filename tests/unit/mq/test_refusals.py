"""``refusal``: librdkafka's SASL and certificate errors become one line naming our keys."""

from __future__ import annotations

from confluent_kafka import KafkaError

from bridge.mq.refusals import refusal

BROKER = "sasl_ssl://127.0.0.1:19094/bootstrap"


def test_refused_sasl_login_names_the_sasl_keys() -> None:
    error = KafkaError(
        KafkaError._AUTHENTICATION,
        f"{BROKER}: SASL authentication error: Authentication failed during authentication "
        "due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 313ms in state "
        "AUTH_REQ)",
    )
    assert refusal(error) == (
        "Kafka refused the SASL login (Authentication failed during authentication due to "
        "invalid credentials with SASL mechanism SCRAM-SHA-512): check kafka.sasl.username, "
        "kafka.sasl.password and kafka.sasl.mechanism"
    )


def test_unverifiable_certificate_names_our_ca_key_not_librdkafkas() -> None:
    error = KafkaError(
        KafkaError._SSL,
        f"{BROKER}: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
        "failed: broker certificate could not be verified, verify that ssl.ca.location is "
        "correctly configured or root CA certificates are installed (add broker's CA to "
        "ssl.ca.location) (after 4ms in state SSL_HANDSHAKE)",
    )
    line = refusal(error)
    assert line == (
        "the Kafka broker's TLS certificate was not accepted (certificate verify failed): "
        "set kafka.ssl.ca_location to the CA file that signed it"
    )


def test_other_errors_are_not_refusals() -> None:
    """Outages and other TLS failures are retried and reported as librdkafka says them."""
    assert refusal(KafkaError(KafkaError._TRANSPORT, f"{BROKER}: Connection refused")) is None
    assert refusal(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")) is None
    other_tls = KafkaError(KafkaError._SSL, f"{BROKER}: SSL handshake failed: wrong version")
    assert refusal(other_tls) is None
