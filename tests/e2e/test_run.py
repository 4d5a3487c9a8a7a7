"""``canal-bridge run`` end to end: MariaDB -> bridge process -> Kafka, checked from the topic."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, consume, create_topic, write_config
from tests.e2e.workload import (
    PARTITIONS,
    assert_complete_and_ordered,
    create_tables,
    keyed_run,
    workload,
)
from tests.native_paths import compiled_module

pytestmark = pytest.mark.services


def _collect(
    bootstrap: str, topic: str, final: dict[tuple[str, str], int], timeout_s: float
) -> list[tuple[int, int, bytes | None, dict[str, Any]]]:
    """Read the topic until every key's final state has been seen (or time runs out)."""
    records = []
    seen_final: set[tuple[str, str]] = set()
    deadline = time.monotonic() + timeout_s
    for partition, offset, key, message in consume(bootstrap, topic):
        if time.monotonic() > deadline:
            break
        if partition < 0:
            continue
        records.append((partition, offset, key, message))
        if message.get("isDdl"):
            continue
        for row in message["data"]:
            state = -1 if message["type"] == "DELETE" else int(row["version"])
            if final.get((message["table"], row["id"])) == state:
                seen_final.add((message["table"], row["id"]))
        if len(seen_final) == len(final):
            break
    return records


@pytest.fixture
def setup(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> dict[str, Any]:
    create_tables(mysql, scratch_schema)
    topic, config = keyed_run(tmp_path, mysql, kafka_bootstrap, scratch_schema, "e2e")
    return {"topic": topic, "config": config, "schema": scratch_schema}


@pytest.mark.both_servers
@pytest.mark.parametrize(
    "env",
    [{}, {"CANAL_BRIDGE_NATIVE": "0"}],
    ids=["compiled-thread", "pure-python-child-process"],
)
def test_mixed_workload_arrives_complete_in_order_on_canals_partitions(
    setup: dict[str, Any], mysql: MysqlEndpoint, kafka_bootstrap: str, env: dict[str, str]
) -> None:
    """Both ways the bridge runs by default: the compiled hot path with the parser in a
    thread, and the pure-Python one with the parser in a child process."""
    if not env:
        compiled_module()  # skips, saying how to build it, where it is not built
    bridge = BridgeProcess(setup["config"], env=env).start()
    try:
        bridge.wait_for_output("reading")  # the start position is taken before the workload
        path = "pure Python" if env else "compiled (canal-bridge-native)"
        assert f"record path: {path}" in bridge.output()
        final = workload(mysql, setup["schema"], keys=20, rounds=4)
        records = _collect(kafka_bootstrap, setup["topic"], final, timeout_s=90)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    duplicates = assert_complete_and_ordered(records, 20, 4, setup["schema"])
    assert duplicates == 0
    sample = next(m for _, _, _, m in records if not m.get("isDdl") and m["type"] == "INSERT")
    assert sample["sqlType"]["amount"] == 3 and sample["mysqlType"]["amount"] == "decimal(10,2)"
    assert sample["data"][0]["note"].startswith("ünïcode-") and sample["data"][0]["note"].endswith(
        "😀"
    )
    assert sample["pkNames"] == ["id"]


@pytest.mark.both_servers
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_restart_mid_stream_loses_nothing(
    setup: dict[str, Any], mysql: MysqlEndpoint, kafka_bootstrap: str, how: int
) -> None:
    bridge = BridgeProcess(setup["config"]).start()
    final: dict[tuple[str, str], int] = {}
    writer = threading.Thread(
        target=lambda: final.update(
            workload(mysql, setup["schema"], keys=30, rounds=6, pause_s=0.03)
        )
    )
    try:
        bridge.wait_for_output("reading")
        writer.start()
        time.sleep(2.5)
        assert writer.is_alive(), "the workload ended before the bridge was stopped"
        bridge.signal(how)
        code = bridge.wait(60)
        if how == signal.SIGTERM:
            assert code == 0, bridge.output()
        writer.join(120)
        bridge = BridgeProcess(setup["config"]).start()
        bridge.wait_for_output("reading")
        records = _collect(kafka_bootstrap, setup["topic"], final, timeout_s=120)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    duplicates = assert_complete_and_ordered(records, 30, 6, setup["schema"])
    if how == signal.SIGTERM:
        assert duplicates <= 50, "more duplicates than one unacked batch"


def test_validate_reports_every_problem_with_its_path_and_starts_nothing(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text(
        "kafka: {bootstrap_servers: 'nohost'}\n"
        "destinations:\n"
        "  - name: a\n"
        "    source: {address: 'db:3306', username: canal, password: x, slave_id: 0}\n"
        "    batch_size: 0\n"
        "    mq: {topic: t, partitions: 0, ddl: sideways}\n"
    )
    for command in ("validate", "run"):
        result = subprocess.run(
            [sys.executable, "-m", "bridge.cli", command, "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2
        for path in (
            "kafka.bootstrap_servers",
            "destinations[0].source.slave_id",
            "destinations[0].batch_size",
            "destinations[0].mq.partitions",
            "destinations[0].mq.ddl",
        ):
            assert path in result.stderr, f"{command}: {path} not reported in {result.stderr}"
        assert "x" not in result.stderr.split("password")[-1][:3]
    assert not (tmp_path / "meta").exists()


@pytest.mark.both_servers
@pytest.mark.parametrize("ddl", ["inline", "topic", "skip"])
def test_ddl_policy_routes_ddl_messages(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str, ddl: str
) -> None:
    topic = f"ddl-{uuid.uuid4().hex[:8]}"
    ddl_topic = f"{topic}-ddl"
    create_topic(kafka_bootstrap, topic, PARTITIONS)
    create_topic(kafka_bootstrap, ddl_topic, 1)
    policy = f"topic:{ddl_topic}" if ddl == "topic" else ddl
    config = write_config(
        tmp_path / "destinations.yaml",
        mysql,
        kafka_bootstrap,
        scratch_schema,
        topic,
        partitions=PARTITIONS,
        partition_hash=r".*\..*:$pk$",
        ddl=policy,
    )
    conn = connect_admin(mysql)
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading")
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{scratch_schema}`.t VALUES (1, 1), (2, 2)")
            cur.execute(f"ALTER TABLE `{scratch_schema}`.t ADD COLUMN w INT")
            cur.execute(f"INSERT INTO `{scratch_schema}`.t VALUES (3, 3, 3)")
        ddl_expected = 2 if ddl == "inline" else 0
        main = _drain(
            kafka_bootstrap,
            topic,
            lambda got: _row_count(got) >= 3 and _ddl_count(got) >= ddl_expected,
            30,
        )
        # The DDL is produced before the last insert, so the other topic is complete by now.
        other = _drain(kafka_bootstrap, ddl_topic, lambda got: False, 3)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
        conn.close()
    ddl_in_main = [(p, m["type"]) for p, m in main if m.get("isDdl")]
    ddl_elsewhere = [(p, m["type"]) for p, m in other if m.get("isDdl")]
    expected = [(0, "CREATE"), (0, "ALTER")]
    assert ddl_in_main == (expected if ddl == "inline" else [])
    assert ddl_elsewhere == (expected if ddl == "topic" else [])
    assert sorted(r["id"] for _, m in main if not m.get("isDdl") for r in m["data"]) == [
        "1",
        "2",
        "3",
    ]


def _row_count(got: list[tuple[int, dict[str, Any]]]) -> int:
    return sum(len(m["data"]) for _, m in got if not m.get("isDdl"))


def _ddl_count(got: list[tuple[int, dict[str, Any]]]) -> int:
    return sum(1 for _, m in got if m.get("isDdl"))


def _drain(
    bootstrap: str,
    topic: str,
    done: Callable[[list[tuple[int, dict[str, Any]]]], bool],
    timeout_s: float,
) -> list[tuple[int, dict[str, Any]]]:
    """(partition, FlatMessage) of ``topic`` until ``done`` says so or ``timeout_s`` passed."""
    got: list[tuple[int, dict[str, Any]]] = []
    deadline = time.monotonic() + timeout_s
    for partition, _, _, message in consume(bootstrap, topic):
        if partition >= 0:
            got.append((partition, message))
        if done(got) or time.monotonic() > deadline:
            break
    return got
