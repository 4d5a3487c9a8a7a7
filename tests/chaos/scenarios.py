"""The chaos scenarios: each takes the shared services, a work folder and a ``Size`` and returns
an ``Outcome`` (the verifier's report plus recovery and CPU figures).

Faults only ever hit what the scenario started itself: the bridge processes, and a private
MariaDB / Kafka / ZooKeeper on free ports (``ThrowawayMariaDB``, ``ThrowawayKafka``,
``ThrowawayZooKeeper``), all stopped by PID. The shared services are used but never stopped.
"""

from __future__ import annotations

import contextlib
import errno
import random
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.chaos.generator import source_state
from tests.chaos.partition import TcpRelay
from tests.chaos.stage import (
    Loader,
    Outcome,
    Size,
    Stage,
    cpu_while,
    records_flow_again,
)
from tests.chaos.verifier import Record, Report, verify
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end
from tests.ha.cluster import Cluster, ha_cluster
from tests.ha.conftest import eventually
from tests.ha.zookeeper_server import ThrowawayZooKeeper
from tests.integration.kafka_broker import ThrowawayKafka
from tests.integration.mariadb_server import ThrowawayMariaDB

SESSION_S = 4.0  # HA session timeout of the scenarios (a ZooKeeper tick of 500 ms)
MAX_LOG_LINES = 20  # the bridge's log over 30 s with the source down at start
LARGE_ROW_BYTES = 30 * 1024 * 1024


@dataclass(frozen=True)
class Services:
    """The shared services (used, never stopped) and where the scenarios keep their files."""

    mysql: MysqlEndpoint
    kafka_bootstrap: str
    workdir: Path


Scenario = Callable[[Services, Size], Outcome]


def _stop(bridge: BridgeProcess) -> list[str]:
    """SIGTERM and expect a clean exit (a problem otherwise); kill -9 if it hangs."""
    if bridge.process is None or bridge.process.poll() is not None:
        return []
    bridge.signal(signal.SIGTERM)
    try:
        code = bridge.wait(60)
    except subprocess.TimeoutExpired:
        bridge.kill()
        return ["no exit within 60 s of SIGTERM"]
    return [] if code == 0 else [f"exit {code} on SIGTERM"]


def kill_9(partitions: int, delivery: str) -> Scenario:
    """kill -9 at random moments during the load, restarted each time (``size.kills`` times)."""

    def scenario(services: Services, size: Size) -> Outcome:
        mq = {"delivery": delivery, "offsets_topic": f"chaos-offsets-{uuid.uuid4().hex[:8]}"}
        stage = Stage(
            f"kill9-{partitions}p",
            services.workdir,
            services.mysql,
            services.kafka_bootstrap,
            size.keys,
            partitions=partitions,
            batch_size=20,
            **mq,
        )
        stage.load.create_table()
        rng = random.Random(19)
        bridge = stage.start_bridge()
        loader = Loader(stage.load, size.kill_changes, size.kill_pause_s).start()
        recoveries, during_load = [], 0
        try:
            for _ in range(size.kills):
                time.sleep(rng.uniform(0.3, 2.5))
                during_load += loader.alive
                bridge.kill()
                bridge = stage.bridge().start()
                restarted = time.monotonic()
                bridge.wait_for_output("reading")
                if loader.alive:
                    recoveries.append(
                        records_flow_again(stage.bootstrap, stage.topic, restarted, 60)
                    )
            loader.join()
            report = stage.settle(size.settle_timeout_s)
            problems = _stop(bridge)
        finally:
            bridge.kill()
            stage.drop()
        if during_load < size.kills // 2:
            problems.append(f"only {during_load} of {size.kills} kills hit the load")
        return Outcome(
            f"kill -9 x{size.kills}, {partitions} partition(s)",
            delivery,
            report,
            recovery_s=max(recoveries, default=None),
            notes=f"{during_load} kills during the load; recovery: the slowest restart",
            problems=tuple(problems),
        )

    return scenario


def broker_down(services: Services, size: Size) -> Outcome:
    """The (private) Kafka broker killed for ``size.broker_outage_s`` while the load runs."""
    with ThrowawayKafka(services.workdir / f"kafka-{uuid.uuid4().hex[:6]}") as broker:
        stage = Stage(
            "broker-down",
            services.workdir,
            services.mysql,
            broker.bootstrap,
            size.keys,
            producer={"message.timeout.ms": 2000},  # fail fast: roll back and back off
        )
        stage.load.create_table()
        bridge = stage.start_bridge()
        loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
        try:
            time.sleep(3)
            broker.stop(kill=True)
            cpu = cpu_while(bridge, size.broker_outage_s)
            broker.start()
            recovery = records_flow_again(stage.bootstrap, stage.topic, time.monotonic())
            time.sleep(2)
            loader.stop()
            report = stage.settle(size.settle_timeout_s)
            problems = _stop(bridge)
        finally:
            bridge.kill()
            stage.drop()
    return Outcome(
        f"broker down {size.broker_outage_s:.0f} s",
        "at_least_once",
        report,
        recovery,
        cpu,
        problems=tuple(problems),
    )


@contextlib.contextmanager
def private_source(*flags: str) -> Iterator[tuple[ThrowawayMariaDB, MysqlEndpoint]]:
    """A private MariaDB with a ROW binlog and an admin account for the load (started later
    by the caller, so that it can be down at the bridge's start)."""
    server = ThrowawayMariaDB("--log-bin=mysql-bin", "--server-id=7", "--binlog-format=ROW", *flags)
    endpoint = MysqlEndpoint(
        "127.0.0.1",
        server.port,
        server.server.user,
        server.server.password,
        "chaos",
        "chaos-admin-pw",
        "mariadb",
    )
    try:
        yield server, endpoint
    finally:
        server.remove()


def _add_admin(server: ThrowawayMariaDB, endpoint: MysqlEndpoint) -> None:
    server.root_sql(
        f"CREATE USER '{endpoint.admin_user}'@'%' IDENTIFIED BY '{endpoint.admin_password}'",
        f"GRANT ALL ON *.* TO '{endpoint.admin_user}'@'%'",
    )


def database_down(services: Services, size: Size) -> Outcome:
    """The (private) source killed for ``size.database_outage_s``; the load pauses meanwhile
    (a transaction cut by the crash would leave its outcome unknown) and resumes after."""
    with private_source() as (server, endpoint):
        server.start()
        _add_admin(server, endpoint)
        stage = Stage(
            "database-down",
            services.workdir,
            endpoint,
            services.kafka_bootstrap,
            size.keys,
            password=endpoint.password,
        )
        stage.load.create_table()
        bridge = stage.start_bridge()
        try:
            before = Loader(stage.load, pause_s=size.rate_pause_s).start()
            time.sleep(3)
            before.stop()
            server.stop(kill=True)
            cpu = cpu_while(bridge, size.database_outage_s)
            server.start()
            healed = time.monotonic()
            loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
            recovery = records_flow_again(stage.bootstrap, stage.topic, healed)
            time.sleep(2)
            loader.stop()
            report = stage.settle(size.settle_timeout_s)
            problems = _stop(bridge)
        finally:
            bridge.kill()
    return Outcome(
        f"database down {size.database_outage_s:.0f} s",
        "at_least_once",
        report,
        recovery,
        cpu,
        problems=tuple(problems),
    )


def database_unreachable_at_start(services: Services, size: Size) -> Outcome:
    """The bridge started against a source that is not there (a closed port) for
    ``size.unreachable_s``: its log must stay short (one line per back-off attempt); then the
    source comes up on that port and the bridge must start reading by itself."""
    with private_source() as (server, endpoint):
        stage = Stage(
            "unreachable",
            services.workdir,
            endpoint,
            services.kafka_bootstrap,
            size.keys,
            password=endpoint.password,
        )
        bridge = stage.bridge().start()
        try:
            cpu = cpu_while(bridge, size.unreachable_s)
            lines = len(bridge.output().splitlines())
            server.start()
            _add_admin(server, endpoint)
            stage.load.create_table()
            up = time.monotonic()
            bridge.wait_for_output("reading", 120)
            recovery = time.monotonic() - up
            stage.load.run(500)
            report = stage.settle(size.settle_timeout_s)
            problems = _stop(bridge)
        finally:
            bridge.kill()
    if lines > MAX_LOG_LINES:
        problems.append(f"{lines} log lines in {size.unreachable_s:.0f} s (> {MAX_LOG_LINES})")
    return Outcome(
        f"database unreachable at start {size.unreachable_s:.0f} s",
        "at_least_once",
        report,
        recovery,
        cpu,
        notes=f"{lines} log lines while unreachable",
        problems=tuple(problems),
    )


@contextlib.contextmanager
def _ha_stage(
    name: str, services: Services, size: Size, zk_hosts: str, delivery: str
) -> Iterator[tuple[Stage, Cluster]]:
    mq = {"delivery": delivery, "offsets_topic": f"chaos-offsets-{uuid.uuid4().hex[:8]}"}
    stage = Stage(name, services.workdir, services.mysql, services.kafka_bootstrap, size.keys, **mq)
    stage.load.create_table()
    cluster = ha_cluster(stage.config, zk_hosts, SESSION_S)
    try:
        yield stage, cluster
    finally:
        cluster.close()
        stage.drop()


def zookeeper_down(services: Services, size: Size) -> Outcome:
    """HA: the (private) ZooKeeper killed for ``size.zookeeper_outage_s`` under two processes;
    the active one must stop producing and acking while it cannot know it still owns the run."""
    with (
        ThrowawayZooKeeper(services.workdir / f"zk-{uuid.uuid4().hex[:6]}") as zk,
        _ha_stage("zk-down", services, size, zk.hosts, "at_least_once") as (stage, cluster),
    ):
        a = cluster.start()
        a.wait_for_output("reading")
        cluster.start()
        loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
        time.sleep(3)
        zk.stop(kill=True)
        cpu = cpu_while(a, size.zookeeper_outage_s)
        zk.start()
        recovery = records_flow_again(stage.bootstrap, stage.topic, time.monotonic())
        time.sleep(2)
        loader.stop()
        report = stage.settle(size.settle_timeout_s)
        logs = "".join(p.output() for p in cluster.processes)
    problems = [] if "stopped producing and acking" in logs else ["the outage fenced nothing"]
    return Outcome(
        f"ZooKeeper down {size.zookeeper_outage_s:.0f} s (HA)",
        "at_least_once",
        report,
        recovery,
        cpu,
        problems=tuple(problems),
    )


def session_expiry(services: Services, size: Size) -> Outcome:
    """HA: the active process cut off from ZooKeeper (a TCP relay, see ``partition``) past its
    session timeout while ZooKeeper runs on: its session expires, the standby takes over; after
    the heal the old active must have stood down ("lost") and nothing is lost or reordered."""
    with (
        ThrowawayZooKeeper(services.workdir / f"zk-{uuid.uuid4().hex[:6]}") as zk,
        TcpRelay(zk.port) as relay,
        _ha_stage("session-expiry", services, size, zk.hosts, "at_least_once") as (
            stage,
            cluster,
        ),
    ):
        via_relay = stage.workdir / "via-relay.yaml"
        settings = yaml.safe_load(stage.config.read_text())
        settings["zookeeper"]["hosts"] = relay.address
        via_relay.write_text(yaml.safe_dump(settings))
        a = cluster.start(via_relay)
        a.wait_for_output("reading")
        b = cluster.start()
        loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
        time.sleep(3)
        relay.cut()
        cut = time.monotonic()
        eventually(lambda: cluster.runs(b), SESSION_S + 10, "the standby runs it")
        takeover = records_flow_again(stage.bootstrap, stage.topic, cut)
        time.sleep(max(0.0, SESSION_S + 2 - (time.monotonic() - cut)))
        relay.heal()
        a.wait_for_output("lost", 30)
        time.sleep(2)
        loader.stop()
        report = stage.settle(size.settle_timeout_s)
        problems = [] if cluster.runs(b) else ["the standby does not run it after the heal"]
    return Outcome(
        "ZooKeeper session expiry (HA, partition)",
        "at_least_once",
        report,
        takeover,
        notes="recovery: from the cut to the standby's records",
        problems=tuple(problems),
    )


def frozen_active(delivery: str) -> Scenario:
    """HA: the active process frozen (SIGSTOP) past its session timeout, then resumed."""

    def scenario(services: Services, size: Size) -> Outcome:
        with (
            ThrowawayZooKeeper(services.workdir / f"zk-{uuid.uuid4().hex[:6]}") as zk,
            _ha_stage("frozen", services, size, zk.hosts, delivery) as (stage, cluster),
        ):
            a = cluster.start()
            a.wait_for_output("reading")
            b = cluster.start()
            loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
            time.sleep(3)
            a.signal(signal.SIGSTOP)
            frozen = time.monotonic()
            eventually(lambda: cluster.runs(b), SESSION_S + 10, "the standby runs it")
            takeover = records_flow_again(stage.bootstrap, stage.topic, frozen)
            time.sleep(1)
            a.signal(signal.SIGCONT)
            a.wait_for_output("lost", 30)
            time.sleep(2)
            loader.stop()
            report = stage.settle(size.settle_timeout_s)
            problems = [] if cluster.runs(b) else ["the standby does not run it"]
        return Outcome(
            "frozen active (HA, SIGSTOP/SIGCONT)",
            delivery,
            report,
            takeover,
            notes="recovery: from the freeze to the standby's records",
            problems=tuple(problems),
        )

    return scenario


@contextlib.contextmanager
def _tiny_tmpfs(path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs at ``path`` (root only), unmounted on exit."""
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder: Path) -> Path:
    """Write a file until the file system is full; returns it (delete it to free the space)."""
    filler = folder / "filler"
    try:
        with filler.open("wb") as out:
            while True:
                out.write(b"\0" * 4096)
                out.flush()
    except OSError as exc:  # raised by a write or by the close's last flush
        if exc.errno != errno.ENOSPC:
            raise
    return filler


def disk_full_for_the_cursor(services: Services, size: Size) -> Outcome:
    """The file system of the cursor file (meta.dir, a 1 MiB tmpfs) full for
    ``size.database_outage_s`` while the load runs; then space comes back. If the bridge
    stopped meanwhile it is started again, as a supervisor would."""
    stage = Stage("disk-full", services.workdir, services.mysql, services.kafka_bootstrap, 50)
    stage.load.create_table()
    with _tiny_tmpfs(stage.workdir / "meta") as meta:
        bridge = stage.start_bridge()
        loader = Loader(stage.load, pause_s=size.rate_pause_s).start()
        try:
            time.sleep(3)
            filler = _fill(meta)
            cpu = cpu_while(bridge, size.database_outage_s)
            exited = bridge.process is not None and bridge.process.poll()
            filler.unlink()
            healed = time.monotonic()
            if exited is not None:
                bridge = stage.bridge().start()
            recovery = records_flow_again(stage.bootstrap, stage.topic, healed)
            time.sleep(2)
            loader.stop()
            report = stage.settle(size.settle_timeout_s)
            problems = _stop(bridge)
        finally:
            bridge.kill()
            stage.drop()
    how = "kept running" if exited is None else f"exited ({exited}) and was restarted"
    return Outcome(
        f"disk full for the cursor {size.database_outage_s:.0f} s (tmpfs)",
        "at_least_once",
        report,
        recovery,
        cpu,
        notes=f"the bridge {how}",
        problems=tuple(problems),
    )


def large_row(policy: str) -> Scenario:
    """A 30 MB row (key outside the load's) between two loads, under ``mq.oversize: policy``
    (the producer's limit is message.max.bytes, 1 MB). ``fail`` and ``split`` must stop the
    bridge with the error naming mq.oversize (one row cannot be split) after delivering
    everything before it, gap-free; ``dead_letter`` must go on, the row's change missing from
    the topic (the one loss the verifier may report) and a notice for it in the dead-letter
    topic."""

    def scenario(services: Services, size: Size) -> Outcome:
        dead_letters = f"chaos-dlq-{uuid.uuid4().hex[:8]}"
        setting = f"dead_letter:{dead_letters}" if policy == "dead_letter" else policy
        stage = Stage(
            f"large-{policy}",
            services.workdir,
            services.mysql,
            services.kafka_bootstrap,
            size.keys,
            oversize=setting,
        )
        if policy == "dead_letter":
            create_topic(services.kafka_bootstrap, dead_letters, 1)
        stage.load.create_table()
        bridge = stage.start_bridge()
        problems: list[str] = []
        try:
            stage.load.run(300)
            stage.load.write_large(size.keys, LARGE_ROW_BYTES)
            stage.load.run(300)
            if policy == "dead_letter":
                report, notices = _without_large_row(stage, dead_letters, size)
                if [n[3].get("type") for n in notices] != ["UPDATE", "UPDATE"]:
                    problems.append(f"dead-letter topic holds {notices!r:.300}")
                problems += _stop(bridge)
            else:
                bridge.wait_for_output("mq.oversize", 120)
                code = bridge.wait(60)
                if code == 0:
                    problems.append("exit 0 after refusing the large row")
                # Stopped at the large row: what came before must be gap-free and in order.
                report = verify(read_to_end(services.kafka_bootstrap, stage.topic))
        finally:
            bridge.kill()
            stage.drop()
        return Outcome(
            f"30 MB row, mq.oversize {policy}",
            "at_least_once",
            report,
            notes="stops, names mq.oversize"
            if policy != "dead_letter"
            else "2 notices: the row's UPDATE and the next (its before image is 30 MB)",
            problems=tuple(problems),
        )

    return scenario


def _without_large_row(stage: Stage, dead_letters: str, size: Size) -> tuple[Report, list[Record]]:
    """The load's keys judged without the large row's key, whose every change after the 30 MB
    UPDATE is oversize too (the next change's before image holds the 30 MB value); that key
    must show only its INSERT in the topic, its two UPDATEs as dead-letter notices."""
    large_key = f"{stage.schema}.chain:{size.keys}".encode()
    deadline = time.monotonic() + size.settle_timeout_s
    while True:
        records = read_to_end(stage.bootstrap, stage.topic)
        source = source_state(stage.source, stage.schema)
        source.pop(("chain", str(size.keys)))
        load = [r for r in records if r[2] != large_key]
        report = verify(load, source, stage.load.committed - 3)
        if (report.ok and len(load) + 1 == len(records)) or time.monotonic() > deadline:
            return report, read_to_end(stage.bootstrap, dead_letters)
        time.sleep(3)


# The suite, in the order of the table.
SCENARIOS: dict[str, Scenario] = {
    "kill9-1p": kill_9(1, "at_least_once"),
    "kill9-3p": kill_9(3, "at_least_once"),
    "kill9-3p-eo": kill_9(3, "exactly_once"),
    "broker-down": broker_down,
    "database-down": database_down,
    "database-unreachable": database_unreachable_at_start,
    "zookeeper-down": zookeeper_down,
    "session-expiry": session_expiry,
    "frozen-active": frozen_active("at_least_once"),
    "frozen-active-eo": frozen_active("exactly_once"),
    "disk-full": disk_full_for_the_cursor,
    "large-row-fail": large_row("fail"),
    "large-row-split": large_row("split"),
    "large-row-dead-letter": large_row("dead_letter"),
}
