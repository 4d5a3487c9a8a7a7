"""A throwaway single-node ZooKeeper of a test's own, for tests that stop and start it.

The shared ZooKeeper (``deploy/local/services.sh``) must never be stopped by a test; this one
runs from the same jars with the same settings (``zookeeper_up``) on a free port in a
temporary folder and is stopped by its PID. ``tick_ms`` defaults to 500 (the shared one uses
2000) so that sessions of a few seconds expire close to their timeout: ZooKeeper expires
sessions in tick-sized buckets.

    with ThrowawayZooKeeper(tmp_path / "zk") as zk:
        ... zk.hosts ...
        zk.stop()     # an outage; the data folder (and the sessions in it) is kept
        zk.start()    # the same server back on the same port
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from tests.integration.kafka_broker import free_port, kafka_libs
from tests.throwaway import ThrowawayProcess


def _ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"ruok")
            return sock.recv(16) == b"imok"
    except OSError:
        return False


class ThrowawayZooKeeper(ThrowawayProcess):
    name = "ZooKeeper"

    def __init__(self, workdir: Path, port: int | None = None, tick_ms: int = 500) -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.tick_ms = tick_ms

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _configure(self) -> None:
        (self.workdir / "data").mkdir(parents=True, exist_ok=True)
        (self.workdir / "zoo.cfg").write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_ms}",
                    "initLimit=10",
                    "syncLimit=5",
                    f"dataDir={self.workdir / 'data'}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,srvr,stat",
                    "maxSessionTimeout=60000",
                    "",
                ]
            )
        )
        (self.workdir / "log4j.properties").write_text(
            "\n".join(
                [
                    "log4j.rootLogger=INFO, F",
                    "log4j.appender.F=org.apache.log4j.FileAppender",
                    f"log4j.appender.F.File={self.workdir / 'zookeeper.log'}",
                    "log4j.appender.F.layout=org.apache.log4j.PatternLayout",
                    "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n",
                    "",
                ]
            )
        )

    def start(self, timeout_s: float = 60) -> None:
        """Start (or restart, keeping the data) and wait until it answers ``ruok``."""
        if self.running:
            return
        self._configure()
        with (self.workdir / "stdout.log").open("ab") as out:
            self.process = subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
                    "-Dzookeeper.admin.enableServer=false",
                    "-cp",
                    f"{kafka_libs()}/*",
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    str(self.workdir / "zoo.cfg"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_ready(lambda: _ruok(self.port), timeout_s, self.workdir / "stdout.log")
