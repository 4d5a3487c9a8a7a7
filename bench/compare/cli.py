"""Side by side: canal-bridge, Debezium Server and canal 1.1.7 on the same binlog range.

    var/venv/bin/python -m bench.compare --workload a|d [--scale S] [--repeat N]
        [--systems bridge,debezium,canal] [--record]
    var/venv/bin/python -m bench.compare --source mysql --workload a-compressed ...

The workload is loaded once into a fresh schema of the source server (``--source``: the local
MariaDB by default, or the local MySQL 9; after FLUSH BINARY LOGS, so it sits in one binlog
file); then, ``--repeat`` times, each system in turn reads that range
into a fresh topic of its own on the local Kafka broker (acks=all); its topic's end is watched
until it stands still, then every row is read back and counted. Per system: rows/s from the
first to the last record's broker append time, CPU seconds per million rows of all its
processes (spawn to the last row, and from its first record), peak RSS, and canal-bridge ÷
each. A compared system that fails its first run (canal 1.1.7 on MySQL 9, say) is reported
in one line and recorded as "cannot run: <why>" instead of figures; canal-bridge failing, or a
later run failing, stops the comparison. Debezium Server is 3.0.8 on MariaDB and 3.6.1 on
MySQL (``settings.DEBEZIUM_RELEASES`` says why). Java artifacts are fetched and cached under
var/cache on first use (bench/compare/artifacts.py). docs/benchmarks.md says more.
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

from bench.compare.results import Round, Summary, cannot_run, summarize, table
from bench.compare.settings import RunSpec
from bench.compare.systems import Bridge, Canal, Debezium, System
from bench.compare.tally import TopicFollower
from bench.measure import (
    Usage,
    bootstrap,
    create_topic,
    delete_topic,
    round_order,
    usage_of,
)
from bench.run import RESULTS, load_average, machine
from bench.source import SourceServer, add_source_argument, source_server
from bench.workloads import WORKLOADS, create_schema, master_position, refusals

SYSTEMS: dict[str, Callable[[RunSpec, Path], System]] = {
    "bridge": Bridge,
    "debezium": lambda spec, _workdir: Debezium(spec),
    "canal": Canal,
}

# Runs that would give figures for less work than the others do, reported as unable instead of
# run: their rows arrive, but not whole. Found by replaying each system's topic against the
# table the server holds.
NOT_COMPARABLE: dict[tuple[str, str], str] = {
    ("canal", "json-partial"): (
        "canal 1.1.7 writes a PARTIAL_JSON update's diff as the JSON column's value "
        "(JSON_REPLACE(doc, '$.n', 30)), not the document"
    ),
    ("debezium", "json-partial"): (
        "Debezium Server 3.6.1 skips PARTIAL_UPDATE_ROWS events (binlog_row_value_options="
        "PARTIAL_JSON; mysql-binlog-connector-java 0.41.0 has no decoder for them): its topic "
        "gets the inserts and none of the updates"
    ),
}


# The workloads bench.compare runs: (b) and (c) are one-table bulk loads the other two cover.
COMPARED = ("a", "d", "a-realistic", "a-compressed", "json-partial")


def load_workload(
    name: str, scale: float, server: SourceServer
) -> tuple[str, tuple[str, int], str, int]:
    """Loads workload ``name`` into ``bench_cmp_<name>`` of ``server``; its schema, first
    binlog position, the GTID state there and its row changes."""
    workload = WORKLOADS[name]
    schema = f"bench_cmp_{name.replace('-', '_')}"
    conn = server.connect()
    create_schema(conn, schema, workload)
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
    start = master_position(conn)
    gtids = server.gtid_position(conn)
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


def compare(  # noqa: PLR0917  (the command line's choices, one each)
    name: str,
    scale: float,
    repeat: int,
    systems: list[str],
    topics: list[str],
    server: SourceServer,
) -> list[Summary]:
    """``repeat`` rounds of every system, in ``round_order`` (over twice as many rounds as
    systems, each runs first, and right after each other one, equally often); the topics
    made go to ``topics``. A compared system whose first run fails is left out of the later
    rounds and summarized as unable to run (``cannot_run``)."""
    schema, start, gtids, expected = load_workload(name, scale, server)
    spec = RunSpec(
        schema=schema,
        table=WORKLOADS[name].table,
        start=start,
        start_gtids=gtids,
        mysql=server.address,
        user=server.user,
        bootstrap=bootstrap(),
        slave_id=40000 + os.getpid() % 10000,
        flavor=server.flavor,
    )
    rounds: dict[str, list[Round]] = {key: [] for key in systems}
    names: dict[str, str] = {}
    unable: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as workdir:
        for index in range(repeat):
            for key in round_order(systems, index + 1):
                if key in unable:
                    continue
                system = SYSTEMS[key](spec, Path(workdir))
                names[key] = system.name
                if (key, name) in NOT_COMPARABLE:
                    unable[key] = NOT_COMPARABLE[key, name]
                    print(f"[{name}] {system.name} cannot run: {unable[key]}", flush=True)
                    continue
                try:
                    result = measure(system, expected, topics)
                except (RuntimeError, TimeoutError, OSError) as exc:
                    if key == "bridge" or rounds[key]:
                        raise
                    unable[key] = why_not(system, exc)
                    print(f"[{name}] {system.name} cannot run: {unable[key]}", flush=True)
                    continue
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
    return [
        cannot_run(names[key], unable[key]) if key in unable else summarize(names[key], rounds[key])
        for key in systems
    ]


def why_not(system: System, exc: BaseException) -> str:
    """Why ``system`` could not run, in one line: the first error its own log names (an
    authentication refusal, an event it cannot decode), else the harness's error."""
    diagnosis = getattr(system, "diagnosis", None)
    found = diagnosis() if callable(diagnosis) else None
    return one_line(found or f"{type(exc).__name__}: {exc}")


def one_line(text: str, limit: int = 240) -> str:
    """``text`` on one line of at most ``limit`` characters (a table cell: no '|')."""
    flat = " ".join(text.split()).replace("|", "/")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def delete_topics(topics: list[str]) -> None:
    """Delete the runs' topics; one that cannot be deleted is reported, not raised, so that
    it neither hides the runs' error nor loses their results."""
    for topic in topics:
        try:
            delete_topic(topic)
        except Exception as exc:
            print(f"could not delete topic {topic}: {exc}", file=sys.stderr, flush=True)


def report(
    results: dict[str, list[Summary]],
    command: str,
    loads: tuple[str, str],
    server: SourceServer | None = None,
) -> str:
    lines = [
        f"### Side by side ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- machine: {machine(server)}",
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
    parser.add_argument("--workload", action="append", choices=COMPARED, required=True)
    add_source_argument(parser)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--systems", type=parse_systems, default=list(SYSTEMS))
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    args = parser.parse_args(argv)
    if refused := refusals(args.workload, args.source):
        raise SystemExit("\n".join(refused))
    server = source_server(args.source)
    loads = (load_average(), "")
    topics: list[str] = []
    try:
        results = {
            workload: compare(workload, args.scale, args.repeat, args.systems, topics, server)
            for workload in dict.fromkeys(args.workload)
        }
    finally:
        delete_topics(topics)
    command = "var/venv/bin/python -m bench.compare " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = report(results, command, (loads[0], load_average()), server)
    print(text)
    if args.record:
        with RESULTS.open("a") as out:
            out.write("\n" + text)
    return 0
