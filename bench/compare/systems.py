"""The three compared systems as child processes with one small lifecycle.

``start()`` spawns the system reading the workload's binlog range into its topic, ``pid`` is
the process whose tree is measured, ``check_alive()`` raises with the log's tail once it has
exited, ``stop()`` ends it (SIGTERM, then SIGKILL after 30 s; only the process started here).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Protocol

from bench.compare import artifacts
from bench.compare.debezium_offsets import offset_file
from bench.compare.settings import (
    CANAL_JAVA_OPTS,
    DEBEZIUM_RELEASES,
    RunSpec,
    canal_properties,
    debezium_name,
    debezium_properties,
    debezium_topic,
    properties_text,
)
from bench.compare.tally import debezium_rows, flat_message_rows
from bench.measure import BridgeRun, stop_process
from bench.source import source_server


def password(spec: RunSpec) -> str:
    """The replication account's password on the server ``spec`` reads (never in a file)."""
    return source_server(spec.flavor).password


class System(Protocol):
    name: str
    topic: str  # the topic its rows go to

    def count(self, value: bytes | None, /) -> int:
        """Rows in one record of its format."""
        ...

    def start(self) -> None: ...
    def check_alive(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def pid(self) -> int: ...


class JavaProcess:
    """A JVM child process writing its output to ``log``."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.logs = [log]  # where ``diagnosis`` looks: the console and any file the JVM logs to

    def diagnosis(self) -> str | None:
        """The first ERROR its logs show, with the first frame outside the JDK (which says
        where it came from: a driver, a parser), or None."""
        for log in self.logs:
            if not log.exists():
                continue
            lines = log.read_text(errors="replace").splitlines()
            for index, line in enumerate(lines):
                if " ERROR " not in line:
                    continue
                message = line.split(" - ", 1)[-1] if " - " in line else line
                message = message.split(") ", 1)[-1] if "] (" in message else message
                frames = (
                    x.strip()[3:] for x in lines[index + 1 : index + 40] if x.startswith("\tat ")
                )
                origin = next((f for f in frames if not f.startswith("java.")), None)
                return f"{message.strip()} (at {origin})" if origin else message.strip()
        return None

    def spawn(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.log.name} exited ({self.process.returncode}): {tail}")

    def stop(self) -> None:
        stop_process(self.process)


class Bridge:
    """canal-bridge with its defaults (acks=all, idempotence, FlatMessage JSON)."""

    name = "canal-bridge"
    count = staticmethod(flat_message_rows)

    def __init__(self, spec: RunSpec, workdir: Path) -> None:
        self.topic = f"cmp-bridge-{uuid.uuid4().hex[:8]}"
        self.run = BridgeRun(
            workdir, spec.schema, self.topic, spec.start, source=source_server(spec.flavor)
        )

    def start(self) -> None:
        self.run.start_process()

    def check_alive(self) -> None:
        self.run.check_alive()

    def stop(self) -> None:
        self.run.stop()

    @property
    def pid(self) -> int:
        return self.run.pid


class Canal(JavaProcess):
    """canal 1.1.7's server in Kafka MQ mode, FlatMessage, on the host's Java."""

    name = "canal 1.1.7"
    count = staticmethod(flat_message_rows)

    def __init__(self, spec: RunSpec, workdir: Path) -> None:
        run = workdir / f"canal-{uuid.uuid4().hex[:6]}"
        run.mkdir(parents=True)
        super().__init__(run / "canal.log")
        self.dir = run
        self.spec = spec
        self.topic = f"cmp-canal-{uuid.uuid4().hex[:8]}"
        self.logs.append(run / "canal-server.log")

    def start(self) -> None:
        classpath = artifacts.canal_classpath()
        config = self.dir / "canal.properties"
        config.write_text(properties_text(canal_properties(self.spec, self.topic, str(self.dir))))
        (self.dir / "logback.xml").write_text(LOGBACK.format(log=self.dir / "canal-server.log"))
        command = ["java", *CANAL_JAVA_OPTS, f"-Dlogback.configurationFile={self.dir}/logback.xml"]
        command += ["-cp", classpath, "CanalBenchLauncher", str(config)]
        self.spawn(command, {**os.environ, "CANAL_PASSWORD": password(self.spec)})


# canal's deployer logs INFO to files; so does this (a DEBUG console would cost CPU).
LOGBACK = """<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} [%thread] %-5level %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="F"/></root>
</configuration>
"""


class Debezium(JavaProcess):
    """Debezium Server (the source's release and connector, Kafka sink) on Java 21 from the
    sid root."""

    count = staticmethod(debezium_rows)

    def __init__(self, spec: RunSpec) -> None:
        self.name = debezium_name(spec.flavor)
        self.release = DEBEZIUM_RELEASES[spec.flavor]
        # Under var/cache/compare: the sid root sees that folder (artifacts.in_sid).
        run = artifacts.COMPARE / "runs" / f"debezium-{uuid.uuid4().hex[:6]}"
        (run / "config").mkdir(parents=True)
        super().__init__(run / "debezium.log")
        self.dir = run
        self.spec = spec
        self.prefix = f"cmpdbz{uuid.uuid4().hex[:6]}"
        self.topic = debezium_topic(self.prefix, spec)

    def start(self) -> None:
        home, java = artifacts.debezium_home(self.release), artifacts.sid_java21()
        state = artifacts.host_path_in_sid(self.dir)
        props = debezium_properties(self.spec, self.prefix, state)
        (self.dir / "config" / "application.properties").write_text(properties_text(props))
        (self.dir / "offsets.dat").write_bytes(
            offset_file(self.prefix, *self.spec.start, self.spec.start_gtids)
        )
        runner = next(home.glob("debezium-server-dist-*-runner.jar"))
        inside = artifacts.host_path_in_sid(home)
        classpath = f"{inside}/{runner.name}:{inside}/config/lib:{inside}/lib/*"
        # Quarkus reads config/application.properties from the working directory.
        command = ["env", "-C", state, java, "-cp", classpath, "io.debezium.server.Main"]
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "DEBEZIUM_SOURCE_DATABASE_PASSWORD": password(self.spec),
        }
        self.spawn(artifacts.in_sid(command), env)

    def stop(self) -> None:
        super().stop()
