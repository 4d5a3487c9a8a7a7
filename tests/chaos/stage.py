"""What every chaos scenario sets up and measures: a schema with the chain load, a topic, a bridge
config on them, the load running in a thread, and the figures (records flowing again after a
fault, CPU while waiting) that go into the suite's table."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from tests.chaos.generator import ChainLoad, Source, source_state
from tests.chaos.verifier import Report, verify
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import (
    BridgeProcess,
    cpu_seconds,
    create_topic,
    read_to_end,
    write_config,
)

PK_HASH = r".*\..*:$pk$"  # canal's primary-key partitioning: a key stays on one partition


@dataclass(frozen=True)
class Size:
    """How hard a run of the suite pushes: ``SHORT`` runs in the test suite, ``LONG`` is the
    figure in docs/operations.md."""

    name: str
    keys: int
    kills: int
    kill_changes: int  # the kill -9 scenarios' load
    kill_pause_s: float  # between its transactions, so that the kills fall during the load
    rate_pause_s: float  # between transactions of the loads that run through an outage
    broker_outage_s: float
    database_outage_s: float
    zookeeper_outage_s: float
    unreachable_s: float
    settle_timeout_s: float


SHORT = Size("short", 200, 3, 3000, 0.015, 0.01, 8, 6, 3, 30, 120)
LONG = Size("long", 2000, 50, 500_000, 0.005, 0.005, 38, 20, 8, 30, 900)


@dataclass(frozen=True)
class Outcome:
    """One scenario's line of the table; ``problems`` are failed expectations beyond the
    verifier's (the bridge did not stop when it should, the log was too long, ...)."""

    scenario: str
    delivery: str
    report: Report
    recovery_s: float | None = None
    cpu_waiting: float | None = None  # CPU seconds per wall second while the fault lasted
    notes: str = ""
    problems: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return self.report.ok and not self.problems


class Stage:
    """A scenario's schema (on ``endpoint``), topic (on ``bootstrap``), load and bridge config."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        endpoint: MysqlEndpoint,
        bootstrap: str,
        keys: int,
        *,
        partitions: int = 3,
        password: str | None = None,
        **mq: Any,
    ) -> None:
        tag = uuid.uuid4().hex[:8]
        self.name = name
        self.endpoint = endpoint
        self.bootstrap = bootstrap
        self.password = password
        self.schema = f"chaos_{name.replace('-', '_')}_{tag}"
        self.topic = f"chaos-{name}-{tag}"
        self.workdir = workdir / f"{name}-{tag}"
        self.workdir.mkdir(parents=True)
        self.source = Source(
            endpoint.host, endpoint.port, endpoint.admin_user, endpoint.admin_password
        )
        self.load = ChainLoad(self.source, self.schema, keys)
        create_topic(bootstrap, self.topic, partitions)
        self.config = write_config(
            self.workdir / "destinations.yaml",
            endpoint,
            bootstrap,
            self.schema,
            self.topic,
            partitions=partitions,
            partition_hash=PK_HASH,
            **mq,
        )

    def bridge(self, config: Path | None = None) -> BridgeProcess:
        env = {} if self.password is None else {"CANAL_PASSWORD": self.password}
        return BridgeProcess(config or self.config, env=env)

    def start_bridge(self) -> BridgeProcess:
        bridge = self.bridge().start()
        bridge.wait_for_output("reading")
        return bridge

    def settle(self, timeout_s: float, isolation: str = "read_committed") -> Report:
        """Read the whole topic until the verifier passes or ``timeout_s`` ends; the last
        report either way (the bridge may still be catching up after a fault)."""
        deadline = time.monotonic() + timeout_s
        while True:
            expected = source_state(self.source, self.schema)
            records = read_to_end(self.bootstrap, self.topic, isolation, timeout_s=300)
            report = verify(records, expected, self.load.committed)
            if report.ok or time.monotonic() > deadline:
                return report
            time.sleep(3)

    def drop(self) -> None:
        conn = self.source.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{self.schema}`")
        finally:
            conn.close()


class Loader:
    """The chain load in a thread: ``changes`` of them, or until ``stop()`` when run open-ended
    through an outage."""

    def __init__(self, load: ChainLoad, changes: int = 10**9, pause_s: float = 0.0) -> None:
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(load, changes, pause_s), daemon=True
        )

    def _run(self, load: ChainLoad, changes: int, pause_s: float) -> None:
        try:
            load.run(changes, pause_s=pause_s, stop=self._stop)
        except BaseException as exc:  # reported by stop(): the scenario is void without load
            self.error = exc

    def start(self) -> Loader:
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 600) -> None:
        """Stop (after the current transaction) or wait for the end; raise what the load hit."""
        self._stop.set()
        self.join(timeout_s)

    def join(self, timeout_s: float = 3600) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the load did not end"
        if self.error is not None:
            raise RuntimeError(f"the chaos load failed: {self.error!r}") from self.error


def topic_end(bootstrap: str, topic: str) -> int:
    """The sum of the topic's high watermarks: grows whenever anything is appended."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"end-{uuid.uuid4().hex}"})
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in metadata.topics[topic].partitions
        )
    finally:
        consumer.close()


def records_flow_again(bootstrap: str, topic: str, since: float, timeout_s: float = 120) -> float:
    """Seconds from ``since`` (a monotonic time: the fault ended) until the topic grew; the
    bridge and the load are running. ``timeout_s`` bounds it (returned as the figure then)."""
    baseline = topic_end(bootstrap, topic)
    while topic_end(bootstrap, topic) <= baseline:
        if time.monotonic() - since > timeout_s:
            break
        time.sleep(0.1)
    return time.monotonic() - since


def cpu_while(bridge: BridgeProcess, seconds: float) -> float:
    """Sleep ``seconds`` and return the bridge's CPU seconds per wall second meanwhile."""
    assert bridge.process is not None
    pid = bridge.process.pid
    cpu, wall = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - cpu) / (time.monotonic() - wall)
