"""``canal-bridge run`` over TLS on both sides: MariaDB's account created REQUIRE SSL with the
server certificate verified (chain and host name), into Kafka's SASL_SSL listener with
SCRAM-SHA-512 and the broker certificate verified; and the one line each refusal gives.

The services come from ``deploy/local/services.sh`` (``tls_services``: skipped without its TLS
settings unless CANAL_BRIDGE_REQUIRE_TLS=1). Passwords reach the bridge through the
environment and must appear in none of its output.
"""

from __future__ import annotations

import signal
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MysqlEndpoint, TlsServices, connect_admin, unrelated_ca
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end, write_config

pytestmark = pytest.mark.services

ROWS = 20


def _tls_config(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    tls: TlsServices,
    kafka_bootstrap: str,
    schema: str,
    *,
    source_ca: str | None = None,
) -> tuple[Path, str]:
    """write_config's run, turned to the TLS account and the SASL_SSL listener; the
    passwords are ${...} references to the environment BridgeProcess is given."""
    topic = f"tls_{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(tmp_path / "bridge.yaml", mysql, kafka_bootstrap, schema, topic)
    config = yaml.safe_load(path.read_text())
    config["kafka"].update(
        bootstrap_servers=tls.kafka_bootstrap,
        sasl={
            "mechanism": "SCRAM-SHA-512",
            "username": tls.kafka_user,
            "password": "${TEST_KAFKA_SASL_PASSWORD}",
        },
        ssl={"ca_location": tls.ca},
    )
    config["destinations"][0]["source"].update(
        username=tls.mysql_user,
        password="${TEST_MYSQL_TLS_PASSWORD}",
        ssl={"ca": source_ca or tls.ca, "verify_cert": True, "verify_identity": True},
    )
    path.write_text(yaml.safe_dump(config))
    return path, topic


def _bridge(config: Path, tls: TlsServices, **passwords: str) -> BridgeProcess:
    env = {
        "TEST_MYSQL_TLS_PASSWORD": passwords.get("mysql", tls.mysql_password),
        "TEST_KAFKA_SASL_PASSWORD": passwords.get("kafka", tls.kafka_password),
    }
    return BridgeProcess(config, env=env)


def _create_table(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE `{schema}`.t (id INT PRIMARY KEY, name VARCHAR(40), "
                "amount DECIMAL(10,2))"
            )
    finally:
        conn.close()


def _insert(mysql: MysqlEndpoint, schema: str, ids: range) -> dict[str, dict[str, str]]:
    """Inserts one row per id; returns them as the source has them, by id, as strings."""
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            for i in ids:
                cur.execute(
                    f"INSERT INTO `{schema}`.t VALUES (%s, %s, %s)",
                    (i, f"row {i} é", Decimal(i) / 4),
                )
            cur.execute(f"SELECT id, name, amount FROM `{schema}`.t WHERE id >= %s", (ids[0],))
            return {str(i): {"id": str(i), "name": n, "amount": str(a)} for i, n, a in cur}
    finally:
        conn.close()


def _clean(output: str, *secrets: str) -> None:
    assert "Traceback" not in output, output
    for secret in secrets:
        assert secret not in output, "a password reached the bridge's output"


def test_run_streams_over_verified_tls_into_sasl_ssl(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    tls_services: TlsServices,
    kafka_bootstrap: str,
    scratch_schema: str,
) -> None:
    _create_table(mysql, scratch_schema)
    config, topic = _tls_config(tmp_path, mysql, tls_services, kafka_bootstrap, scratch_schema)
    bridge = _bridge(config, tls_services).start()
    try:
        bridge.wait_for_output("reading")
        source_rows = _insert(mysql, scratch_schema, range(1, ROWS + 1))
        arrived: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + 90
        while len(arrived) < ROWS:
            assert time.monotonic() < deadline, f"{len(arrived)} of {ROWS} rows: {bridge.output()}"
            assert bridge.process is not None and bridge.process.poll() is None, bridge.output()
            time.sleep(0.5)
            for _, _, _, message in read_to_end(kafka_bootstrap, topic):
                if message.get("type") == "INSERT":
                    arrived.update({row["id"]: row for row in message["data"]})
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    assert arrived == source_rows
    _clean(bridge.output(), tls_services.mysql_password, tls_services.kafka_password)


def test_wrong_source_ca_stops_with_one_line(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    tls_services: TlsServices,
    kafka_bootstrap: str,
    scratch_schema: str,
) -> None:
    config, _ = _tls_config(
        tmp_path,
        mysql,
        tls_services,
        kafka_bootstrap,
        scratch_schema,
        source_ca=unrelated_ca(tmp_path),
    )
    bridge = _bridge(config, tls_services).start()
    try:
        code = bridge.wait(60)
    finally:
        bridge.kill()
    output = bridge.output()
    assert code == 1, output
    refused = [line for line in output.splitlines() if "was not accepted" in line]
    assert refused, output
    assert f"the TLS certificate of {mysql.address} was not accepted" in refused[0]
    assert "set source.ssl.ca to the CA file" in refused[0]
    _clean(output, tls_services.mysql_password, tls_services.kafka_password)


def test_wrong_sasl_password_fails_each_send_with_one_line(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    tls_services: TlsServices,
    kafka_bootstrap: str,
    scratch_schema: str,
) -> None:
    """The source side is right, so the bridge reads; the first batch it sends is refused at
    once (not after the 30 s message timeout) with the keys to fix, rolled back and retried."""
    _create_table(mysql, scratch_schema)
    config, topic = _tls_config(tmp_path, mysql, tls_services, kafka_bootstrap, scratch_schema)
    wrong = f"wrong-{uuid.uuid4().hex}"
    bridge = _bridge(config, tls_services, kafka=wrong).start()
    try:
        bridge.wait_for_output("reading")
        _insert(mysql, scratch_schema, range(1, 3))
        bridge.wait_for_output("rolled back", timeout_s=60)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    output = bridge.output()
    not_delivered = [line for line in output.splitlines() if "not delivered" in line]
    assert not_delivered, output
    assert "_AUTHENTICATION: Kafka refused the SASL login (" in not_delivered[0]
    assert "check kafka.sasl.username, kafka.sasl.password" in not_delivered[0]
    assert read_to_end(kafka_bootstrap, topic) == []
    _clean(output, wrong, tls_services.mysql_password, tls_services.kafka_password)
