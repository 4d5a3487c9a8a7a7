"""A throwaway single-node KRaft broker of a test's own, for tests that stop and start Kafka.

The shared broker (``deploy/local/services.sh``) must never be stopped by a test; this one
runs from the same jars on free ports in a temporary folder and is stopped by its PID:

    with ThrowawayKafka(tmp_path / "kafka") as broker:
        ... broker.bootstrap ...
        broker.stop(kill=True)   # an outage; the data folder is kept
        broker.start()           # the same broker back, same topics and offsets
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.throwaway import ThrowawayProcess

REPO_ROOT = Path(__file__).resolve().parents[2]


def kafka_libs() -> Path:
    var_dir = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", REPO_ROOT / "var"))
    libs = var_dir / "cache" / "kafka-libs"
    if not libs.is_dir():
        pytest.fail(f"Kafka jars missing in {libs}: run deploy/local/install.sh kafka")
    return libs


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _random_cluster_id() -> str:
    """A UUID in URL-safe base64 without padding, as Kafka's own ``random-uuid`` prints it.

    Like Kafka's ``Uuid.randomUuid``, draw again when it starts with '-': the storage tool
    would read such an id as an option and refuse to format.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class ThrowawayKafka(ThrowawayProcess):
    """One KRaft broker+controller on 127.0.0.1, state under ``workdir``."""

    name = "Kafka"

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.controller_port = free_port()
        self._formatted = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _java(self) -> list[str]:
        log4j = self.workdir / "log4j.properties"
        return [
            "java",
            "-Xmx384m",
            "-Xms128m",
            f"-Dlog4j.configuration=file:{log4j}",
            "-cp",
            f"{kafka_libs()}/*",
        ]

    def _configure(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "server.properties").write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},"
                    f"CONTROLLER://127.0.0.1:{self.controller_port}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "inter.broker.listener.name=PLAINTEXT",
                    f"log.dirs={self.workdir / 'data'}",
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=false",
                    "",
                ]
            )
        )
        (self.workdir / "log4j.properties").write_text(
            "\n".join(
                [
                    "log4j.rootLogger=INFO, F",
                    "log4j.appender.F=org.apache.log4j.FileAppender",
                    f"log4j.appender.F.File={self.workdir / 'server.log'}",
                    "log4j.appender.F.layout=org.apache.log4j.PatternLayout",
                    "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n",
                    "",
                ]
            )
        )
        cluster_id = _random_cluster_id()
        subprocess.run(
            [
                *self._java(),
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id,
                "-c",
                str(self.workdir / "server.properties"),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self._formatted = True

    def start(self, timeout_s: float = 120) -> None:
        """Start (or restart, keeping the data) and wait until it accepts connections."""
        if self.running:
            return
        if not self._formatted:
            self._configure()
        log_file = self.workdir / "server.log"
        log_file.write_text("")
        with (self.workdir / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(
                [*self._java(), "kafka.Kafka", str(self.workdir / "server.properties")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_ready(
            lambda: (
                "Kafka Server started" in log_file.read_text(errors="replace")
                and port_open(self.port)
            ),
            timeout_s,
            log_file,
            poll_s=0.2,
        )
