"""``canal-bridge check`` on an exactly-once destination against the real broker: the local
single broker (transaction.state.log.* at 1) passes every row, a deleting offsets topic fails
with the fix, and the probe never fences the bridge that runs the destination."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bridge.check import CheckResult, check_exactly_once, probe_id
from bridge.config import KafkaConfig, parse_config
from bridge.mq.exactly_once import ensure_offsets_topic
from bridge.mq.records import OutgoingRecord
from bridge.mq.transactional import TransactionalKafkaProducer, transactional_id
from tests.conftest import MysqlEndpoint

pytestmark = pytest.mark.timeout(180)


def _create_topic(bootstrap: str, topic: str, **config: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(30)
    return topic


def _config(mysql: MysqlEndpoint, bootstrap: str, name: str, **mq: Any) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": bootstrap},
        "admin": {"listen": None},
        "destinations": [
            {
                "name": name,
                "source": {
                    "address": mysql.address,
                    "username": mysql.user,
                    "password": mysql.password,
                    "slave_id": 50101,
                    "connect_timeout_s": 5,
                },
                "mq": {"delivery": "exactly_once", **mq},
            }
        ],
    }


def _rows(results: list[CheckResult]) -> dict[tuple[str, str], tuple[str, str]]:
    return {(r.scope, r.check): (r.outcome, r.detail) for r in results}


def _run_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "check", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_passes_on_the_local_broker_and_fails_a_deleting_offsets_topic(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic = _create_topic(kafka_bootstrap, f"ops-eo-{suffix}")
    offsets = f"ops-eo-offsets-{suffix}"
    name = f"eo{suffix}"
    path = tmp_path / "destinations.yaml"
    path.write_text(
        yaml.safe_dump(_config(mysql, kafka_bootstrap, name, topic=topic, offsets_topic=offsets))
    )
    run = _run_check(path)
    assert run.returncode == 0, run.stdout + run.stderr

    def row(scope: str, check: str, outcome: str) -> str:
        found = [
            line
            for line in run.stdout.splitlines()
            if line.split()[:1] == [scope] and f" {check} " in line
        ]
        assert len(found) == 1, (scope, check, run.stdout)
        assert f" {outcome} " in found[0], found[0]
        return found[0]

    assert "inter.broker.protocol.version" in row("kafka", "broker version", "PASS")
    transaction_log = row("kafka", "transaction log", "PASS")
    assert "transaction.state.log.replication.factor=1" in transaction_log
    assert "transaction.state.log.min.isr=1, 1 broker(s)" in transaction_log
    assert f"probe id {probe_id(name)}" in row(name, "transactions", "PASS")
    assert "creates it compacted" in row(name, f"offsets topic {offsets}", "PASS")
    # Listing every topic (naming one could auto-create it): check did not create it.
    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
    assert offsets not in listed.topics, "check must not create the offsets topic"

    ensure_offsets_topic(KafkaConfig(bootstrap_servers=kafka_bootstrap), offsets)
    run = _run_check(path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cleanup.policy=compact" in row(name, f"offsets topic {offsets}", "PASS")

    deleting = _create_topic(
        kafka_bootstrap, f"ops-eo-plain-{suffix}", **{"cleanup.policy": "delete"}
    )
    path.write_text(
        yaml.safe_dump(_config(mysql, kafka_bootstrap, name, topic=topic, offsets_topic=deleting))
    )
    run = _run_check(path)
    assert run.returncode == 1, run.stdout + run.stderr
    failed = row(name, f"offsets topic {deleting}", "FAIL")
    assert f"the offsets topic {deleting} has cleanup.policy=delete" in failed
    assert "--add-config cleanup.policy=compact" in failed
    assert run.stdout.count(" FAIL ") == 1, run.stdout


def test_the_probe_does_not_fence_the_running_bridge(kafka_bootstrap: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    name, topic = f"eo{suffix}", _create_topic(kafka_bootstrap, f"ops-eo-run-{suffix}")
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": kafka_bootstrap},
            "destinations": [
                {
                    "name": name,
                    "source": {"address": "127.0.0.1:1", "username": "c", "slave_id": 9},
                    "mq": {"topic": topic, "delivery": "exactly_once"},
                }
            ],
        }
    )
    running = TransactionalKafkaProducer(config.kafka, transactional_id=transactional_id(name))
    try:
        running.start([OutgoingRecord(topic, 0, b"k", b"before", ())])()
        rows = _rows(check_exactly_once(config))
        assert rows[(name, "transactions")][0] == "PASS"
        # The bridge's producer was not fenced: its next transaction commits.
        running.start([OutgoingRecord(topic, 0, b"k", b"after", ())])()
    finally:
        running.close()


def test_at_least_once_destinations_get_no_exactly_once_rows(kafka_bootstrap: str) -> None:
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": kafka_bootstrap},
            "destinations": [
                {
                    "name": "plain",
                    "source": {"address": "127.0.0.1:1", "username": "c", "slave_id": 9},
                    "mq": {"topic": "ops-eo-unused"},
                }
            ],
        }
    )
    assert check_exactly_once(config) == []
