"""Measuring child processes: CPU seconds and peak RSS from /proc, the bridge as a child, the
floors (the server's own binlog client with ``--raw``, and plain mysql-replication) on the same
binlog range."""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from bench.compare import artifacts
from bench.source import Flavor, SourceServer, source_server

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# How often ``wait_for_rows`` asks: every 20 ms near the end, every 50 ms until the first rows
# come, at most a quarter second apart.
MIN_POLL_S, FIRST_POLL_S, MAX_POLL_S = 0.02, 0.05, 0.25
ROWS_METRIC = re.compile(r'^canal_bridge_rows_total\{destination="([^"]+)"\} ([0-9.e+]+)$', re.M)


def bootstrap() -> str:
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092")


@dataclass(frozen=True)
class Usage:
    """CPU seconds (user + system, all threads) and peak RSS so far of a process and its
    descendants (the bridge's binlog reader runs in a child process): CPU summed, including
    children already reaped; peak RSS the sum of each process's own peak."""

    cpu_s: float
    peak_rss_mb: float


SERVICES_DIR = (
    Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
    / "services"
)


@dataclass(frozen=True)
class SharedCpu:
    """CPU seconds so far of what shares the machine with the bridge: the local Kafka broker
    and the source server (MariaDB or MySQL, from ``deploy/local/services.sh``'s PID files; 0
    when not started there) and every process of the machine together."""

    kafka_s: float
    source_s: float
    machine_s: float

    def __sub__(self, earlier: SharedCpu) -> SharedCpu:
        return SharedCpu(
            self.kafka_s - earlier.kafka_s,
            self.source_s - earlier.source_s,
            self.machine_s - earlier.machine_s,
        )


def shared_cpu(source: Flavor = "mariadb") -> SharedCpu:
    """``source``: the server whose CPU counts (its service folder has the same name)."""

    def service(name: str) -> float:
        try:
            return usage_of(int((SERVICES_DIR / name / f"{name}.pid").read_text())).cpu_s
        except (OSError, ValueError):
            return 0.0

    # /proc/stat's first line: user nice system idle iowait irq softirq steal ... (ticks)
    ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return SharedCpu(service("kafka"), service(source), busy / CLOCK_TICKS)


def usage_of(pid: int) -> Usage:
    cpu = peak_kb = 0.0
    for index, member in enumerate(process_tree(pid)):
        try:
            stat = Path(f"/proc/{member}/stat").read_text()
            status = Path(f"/proc/{member}/status").read_text()
        except FileNotFoundError:
            continue  # ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])
        if index == 0:
            ticks += int(fields[13]) + int(fields[14])  # reaped children
        cpu += ticks / CLOCK_TICKS
        peak_kb += _status_hwm_kb(status)
    return Usage(cpu, peak_kb / 1024)


def peak_rss_kb(pid: int) -> int:
    """A process's own peak RSS (``VmHWM``), 0 once it has ended."""
    try:
        return _status_hwm_kb(Path(f"/proc/{pid}/status").read_text())
    except FileNotFoundError:
        return 0


def _status_hwm_kb(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def process_tree(pid: int) -> list[int]:
    """``pid`` first, then its live descendants."""
    tree, index = [pid], 0
    while index < len(tree):
        for task in Path(f"/proc/{tree[index]}/task").glob("*/children"):
            with contextlib.suppress(FileNotFoundError):
                tree += [int(child) for child in task.read_text().split()]
        index += 1
    return tree


def stop_process(process: subprocess.Popen[bytes] | None, grace_s: float = 30) -> None:
    """Stop a child the bench started, by its PID: SIGTERM, so it stops cleanly (a bridge
    flushes its cursor, a Spark driver its query), killed after ``grace_s``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def create_topic(topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap()})
    new = NewTopic(topic, partitions, 1, config={"message.timestamp.type": "LogAppendTime"})
    admin.create_topics([new])[topic].result(30)


def delete_topic(topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap()})
    admin.delete_topics([topic])[topic].result(30)


T = TypeVar("T")


def percentiles(samples: Sequence[float], *points: int) -> tuple[float, ...]:
    """The ``points``-th percentiles (1-99) of ``samples`` by the inclusive method, the one every
    benchmark reports: one sample is each of them, none gives zeros."""
    if len(samples) < 2:
        return tuple(samples[0] if samples else 0.0 for _ in points)
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return tuple(cuts[point - 1] for point in points)


def round_order(runs: list[T], round_number: int) -> list[T]:
    """``runs`` in the order round ``round_number`` (from 1) runs them: rounds 1 to n (n =
    ``len(runs)``) rotate ``runs`` by one place each, rounds n+1 to 2n rotate it reversed, and
    so on. Over 2n rounds each run takes each place twice and, within a round, comes right
    after each other one equally often (two runs: A B, B A, B A, A B). On a box whose speed
    drifts through a round, or where a run pays for the one before it (a JVM exiting), a fixed
    order favoured the same one every time; a rotation alone keeps who follows whom."""
    if not runs:
        return []
    turn = round_number - 1
    base = runs if (turn // len(runs)) % 2 == 0 else runs[::-1]
    shift = turn % len(runs)
    return base[shift:] + base[:shift]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def compile_bridge(root: Path | None) -> None:
    """Write the bytecode of the ``bridge`` package run from ``root`` (this tree by default)
    before it is measured, as ``pip install`` does. Run with ``PYTHONDONTWRITEBYTECODE`` set
    (some sandboxes set it), a module changed since its last ``.pyc`` would be compiled again
    at every start, the binlog reader's process included: 14 ms of CPU inside the measured
    window after a change to eight modules of ``bridge.parse``."""
    package = (root or Path(__file__).resolve().parents[1]) / "bridge"
    if not compileall.compile_dir(package, quiet=1):
        raise RuntimeError(f"some modules of {package} do not compile: see the lines above")


@dataclass
class BridgeRun:
    """``canal-bridge run`` as a child process, reading ``schema`` from a binlog position."""

    workdir: Path
    schema: str
    topic: str
    start: tuple[str, int] | None
    batch_size: int | None = None  # None: the bridge's default
    get_timeout_ms: int = 100
    producer: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    # Destination settings on top of the above, e.g. {"parser_process": False}.
    settings: dict[str, Any] | None = None
    profile: Path | None = None  # py-spy collapsed stacks of the whole run, when set
    # Run the bridge from this folder: its ``bridge`` package is imported from there (the
    # working directory comes first on ``sys.path``), e.g. an older commit's to compare with.
    root: Path | None = None
    # A config written by the caller (bench.many_destinations: many destinations), used as it
    # is instead of the one-destination config above; it should listen on ``port``.
    config_file: Path | None = None
    source: SourceServer | None = None  # the server it reads; None: the local MariaDB

    def __post_init__(self) -> None:
        self.port = free_port()
        self.name = f"bench{uuid.uuid4().hex[:6]}"
        self.log = self.workdir / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.profiler: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        # Each process's own peak RSS seen so far (kB), by PID: see ``note_peaks``.
        self.peaks_kb: dict[int, int] = {}
        self.server = self.source or source_server()

    def config(self) -> Path:
        if self.config_file is not None:
            return self.config_file
        host, port = self.server.address
        destination: dict[str, Any] = {
            "name": self.name,
            "source": {
                "address": f"{host}:{port}",
                "username": self.server.user,
                "password": "${CANAL_PASSWORD}",
                "slave_id": 30000 + os.getpid() % 10000,
            },
            "filter": {"regex": self.schema + r"\..*"},
            "get_timeout_ms": self.get_timeout_ms,
            "mq": {"topic": self.topic},
            # The workload's rows come from the binlog after ``start``, not from a snapshot.
            "snapshot": {"mode": "never"},
        }
        if self.batch_size is not None:
            destination["batch_size"] = self.batch_size
        if self.start is not None:
            destination["start"] = {"journal_name": self.start[0], "position": self.start[1]}
        for key, value in (self.settings or {}).items():
            # A section (mq={delivery: exactly_once}) is merged into the one above.
            merge = isinstance(value, dict) and isinstance(destination.get(key), dict)
            destination[key] = {**destination[key], **value} if merge else value
        config = {
            "kafka": {"bootstrap_servers": bootstrap(), "producer": self.producer or {}},
            "meta": {"store": "file", "dir": str(self.workdir / "meta" / self.name)},
            "admin": {"listen": f"127.0.0.1:{self.port}"},
            "destinations": [destination],
        }
        path = self.workdir / f"{self.name}.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    def start_process(self) -> None:
        env = {
            **os.environ,
            "CANAL_PASSWORD": self.server.password,
            **(self.env or {}),
        }
        command = [sys.executable, "-m", "bridge.cli", "run", "--config", str(self.config())]
        compile_bridge(self.root)
        with self.log.open("wb") as out:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.root
            )
        if self.profile is not None:
            spy = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(self.pid)]
            # --gil (default): only the thread holding the GIL counts, not those waiting for
            # it; BENCH_PY_SPY_FLAGS=--idle samples every thread, waiting or not.
            spy += ["--format", "raw", "--threads", "--subprocesses", "--rate", "200"]
            spy += os.environ.get("BENCH_PY_SPY_FLAGS", "--gil").split()
            spy += ["-o", str(self.profile)]
            self.profiler = subprocess.Popen(spy, stdout=subprocess.DEVNULL)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def rows_acked(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return 0
        match = ROWS_METRIC.search(text)
        return int(float(match.group(2))) if match else 0

    def wait_for_log(self, text: str, timeout_s: float = 60) -> float:
        deadline = time.monotonic() + timeout_s
        while text not in self.log.read_text():
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {text!r} in the bridge log within {timeout_s}s")
            time.sleep(0.02)
        return time.monotonic()

    def wait_for_rows(self, expected: int, timeout_s: float) -> float:
        """Blocks until ``expected`` rows are acked; returns when that was seen.

        The metrics endpoint costs the bridge CPU, so it is asked rarely while much is left
        (half the time the rest should take at the rate seen since the first rows came, at
        most ``MAX_POLL_S``) and every 20 ms near the end. The rate counts from the first
        rows acked, not from the call: counted from the call, the start-up's empty polls
        made a one-second run look slow, and the next poll came up to a second late."""
        deadline = time.monotonic() + timeout_s
        first: tuple[float, int] | None = None  # when rows were first seen acked, and how many
        while (acked := self.rows_acked()) < expected:
            self.check_alive()
            self.note_peaks()
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"{acked} of {expected} rows acked within {timeout_s}s")
            if first is None and acked:
                first = (now, acked)
            wait = FIRST_POLL_S
            if first is not None and now > first[0] and acked > first[1]:
                rate = (acked - first[1]) / (now - first[0])
                wait = (expected - acked) / rate / 2
            time.sleep(min(MAX_POLL_S, max(MIN_POLL_S, wait)))
        return time.monotonic()

    def note_peaks(self) -> None:
        """Keeps each live process's own peak RSS: a child that ends before the run does (a
        snapshot reader's process) still counts in ``peak_rss_mb``."""
        for member in process_tree(self.pid):
            peak = peak_rss_kb(member)
            if peak > self.peaks_kb.get(member, 0):
                self.peaks_kb[member] = peak

    @property
    def peak_rss_mb(self) -> float:
        """The sum of the peaks ``note_peaks`` kept, of every process the run had."""
        return sum(self.peaks_kb.values()) / 1024

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the bridge exited: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.profiler is not None:
            self.profiler.send_signal(signal.SIGINT)
            self.profiler.wait(60)
        stop_process(self.process)


@dataclass(frozen=True)
class FloorResult:
    wall_s: float
    cpu_s: float
    rows: int
    bytes: int


def binlog_floor(
    start: tuple[str, int], end: int, source: SourceServer | None = None
) -> FloorResult:
    """Read the binlog bytes ``start``..``end`` with the server's own client in ``--raw`` mode
    (to files): ``mariadb-binlog`` for MariaDB; for MySQL its ``mysqlbinlog`` from the sid
    root MySQL runs in (``mariadb-binlog`` refuses MySQL 9's version string). MySQL's client
    ignores ``--stop-position`` in raw mode and copies to the file's end, which is ``end``
    when nothing else wrote to the server meanwhile."""
    server = source or source_server()
    env = {**os.environ, "MYSQL_PWD": server.password}
    options = [
        "--read-from-remote-server",
        "--raw",
        f"--host={server.host}",
        f"--port={server.port}",
        f"--user={server.user}",
        f"--start-position={start[1]}",
        f"--stop-position={end}",
    ]
    if server.flavor == "mariadb":
        with tempfile.TemporaryDirectory() as out:
            command = ["mariadb-binlog", *options, f"--result-file={out}/", start[0]]
            return _copy_floor(command, env, Path(out))
    artifacts.COMPARE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=artifacts.COMPARE, prefix="floor-") as out:
        inside = artifacts.host_path_in_sid(Path(out))
        command = ["mysqlbinlog", "--no-defaults", "--get-server-public-key", *options]
        command = artifacts.in_sid([*command, f"--result-file={inside}/", start[0]])
        return _copy_floor(command, env, Path(out))


def _copy_floor(command: list[str], env: dict[str, str], out: Path) -> FloorResult:
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, rusage = os.wait4(process.pid, 0)
    wall = time.monotonic() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        assert process.stderr is not None
        raise RuntimeError(f"{command[0]} failed: {process.stderr.read().decode()}")
    size = sum(p.stat().st_size for p in out.iterdir())
    return FloorResult(wall, rusage.ru_utime + rusage.ru_stime, 0, size)


def replication_floor(
    start: tuple[str, int], end: int, schema: str, source: SourceServer | None = None
) -> FloorResult:
    """Decode the rows of ``schema`` in ``start``..``end`` with plain mysql-replication (in a
    child process, so that its CPU time is its own)."""
    command = [
        sys.executable,
        "-m",
        "bench.replication_floor",
        start[0],
        str(start[1]),
        str(end),
        schema,
        (source or source_server()).flavor,
    ]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, rusage = os.wait4(process.pid, 0)
    wall = time.monotonic() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the mysql-replication floor failed")
    rows = json.loads(output)["rows"]
    return FloorResult(wall, rusage.ru_utime + rusage.ru_stime, rows, 0)
