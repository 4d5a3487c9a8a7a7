"""HA end to end: ``canal-bridge run`` processes sharing one config, MariaDB -> Kafka, with the
active one killed, frozen, or ZooKeeper restarted under them; checked from the topic.

These tests use a ZooKeeper of their own (tick 500 ms, see ``zookeeper_server``) so that a
4 s session expires close to 4 s; the shared one (tick 2 s) may take up to 6 s.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from bridge.ha import HEADER_NODE
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import (
    read_to_end,
    wait_for_final_state,
)
from tests.e2e.workload import (
    assert_complete_and_ordered,
    create_tables,
    keyed_run,
    workload,
)
from tests.ha.cluster import Cluster, address_of, ha_cluster
from tests.ha.conftest import eventually
from tests.ha.zookeeper_server import ThrowawayZooKeeper

SESSION_S = 4.0
KEYS, ROUNDS = 30, 6
# Sent again after a takeover: the unacked batch (batch_size 50) plus the acks of the last
# cursor flush period (200 ms, ~100 changes/s here); generous for a loaded machine.
MAX_DUPLICATES = 150


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    key: bytes | None
    message: dict[str, Any]
    headers: dict[str, bytes]
    timestamp_ms: int

    def as_tuple(self) -> tuple[int, int, bytes | None, dict[str, Any]]:
        return (self.partition, self.offset, self.key, self.message)


def read_topic(
    bootstrap: str, topic: str, final: dict[tuple[str, str], int], timeout_s: float
) -> list[Rec]:
    """Every record until each key's final state was seen (or time runs out)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}"}
        | {"enable.auto.commit": False}
    )
    metadata = consumer.list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
    records: list[Rec] = []
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(seen) < len(final):
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            value = orjson.loads(message.value())
            records.append(
                Rec(
                    message.partition(),
                    message.offset(),
                    message.key(),
                    value,
                    dict(message.headers() or []),
                    message.timestamp()[1],
                )
            )
            if value.get("isDdl"):
                continue
            for row in value["data"]:
                state = -1 if value["type"] == "DELETE" else int(row["version"])
                if final.get((value["table"], row["id"])) == state:
                    seen.add((value["table"], row["id"]))
    finally:
        consumer.close()
    return records


@pytest.fixture(scope="module")
def own_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThrowawayZooKeeper]:
    with ThrowawayZooKeeper(tmp_path_factory.mktemp("zk")) as zk:
        yield zk


def _setup(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    schema: str,
    zk_hosts: str,
    **mq: Any,
) -> tuple[Cluster, str]:
    create_tables(mysql, schema)
    topic, path = keyed_run(tmp_path, mysql, kafka_bootstrap, schema, "ha", **mq)
    return ha_cluster(path, zk_hosts, SESSION_S), topic


def _start_writer(
    mysql: MysqlEndpoint, schema: str, final: dict[tuple[str, str], int]
) -> threading.Thread:
    writer = threading.Thread(
        target=lambda: final.update(workload(mysql, schema, KEYS, ROUNDS, pause_s=0.03))
    )
    writer.start()
    return writer


@pytest.mark.both_servers
def test_kill_9_standby_takes_over_within_session_timeout_nothing_lost(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    own_zookeeper: ThrowawayZooKeeper,
) -> None:
    cluster, topic = _setup(tmp_path, mysql, kafka_bootstrap, scratch_schema, own_zookeeper.hosts)
    final: dict[tuple[str, str], int] = {}
    try:
        a = cluster.start()
        a.wait_for_output("reading")
        b = cluster.start()
        assert cluster.runs(a)
        status = subprocess.run(
            [sys.executable, "-m", "bridge.cli", "status", "--config", str(cluster.config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={**a.env, "CANAL_PASSWORD": "x", **_password_env()},
        ).stdout
        assert f"{cluster.destination}: running on {address_of(a)}" in status, status
        assert f"standby: {address_of(b)}" in status, status
        assert "2 live process(es)" in status, status

        writer = _start_writer(mysql, scratch_schema, final)
        time.sleep(2.5)
        assert writer.is_alive(), "the workload ended before the kill"
        a.kill()
        took = eventually(lambda: cluster.runs(b), SESSION_S + 5, "b owns the running node")
        assert took <= SESSION_S + 2, f"takeover took {took:.1f}s"
        b.wait_for_output("reading", 10)
        writer.join(120)
        records = read_topic(kafka_bootstrap, topic, final, timeout_s=90)
        assert b.process is not None and b.process.poll() is None, b.output()
        b.signal(signal.SIGTERM)  # a clean stop writes the cursor and frees the node at once
        assert b.wait(60) == 0, b.output()
        assert cluster.running() is None
        cursor = f"{cluster.root}/destinations/{cluster.destination}/1001/cursor"
        assert b'"journalName"' in cluster.zk.get(cursor)[0]
    finally:
        cluster.close()
    duplicates = assert_complete_and_ordered(
        [r.as_tuple() for r in records], KEYS, ROUNDS, scratch_schema
    )
    assert duplicates <= MAX_DUPLICATES
    producers = {r.headers.get(HEADER_NODE) for r in records}
    assert producers == {address_of(a).encode(), address_of(b).encode()}
    print(f"takeover {took:.2f}s, {len(records)} records, {duplicates} duplicate changes")


@pytest.mark.parametrize("delivery", ["at_least_once", "exactly_once"])
def test_frozen_active_produces_nothing_after_it_resumes(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    *,
    own_zookeeper: ThrowawayZooKeeper,
    delivery: str,
) -> None:
    """ZooKeeper fencing keeps the resumed zombie from writing; in exactly-once delivery the
    standby's producer also fences the frozen one's and the take-over re-sends nothing."""
    exactly_once = delivery == "exactly_once"
    mq = {"delivery": delivery, "offsets_topic": f"ha-offsets-{uuid.uuid4().hex[:8]}"}
    cluster, topic = _setup(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, own_zookeeper.hosts, **mq
    )
    final: dict[tuple[str, str], int] = {}
    try:
        a = cluster.start()
        a.wait_for_output("reading")
        b = cluster.start()
        writer = _start_writer(mysql, scratch_schema, final)
        time.sleep(2.0)
        a.signal(signal.SIGSTOP)
        eventually(lambda: cluster.runs(b), SESSION_S + 5, "b owns the running node")
        b.wait_for_output("reading", 10)
        time.sleep(1.0)
        resumed_ms = int(time.time() * 1000)
        a.signal(signal.SIGCONT)
        writer.join(120)
        a.wait_for_output("lost", 15)
        wait_for_final_state(kafka_bootstrap, topic, final)
        time.sleep(2.0)  # room for a zombie to misbehave
        records = read_topic(kafka_bootstrap, topic, final, timeout_s=90)
        everything = read_to_end(kafka_bootstrap, topic)
        assert cluster.runs(b)
        assert a.process is not None and a.process.poll() is None, "a should stand by"
        if exactly_once:
            assert "exactly-once delivery resumes at" in b.output(), b.output()
    finally:
        cluster.close()
    from_a = [r for r in records if r.headers.get(HEADER_NODE) == address_of(a).encode()]
    late = [r for r in from_a if r.timestamp_ms >= resumed_ms]
    assert from_a, "a produced nothing before it was frozen"
    assert not late, (
        f"a produced {len(late)} records after it resumed (at {resumed_ms}): "
        f"{[(r.timestamp_ms, r.headers) for r in late[:3]]}\n{a.output()[-6000:]}"
    )
    duplicates = assert_complete_and_ordered(everything, KEYS, ROUNDS, scratch_schema)
    assert duplicates == 0 if exactly_once else duplicates <= MAX_DUPLICATES
    print(f"{delivery}: {len(everything)} records, {len(from_a)} from a, {duplicates} duplicates")


def test_zookeeper_restarted_mid_run_loses_nothing(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
) -> None:
    with ThrowawayZooKeeper(tmp_path / "zk") as zk:
        cluster, topic = _setup(tmp_path, mysql, kafka_bootstrap, scratch_schema, zk.hosts)
        final: dict[tuple[str, str], int] = {}
        try:
            a = cluster.start()
            a.wait_for_output("reading")
            b = cluster.start()
            writer = _start_writer(mysql, scratch_schema, final)
            time.sleep(2.0)
            zk.stop()
            time.sleep(2.0)
            zk.start()
            writer.join(120)
            eventually(lambda: cluster.running() is not None, 30, "someone runs it again")
            records = read_topic(kafka_bootstrap, topic, final, timeout_s=120)
            for process in (a, b):
                assert process.process is not None and process.process.poll() is None
            logs = a.output() + b.output()
            assert "stopped producing and acking" in logs, "the outage did not fence it off"
        finally:
            cluster.close()
    duplicates = assert_complete_and_ordered(
        [r.as_tuple() for r in records], KEYS, ROUNDS, scratch_schema
    )
    print(f"{len(records)} records, {duplicates} duplicate changes")


def _password_env() -> dict[str, str]:
    import os

    return {"CANAL_PASSWORD": os.environ.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal")}
