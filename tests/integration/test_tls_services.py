"""The TLS side of the local services, one refusal at a time: each gives one line that names
the configuration keys to fix and no password; the right settings pass (the negative case).

- MariaDB's account created REQUIRE SSL: PyMySQL without ``source.ssl`` still takes the TLS the
  server offers, so the account logs in; a client that cannot use TLS (forced, as in
  test_mysql_auth) is refused with 1045 like a wrong password, and the line says TLS is
  needed; a wrong password over TLS keeps the plain line.
- Kafka's SASL_SSL listener: ``canal-bridge check`` names the SASL keys for a wrong password
  and ``kafka.ssl.ca_location`` for a CA that did not sign the broker's certificate; a send
  with a wrong password fails on the refusal itself (_AUTHENTICATION), not on a timeout.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest

from bridge.check import CheckResult, check_kafka, check_source
from bridge.config import BridgeConfig, KafkaConfig, SourceConfig, parse_config
from bridge.mq.exceptions import DeliveryFailed
from bridge.mq.producer import KafkaProducer
from bridge.mq.records import OutgoingRecord
from bridge.parse.exceptions import SourceAccessDenied
from bridge.parse.source import open_connection, preflight
from tests.conftest import MysqlEndpoint, TlsServices, unrelated_ca
from tests.e2e.bridge_process import create_topic

pytestmark = pytest.mark.services


def _source_section(
    mysql: MysqlEndpoint, user: str, password: str, **values: Any
) -> dict[str, Any]:
    return {
        "address": mysql.address,
        "username": user,
        "password": password,
        "slave_id": 7300,
        "connect_timeout_s": 5,
        **values,
    }


def _source(mysql: MysqlEndpoint, user: str, password: str, **values: Any) -> SourceConfig:
    return SourceConfig(**_source_section(mysql, user, password, **values))


def _cipher(source: SourceConfig) -> str:
    with open_connection(source) as conn, conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        row = cur.fetchone()
    return str(row[1]) if row else ""


def _one_line(message: str, *passwords: str) -> str:
    assert "\n" not in message
    for password in passwords:
        assert password not in message
    return message


@pytest.fixture
def without_client_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyMySQL as a client without TLS support: it never upgrades a connection."""
    monkeypatch.setattr(pymysql.connections, "SSL_ENABLED", False)


# --- MariaDB: the account created REQUIRE SSL -------------------------------------------------


def test_require_ssl_account_logs_in_over_verified_tls(
    mysql: MysqlEndpoint, tls_services: TlsServices
) -> None:
    tls = {"ca": tls_services.ca, "verify_cert": True, "verify_identity": True}
    source = _source(mysql, tls_services.mysql_user, tls_services.mysql_password, ssl=tls)
    assert _cipher(source)
    assert preflight(source).is_mariadb


def test_require_ssl_account_without_source_ssl_takes_the_offered_tls(
    mysql: MysqlEndpoint, tls_services: TlsServices
) -> None:
    """No certificate is checked then (source.ssl unset), but the connection is TLS."""
    source = _source(mysql, tls_services.mysql_user, tls_services.mysql_password)
    assert _cipher(source)


def test_require_ssl_account_without_tls_is_refused_with_one_line(
    mysql: MysqlEndpoint, tls_services: TlsServices, without_client_tls: None
) -> None:
    section = _source_section(mysql, tls_services.mysql_user, tls_services.mysql_password)
    with pytest.raises(SourceAccessDenied) as refused:
        preflight(SourceConfig(**section))
    message = _one_line(str(refused.value), tls_services.mysql_password)
    assert message == (
        f"access denied for {tls_services.mysql_user}@{mysql.address}: check source.username "
        "and source.password; the connection had no TLS (the server offered none, or this "
        "client cannot use it), which an account created REQUIRE SSL needs: give the server "
        "ssl_cert and ssl_key, and set source.ssl.ca to its CA file"
    )
    [row] = check_source(_config(_kafka(tls_services), section).destinations[0])
    assert (row.check, row.outcome, row.detail) == ("connection", "FAIL", message)
    # The same client logs in with the canal account (no REQUIRE SSL): TLS was what it lacked.
    assert _cipher(_source(mysql, mysql.user, mysql.password)) == ""


def test_wrong_password_over_tls_keeps_the_plain_line(
    mysql: MysqlEndpoint, tls_services: TlsServices
) -> None:
    wrong = "not-the-password"
    source = _source(mysql, tls_services.mysql_user, wrong, ssl={"ca": tls_services.ca})
    with pytest.raises(SourceAccessDenied) as refused:
        preflight(source)
    assert _one_line(str(refused.value), wrong) == (
        f"access denied for {tls_services.mysql_user}@{mysql.address}: check source.username "
        "and source.password"
    )


# --- Kafka: the SASL_SSL listener ---------------------------------------------------------------


def _kafka(tls: TlsServices, password: str | None = None, ca: str | None = None) -> dict[str, Any]:
    """The ``kafka`` section for the SASL_SSL listener."""
    return {
        "bootstrap_servers": tls.kafka_bootstrap,
        "sasl": {
            "mechanism": "SCRAM-SHA-512",
            "username": tls.kafka_user,
            "password": password or tls.kafka_password,
        },
        "ssl": {"ca_location": ca or tls.ca},
    }


def _config(
    kafka: dict[str, Any], source: dict[str, Any] | None = None, topic: str = "t"
) -> BridgeConfig:
    """A one-destination configuration (its source unused by the Kafka checks)."""
    source = source or {"address": "127.0.0.1:1", "username": "u", "slave_id": 1}
    return parse_config(
        {
            "kafka": kafka,
            "destinations": [{"name": "tls", "source": source, "mq": {"topic": topic}}],
        }
    )


def _checked(kafka: dict[str, Any], topic: str) -> list[CheckResult]:
    return check_kafka(_config(kafka, topic=topic), timeout_s=5)


@pytest.fixture
def topic(kafka_bootstrap: str) -> str:
    name = f"tls_check_{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, name, 1)
    return name


def test_check_passes_sasl_ssl_with_the_right_settings(
    tls_services: TlsServices, topic: str
) -> None:
    rows = {row.check: row for row in _checked(_kafka(tls_services), topic)}
    assert rows["connection"].outcome == "PASS"
    assert rows[f"topic {topic}"].outcome == "PASS"


def test_check_names_the_sasl_keys_for_a_wrong_password(
    tls_services: TlsServices, topic: str
) -> None:
    wrong = "wrong-scram-password"
    [row] = _checked(_kafka(tls_services, password=wrong), topic)
    assert (row.check, row.outcome) == ("connection", "FAIL")
    assert _one_line(row.detail, wrong, tls_services.kafka_password) == (
        f"{tls_services.kafka_bootstrap}: Kafka refused the SASL login (Authentication failed "
        "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512): "
        "check kafka.sasl.username, kafka.sasl.password and kafka.sasl.mechanism"
    )


def test_check_names_the_ca_key_for_a_wrong_ca(
    tmp_path: Path, tls_services: TlsServices, topic: str
) -> None:
    [row] = _checked(_kafka(tls_services, ca=unrelated_ca(tmp_path)), topic)
    assert (row.check, row.outcome) == ("connection", "FAIL")
    assert _one_line(row.detail, tls_services.kafka_password) == (
        f"{tls_services.kafka_bootstrap}: the Kafka broker's TLS certificate was not accepted "
        "(certificate verify failed): set kafka.ssl.ca_location to the CA file that signed it"
    )


def _send(kafka: dict[str, Any], topic: str) -> None:
    producer = KafkaProducer(KafkaConfig(**kafka))
    try:
        producer.start([OutgoingRecord(topic, 0, b"k", b"{}", ())])()
    finally:
        producer.close(0)


def test_send_fails_on_the_refused_login_not_on_a_timeout(
    tls_services: TlsServices, topic: str
) -> None:
    _send(_kafka(tls_services), topic)  # the right password: delivered
    wrong = "wrong-scram-password"
    with pytest.raises(DeliveryFailed) as failed:
        _send(_kafka(tls_services, password=wrong), topic)
    assert failed.value.code == "_AUTHENTICATION"
    assert "check kafka.sasl.username, kafka.sasl.password" in str(failed.value)
    assert wrong not in str(failed.value)
