"""Side by side: canal-bridge, Debezium Server 3.0 and canal 1.1.7 on the same binlog range.

    var/venv/bin/python -m bench.compare --workload a|d [--scale S] [--repeat N]
        [--systems bridge,debezium,canal] [--record]

The workload is loaded once into a fresh schema of the local MariaDB (after FLUSH BINARY LOGS,
so it sits in one binlog file); then, ``--repeat`` times, each system in turn reads that range
into a fresh topic of its own on the local Kafka broker (acks=all); its topic's end is watched
until it stands still, then every row is read back and counted. Per system: rows/s from the
first to the last record's broker append time, CPU seconds per million rows of all its
processes (spawn to the last row, and from its first record), peak RSS, and canal-bridge ÷
each. Java artifacts are fetched and cached under var/cache on first use
(bench/compare/artifacts.py). docs/benchmarks.md says more.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.compare.results import Round, Summary, summarize, table
from bench.compare.settings import RunSpec
from bench.compare.systems import Bridge, Canal, Debezium, System
from bench.compare.tally import TopicFollower
from bench.measure import (
    Usage,
    bootstrap,
    create_topic,
    delete_topic,
    mysql_address,
    round_order,
    usage_of,
)
from bench.run import RESULTS, load_average, machine
from bench.workloads import WORKLOADS, connect, create_schema, master_position

SYSTEMS: dict[str, Callable[[RunSpec, Path], System]] = {
    "bridge": Bridge,
    "debezium": lambda spec, _workdir: Debezium(spec),
    "canal": Canal,
}


def load_workload(name: str, scale: float) -> tuple[str, tuple[str, int], str, int]:
    """Loads workload ``name`` into ``bench_cmp_<name>``; its schema, first binlog position,
    the GTID position there and its row changes."""
    workload = WORKLOADS[name]
    schema = f"bench_cmp_{name}"
    conn = connect()
    create_schema(conn, schema, workload)
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
    start = master_position(conn)
    with conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        row = cur.fetchone()
    gtids = str(row[0]) if row else ""
    began = time.monotonic()
    workload.load(conn, schema, scale)
    end_file, end = master_position(conn)
    conn.close()
    if end_file != start[0]:
        raise RuntimeError(f"the binlog rotated during the load ({start[0]} -> {end_file})")
    expected = workload.row_changes(scale)
    print(
        f"[{name}] loaded {expected} row changes in {time.monotonic() - began:.1f}s, "
        f"{start}..{end}",
        flush=True,
    )
    return schema, start, gtids, expected


# While a system writes: how often the topic's end is asked, and how long it must stand still
# before its records are read and counted.
WATCH_S = 0.1
QUIET_S = 1.0


def measure(system: System, expected: int, topics: list[str]) -> Round:
    """Runs ``system`` until its topic holds ``expected`` rows, then reads on to the end and
    checks the count (a duplicate or a lost row fails the run). The topic is added to
    ``topics`` once made, for ``main`` to delete when every run is over: the broker removes a
    deleted topic's files later (``log.segment.delete.delay.ms``, a minute), so a deletion
    between runs would do its work inside a later one.

    While the system writes, only the topic's end offsets are watched (``written``): reading
    and counting its records as they came would parse each record's JSON in this process,
    which on two cores takes CPU from the system being measured, and most from the fastest
    one. The span is the records' broker append times either way."""
    create_topic(system.topic)
    topics.append(system.topic)
    follower = TopicFollower(system.topic, system.count)
    try:
        system.start()
        # Step 1: the first record (start-up: a JVM, a schema snapshot), sampling the CPU then.
        deadline = time.monotonic() + 180
        while follower.appended() == 0:
            _wait(system, deadline, f"{system.topic}: no record")
        # The first record of any kind: a row for all three (the workloads' DDL comes before
        # their range; Debezium's data topic carries no schema changes, canal's no DDL here).
        cpu_at_first = usage_of(system.pid).cpu_s
        # Step 2: every row.
        usage = written(follower, system, expected, time.monotonic() + 300 + expected / 500)
    finally:
        system.stop()
    try:
        follower.drain()
    finally:
        follower.close()
    tally = follower.tally
    if tally.rows != expected:
        raise RuntimeError(f"{system.name}: {tally.rows} rows in its topic, expected {expected}")
    return Round(
        rows=tally.rows,
        span_s=tally.span_s,
        cpu_s=usage.cpu_s,
        stream_cpu_s=usage.cpu_s - cpu_at_first,
        peak_rss_mb=usage.peak_rss_mb,
    )


def written(follower: TopicFollower, system: System, expected: int, deadline: float) -> Usage:
    """Waits until the topic holds ``expected`` rows; returns the system's usage at the first
    watch (within ``WATCH_S``) after its topic's end last moved: what it spends while the end
    stands still and the records are counted is not the workload's (its handling of the last
    acks and its offset bookkeeping are left out, as they were when the records were counted
    as they came). The records are read and counted each time the end has stood still for
    ``QUIET_S``: a pause, or the end of the writing."""
    end, usage, moved = follower.appended(), usage_of(system.pid), time.monotonic()
    while True:
        _wait(
            system,
            deadline,
            f"{system.topic}: {end} records written, {follower.tally.rows} of {expected} rows "
            "counted at the last pause",
        )
        now = follower.appended()
        if now != end:
            end, usage, moved = now, usage_of(system.pid), time.monotonic()
        elif time.monotonic() - moved >= QUIET_S:
            follower.drain()
            if follower.tally.rows >= expected:
                return usage
            moved = time.monotonic()  # a pause, not the end: watch on


def _wait(system: System, deadline: float, what: str) -> None:
    """One watch interval, after checking that ``system`` is alive and the time is not up."""
    system.check_alive()
    if time.monotonic() > deadline:
        raise TimeoutError(f"{what} in time")
    time.sleep(WATCH_S)


def compare(
    name: str, scale: float, repeat: int, systems: list[str], topics: list[str]
) -> list[Summary]:
    """``repeat`` rounds of every system, in ``round_order`` (over twice as many rounds as
    systems, each runs first, and right after each other one, equally often); the topics
    made go to ``topics``."""
    schema, start, gtids, expected = load_workload(name, scale)
    spec = RunSpec(
        schema=schema,
        table=WORKLOADS[name].table,
        start=start,
        start_gtids=gtids,
        mysql=mysql_address(),
        user=os.environ.get("CANAL_BRIDGE_MYSQL_USER", "canal"),
        bootstrap=bootstrap(),
        slave_id=40000 + os.getpid() % 10000,
    )
    rounds: dict[str, list[Round]] = {key: [] for key in systems}
    names: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as workdir:
        for index in range(repeat):
            for key in round_order(systems, index + 1):
                system = SYSTEMS[key](spec, Path(workdir))
                names[key] = system.name
                result = measure(system, expected, topics)
                rounds[key].append(result)
                print(
                    f"[{name}] round {index + 1}, {system.name}: {result.rows:,} rows, "
                    f"{result.rows_per_s:,.0f} rows/s, CPU {result.cpu_s:.1f}s "
                    f"({result.stream_cpu_s:.1f}s from the first record), peak RSS "
                    f"{result.peak_rss_mb:.0f} MB",
                    flush=True,
                )
                if isinstance(system, Debezium):
                    shutil.rmtree(system.dir, ignore_errors=True)
    return [summarize(names[key], rounds[key]) for key in systems]


def delete_topics(topics: list[str]) -> None:
    """Delete the runs' topics; one that cannot be deleted is reported, not raised, so that
    it neither hides the runs' error nor loses their results."""
    for topic in topics:
        try:
            delete_topic(topic)
        except Exception as exc:
            print(f"could not delete topic {topic}: {exc}", file=sys.stderr, flush=True)


def report(results: dict[str, list[Summary]], command: str, loads: tuple[str, str]) -> str:
    lines = [
        f"### Side by side ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- machine: {machine()}",
        f"- load average before / after: {loads[0]} / {loads[1]}",
        f"- command: `{command}`",
    ]
    for workload, summaries in results.items():
        lines += ["", f"Workload ({workload}): {WORKLOADS[workload].title}.", ""]
        lines += table(summaries)
    return "\n".join(lines) + "\n"


def parse_systems(text: str) -> list[str]:
    """``bridge,debezium,canal`` in any order -> that list, the bridge first; one line
    naming the bad name otherwise."""
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in SYSTEMS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"--systems: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
            f"use a comma-separated subset of {','.join(SYSTEMS)}"
        )
    return sorted(set(chosen), key=list(SYSTEMS).index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--workload", action="append", choices=["a", "d"], required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--systems", type=parse_systems, default=list(SYSTEMS))
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    args = parser.parse_args(argv)
    loads = (load_average(), "")
    topics: list[str] = []
    try:
        results = {
            workload: compare(workload, args.scale, args.repeat, args.systems, topics)
            for workload in dict.fromkeys(args.workload)
        }
    finally:
        delete_topics(topics)
    command = "var/venv/bin/python -m bench.compare " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = report(results, command, (loads[0], load_average()))
    print(text)
    if args.record:
        with RESULTS.open("a") as out:
            out.write("\n" + text)
    return 0
