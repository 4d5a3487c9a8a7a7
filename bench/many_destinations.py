"""Many destinations in one process: what N idle destinations cost.

    var/venv/bin/python -m bench.many_destinations --destinations 100 [--idle-seconds 60]
    var/venv/bin/python -m bench.many_destinations --destinations 20 --setting parser_process=true

One schema of the local MariaDB with N one-row tables; one ``canal-bridge run`` with N
destinations, destination i reading table i (its own replica connection and ``slave_id``)
from the binlog's current end into one shared topic, with the defaults of
``config/destinations.yaml`` (heartbeat_period_s 15, get_timeout_ms 100, the file meta store).
Once every destination has started, a burst: one row inserted into every table in one
statement batch, and the time until every destination's ``canal_bridge_rows_total`` counts it
(so all of them stream, not just start; their binlog readers are all up). A few seconds later
it measures over
``--idle-seconds``: the CPU of the bridge and all its child processes (% of one core), their
voluntary context switches per second (how often its threads wake up), and at the end their
resident memory (VmRSS, summed over the processes), processes, threads and open file
descriptors.

Prints a Markdown row (``--record``: appended to bench/results/runs.md). Needs the local services:
``eval "$(deploy/local/services.sh env)"``. MariaDB's ``max_connections`` (151 in
deploy/local) bounds N: each destination holds a replica connection and one for table definitions.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import yaml

from bench.measure import (
    BridgeRun,
    bootstrap,
    create_topic,
    delete_topic,
    process_tree,
    usage_of,
)
from bench.run import RESULTS, load_average, machine, record_table
from bench.source import source_server
from bench.workloads import connect, master_position
from tests.integration.mariadb_server import ThrowawayMariaDB

ROWS = re.compile(r'^canal_bridge_rows_total\{destination="([^"]+)"\} ([0-9.e+]+)$', re.M)
SETTLE_S = 5.0
BURST_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Footprint:
    """What the bridge's process tree holds right now."""

    processes: int
    threads: int
    fds: int
    rss_mb: float
    context_switches: int  # voluntary, all threads of all processes, so far

    @classmethod
    def of(cls, pid: int) -> Footprint:
        processes = threads = fds = switches = 0
        rss_kb = 0
        for member in process_tree(pid):
            try:
                status = Path(f"/proc/{member}/status").read_text()
                fds += len(os.listdir(f"/proc/{member}/fd"))
                switches += sum(_voluntary_switches(member))
            except FileNotFoundError:
                continue  # ended meanwhile
            processes += 1
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    rss_kb += int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads += int(line.split()[1])
        return cls(processes, threads, fds, rss_kb / 1024, switches)


def _voluntary_switches(pid: int) -> Iterable[int]:
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    yield int(line.split()[1])
        except FileNotFoundError:
            continue


@dataclass(frozen=True)
class Result:
    destinations: int
    settings: dict[str, Any]
    start_s: float  # spawn -> every destination has acked its burst row
    idle_core_share: float  # CPU s per s over the idle window
    wakeups_per_s: float
    idle: Footprint
    burst_s: float  # the burst's commit -> every destination has acked its row
    load: tuple[str, str]

    def row(self) -> str:
        settings = ", ".join(f"{k}: {v}" for k, v in self.settings.items()) or "defaults"
        return (
            f"| {self.destinations} | {settings} | {self.idle.rss_mb:,.0f} "
            f"| {self.idle_core_share * 100:.1f} % | {self.wakeups_per_s:,.0f} "
            f"| {self.idle.processes} / {self.idle.threads} / {self.idle.fds} "
            f"| {self.start_s:.1f} | {self.burst_s:.2f} | {self.load[0]} / {self.load[1]} |"
        )


HEADER = (
    "| destinations | settings | RSS MB (all processes) | idle CPU (% of a core) "
    "| wake-ups/s | processes / threads / fds | spawn to all streaming s | burst: all acked "
    "after s "
    "| load average before / after |\n|---|---|---|---|---|---|---|---|---|"
)


@dataclass(frozen=True)
class Source:
    """Where the destinations read: its address and replica account, and a way to run SQL as
    an administrator."""

    address: str
    user: str
    password: str
    run_sql: Callable[[list[str]], None]

    def end(self) -> tuple[str, int]:
        host, port = self.address.split(":")
        conn = pymysql.connect(host=host, port=int(port), user=self.user, password=self.password)
        try:
            return master_position(conn)
        finally:
            conn.close()


@contextmanager
def own_source(count: int) -> Iterator[Source]:
    """A MariaDB of this run's own (binlog on, ROW), so that idle means idle: the shared one
    carries the other test runs' writes, which every destination reads and decodes."""
    server = ThrowawayMariaDB(
        "--log-bin=mysql-bin",
        "--server-id=7",
        "--binlog-format=ROW",
        f"--max-connections={3 * count + 50}",
    )
    try:
        server.start()
        info = server.server
        yield Source(info.address, info.user, info.password, lambda sql: server.root_sql(*sql))
    finally:
        server.remove()


@contextmanager
def shared_source() -> Iterator[Source]:
    """The local services' MariaDB (``deploy/local/services.sh``)."""

    def run_sql(statements: list[str]) -> None:
        conn = connect()
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            conn.close()

    host, port = source_server().address
    env = os.environ
    yield Source(
        f"{host}:{port}",
        env.get("CANAL_BRIDGE_MYSQL_USER", "canal"),
        env.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal"),
        run_sql,
    )


def write_config(
    workdir: Path,
    source: Source,
    schema: str,
    count: int,
    *,
    topic: str,
    port: int,
    settings: dict[str, Any],
) -> Path:
    journal, position = source.end()
    first_slave_id = 200_000 + (os.getpid() % 10_000) * 200
    destinations = []
    for index in range(count):
        destination: dict[str, Any] = {
            "name": f"many{index:03d}",
            "source": {
                "address": source.address,
                "username": source.user,
                "password": "${MANY_PASSWORD}",
                "slave_id": first_slave_id + index,
            },
            "start": {"journal_name": journal, "position": position},
            "filter": {"regex": rf"{schema}\.t{index:03d}"},
            "mq": {"topic": topic},
            # Streaming cost only: with the default (initial) each destination would first
            # snapshot its table on snapshot.parallelism connections of its own.
            "snapshot": {"mode": "never"},
            **settings,
        }
        destinations.append(destination)
    config = {
        "kafka": {"bootstrap_servers": bootstrap()},
        "meta": {"store": "file", "dir": str(workdir / "meta")},
        "admin": {"listen": f"127.0.0.1:{port}"},
        "destinations": destinations,
    }
    path = workdir / "many.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def create_tables(source: Source, schema: str, count: int) -> None:
    tables = [f"CREATE TABLE {schema}.t{i:03d} (id INT PRIMARY KEY, v INT)" for i in range(count)]
    source.run_sql([f"DROP DATABASE IF EXISTS {schema}", f"CREATE DATABASE {schema}", *tables])


def insert_everywhere(source: Source, schema: str, count: int) -> None:
    source.run_sql([f"INSERT INTO {schema}.t{i:03d} VALUES (1, {i})" for i in range(count)])


def rows_per_destination(bridge: BridgeRun) -> dict[str, int]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{bridge.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {name: int(float(value)) for name, value in ROWS.findall(text)}


def wait_started(bridge: BridgeRun, count: int, timeout_s: float) -> None:
    """Until every destination's worker has started and its reader logged where it reads."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = bridge.log.read_text()
        started = len(re.findall(r"MQ worker of many\d+ started", text))
        reading = len(re.findall(r"destination many\d+ reading ", text))
        if started >= count and reading >= count:
            return
        bridge.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{started} workers started and {reading} readers reading of {count} within "
                f"{timeout_s:.0f} s"
            )
        time.sleep(0.5)


def wait_acked(bridge: BridgeRun, count: int, deadline: float) -> None:
    """Until every destination has acked at least one row."""
    while (done := sum(1 for n in rows_per_destination(bridge).values() if n >= 1)) < count:
        bridge.check_alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{done} of {count} destinations acked their row")
        time.sleep(0.05)


def measure(
    source: Source, count: int, idle_s: float, settings: dict[str, Any], workdir: Path
) -> Result:
    schema = f"many_{uuid.uuid4().hex[:6]}"
    topic = f"bench-many-{uuid.uuid4().hex[:8]}"
    create_tables(source, schema, count)
    create_topic(topic)
    bridge = BridgeRun(workdir, schema, topic, None, env={"MANY_PASSWORD": source.password})
    bridge.config_file = write_config(
        workdir, source, schema, count, topic=topic, port=bridge.port, settings=settings
    )
    load_before = load_average()
    try:
        bridge.start_process()
        wait_started(bridge, count, timeout_s=60 + count * 2)
        # The burst first: once every destination has acked its row, every binlog reader
        # (a child process included) is up, so the idle window below holds no start-up work.
        burst_at = time.monotonic()
        insert_everywhere(source, schema, count)
        wait_acked(bridge, count, burst_at + BURST_TIMEOUT_S)
        burst_s = time.monotonic() - burst_at
        start_s = time.monotonic() - bridge.started_at
        time.sleep(SETTLE_S)
        before, cpu_before, began = Footprint.of(bridge.pid), usage_of(bridge.pid), time.monotonic()
        time.sleep(idle_s)
        after, cpu_after, ended = Footprint.of(bridge.pid), usage_of(bridge.pid), time.monotonic()
        window = ended - began
    finally:
        bridge.stop()
        delete_topic(topic)
        source.run_sql([f"DROP DATABASE IF EXISTS {schema}"])
    return Result(
        destinations=count,
        settings=settings,
        start_s=start_s,
        idle_core_share=(cpu_after.cpu_s - cpu_before.cpu_s) / window,
        wakeups_per_s=(after.context_switches - before.context_switches) / window,
        idle=after,
        burst_s=burst_s,
        load=(load_before, load_average()),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.many_destinations", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--destinations", type=int, action="append", required=True)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        help="KEY=VALUE (YAML value) set on every destination, e.g. parser_process=true",
    )
    parser.add_argument(
        "--shared-source",
        action="store_true",
        help="read the local services' MariaDB (with everyone else's writes) instead of a "
        "MariaDB of this run's own",
    )
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    parser.add_argument("--label", default="Many idle destinations")
    args = parser.parse_args(argv)
    settings = {}
    for item in args.setting:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--setting {item!r}: expected KEY=VALUE")
        settings[key] = yaml.safe_load(value)
    print(f"machine: {machine()}", flush=True)
    print(HEADER, flush=True)
    rows = []
    for count in args.destinations:
        with (
            shared_source() if args.shared_source else own_source(count) as source,
            tempfile.TemporaryDirectory(prefix="many-") as workdir,
        ):
            result = measure(source, count, args.idle_seconds, settings, Path(workdir))
        rows.append(result.row())
        print(rows[-1], flush=True)
    if args.record:
        record_table("bench.many_destinations", argv, args.label, HEADER + "\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
