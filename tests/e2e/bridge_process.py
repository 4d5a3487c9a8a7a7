"""Run ``canal-bridge`` as a user would: a child process on a config file written for the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import MysqlEndpoint


def write_config(
    path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    schema: str,
    topic: str,
    *,
    producer: dict[str, Any] | None = None,
    **mq: Any,
) -> Path:
    destination = {
        "name": f"d{uuid.uuid4().hex[:8]}",
        "source": {
            "address": mysql.address,
            "username": mysql.user,
            "password": "${CANAL_PASSWORD}",
            "slave_id": 20000 + os.getpid() % 10000,
        },
        "filter": {"regex": schema + r"\..*"},
        "batch_size": mq.pop("batch_size", 50),
        "get_timeout_ms": 100,
        "heartbeat_period_s": 1,
        "mq": {"topic": topic, **mq},
        # These runs check the changes made after the bridge started (the tables exist, and
        # a workload may race a snapshot of them); snapshot tests set their own mode.
        "snapshot": {"mode": "never"},
    }
    config = {
        "kafka": {
            "bootstrap_servers": kafka_bootstrap,
            "producer": {"linger.ms": 5, **(producer or {})},
        },
        "meta": {"store": "file", "dir": str(path.parent / "meta"), "flush_period_ms": 200},
        "admin": {"listen": None},
        "destinations": [destination],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    futures[topic].result(30)


@dataclass
class BridgeProcess:
    config: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start(self) -> BridgeProcess:
        assert self.process is None or self.process.poll() is not None
        self.log = self.config.parent / f"bridge-{time.monotonic_ns()}.log"
        env = {
            **os.environ,
            "CANAL_PASSWORD": os.environ.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal"),
            **self.env,
        }
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bridge.cli", "run", "--config", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        return self

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout_s: float = 60) -> int:
        assert self.process is not None
        return self.process.wait(timeout_s)

    def wait_for_output(self, text: str, timeout_s: float = 60) -> None:
        """Block until the bridge's log shows ``text`` (e.g. that it reads the binlog)."""
        deadline = time.monotonic() + timeout_s
        while text not in self.output():
            assert self.process is not None and self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, f"no {text!r} within {timeout_s}s: {self.output()}"
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text() if self.log else ""

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (how busy a bridge is while it waits)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def consume(
    bootstrap: str, topic: str, isolation: str = "read_committed"
) -> Iterator[tuple[int, int, bytes | None, dict[str, Any]]]:
    """(partition, offset, key, FlatMessage) of every record, from the beginning, forever
    (``(-1, -1, None, {})`` while nothing comes)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"t-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    metadata = consumer.list_topics(topic, timeout=30)
    partitions = [TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions]
    consumer.assign(partitions)
    try:
        while True:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                yield (-1, -1, None, {})
                continue
            yield (
                message.partition(),
                message.offset(),
                message.key(),
                orjson.loads(message.value()),
            )
    finally:
        consumer.close()


def read_to_end(
    bootstrap: str, topic: str, isolation: str = "read_committed", timeout_s: float = 60
) -> list[tuple[int, int, bytes | None, dict[str, Any]]]:
    """Every record of ``topic`` as it stands now (up to each partition's end as
    ``isolation`` sees it: the last stable offset for read_committed), in (partition,
    offset) order. Transaction markers take offsets too, so the end is judged by the
    consumer's position, not by the last record's offset."""
    records = read_records_to_end(bootstrap, topic, isolation, timeout_s)
    return [(r.partition, r.offset, r.key, r.message) for r in records]


@dataclass(frozen=True)
class ReadRecord:
    partition: int
    offset: int
    key: bytes | None
    message: dict[str, Any]  # {} for a null value (a tombstone)
    headers: dict[str, bytes]


def read_records_to_end(
    bootstrap: str, topic: str, isolation: str = "read_committed", timeout_s: float = 60
) -> list[ReadRecord]:
    """``read_to_end`` with each record's headers (the binlog coordinates, the snapshot
    header ``canal-bridge-snapshot``, the HA node)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"t-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        parts = [TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        ends = [consumer.get_watermark_offsets(part, timeout=30)[1] for part in parts]
        consumer.assign([TopicPartition(topic, part.partition, 0) for part in parts])
        records: list[ReadRecord] = []
        deadline = time.monotonic() + timeout_s
        while any(
            end > 0 and position.offset < end  # an unread partition's position is negative
            for position, end in zip(consumer.position(parts), ends, strict=True)
        ):
            assert time.monotonic() < deadline, f"{topic} not read to {ends} in {timeout_s}s"
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            records.append(
                ReadRecord(
                    message.partition(),
                    message.offset(),
                    message.key(),
                    {} if message.value() is None else orjson.loads(message.value()),
                    {k: v or b"" for k, v in message.headers() or ()},
                )
            )
    finally:
        consumer.close()
    return sorted(records, key=lambda r: (r.partition, r.offset))


def wait_for_final_state(bootstrap: str, topic: str, final: dict[tuple[str, str], int]) -> None:
    """Until every key's final state (``workload``'s result) is in the topic, read_committed."""
    deadline = time.monotonic() + 180
    while True:
        state: dict[tuple[str, str], int] = {}
        for _, _, _, message in read_to_end(bootstrap, topic):
            for row in message.get("data") or ():
                version = -1 if message["type"] == "DELETE" else int(row["version"])
                state[(message["table"], row["id"])] = version
        if all(state.get(key) == version for key, version in final.items()):
            return
        assert time.monotonic() < deadline, "the final state never arrived"
        time.sleep(1)
