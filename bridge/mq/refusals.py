"""The brokers refusing this client: its SASL login, or its check of their TLS certificate.

librdkafka reports both as instance-wide errors (``error_cb``) and keeps reconnecting, so a
send would only time out and a topic lookup say "broker transport failure". These turn them
into one line naming the configuration keys to fix. librdkafka's own text names its settings
(``ssl.ca.location``), not ours, and carries the broker address and timings: both are cut.
"""

from __future__ import annotations

import re

from confluent_kafka import KafkaError

# "sasl_ssl://127.0.0.1:19094/bootstrap: " before, "(after 313ms in state AUTH_REQ)" after.
_BROKER = re.compile(r"^\S+://\S+?: ")
_TIMING = re.compile(r"\s*\(after \d+ms in state \w+\)$")
_SASL = re.compile(r"SASL authentication error: (.*)")


def refusal(error: KafkaError) -> str | None:
    """One line for a refused SASL login or an unverifiable broker certificate; None for any
    other error (an outage, a timeout: those are retried and reported as they are)."""
    text = _TIMING.sub("", _BROKER.sub("", error.str()))
    if error.code() == KafkaError._AUTHENTICATION:
        said = _SASL.search(text)
        return (
            f"Kafka refused the SASL login ({said[1] if said else text}): check "
            "kafka.sasl.username, kafka.sasl.password and kafka.sasl.mechanism"
        )
    if error.code() == KafkaError._SSL and "certificate verify failed" in text:
        return (
            "the Kafka broker's TLS certificate was not accepted (certificate verify failed): "
            "set kafka.ssl.ca_location to the CA file that signed it"
        )
    return None
