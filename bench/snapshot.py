"""The snapshot benchmark: rows the source already holds, read by ``canal-bridge run``
with ``snapshot.mode: initial`` and sent to Kafka.

    var/venv/bin/python -m bench.run --snapshot --rows 1000000 [--repeat 3] [--record]

The rows are workload (a)'s wide table (``bench.workloads.WIDE_TABLE``: BIGINT key, INT,
VARCHAR, DECIMAL, DATETIME(6), JSON), inserted once into a fresh schema before any round. Each
round runs the bridge as a child process on a fresh topic and a fresh meta folder (so it has
no cursor and plans a snapshot), with the destination's snapshot defaults unless
``--bridge-setting snapshot={...}`` says otherwise, and times it from its ``snapshot of`` log
line (the reader's start) until its /metrics ``rows`` counter says every row was acked by
Kafka. The source is idle meanwhile, so the stream adds nothing. Reported: rows/s end to end,
the bridge's CPU seconds per million rows over the same span (every process of its tree) and
its peak RSS. The first round reads the topic back and checks that it holds every row once.
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kafka_read import records
from bench.measure import BridgeRun, create_topic, delete_topic, usage_of
from bench.source import SourceServer
from bench.workloads import WORKLOADS, connect, create_schema, multi_insert, run_many, wide_values

SCHEMA = "bench_snapshot"
STARTED = "snapshot of"  # the reader's first log line
ROWS_PER_STATEMENT = 1000
STATEMENTS_PER_QUERY = 50


@dataclass
class SnapshotRound:
    rows: int
    snapshot_s: float  # the reader's start -> the last row acked
    total_s: float  # process spawn -> the last row acked
    cpu_s: float  # the bridge's CPU over snapshot_s
    peak_rss_mb: float


def load_wide_rows(rows: int, source: SourceServer | None = None) -> float:
    """A fresh ``SCHEMA`` of ``source`` whose wide table holds ids 1..rows; returns the
    seconds it took."""
    conn = connect(source=source)
    began = time.monotonic()
    try:
        create_schema(conn, SCHEMA, WORKLOADS["a"])
        statements = [
            multi_insert(
                SCHEMA, "orders", range(i, min(i + ROWS_PER_STATEMENT, rows + 1)), wide_values
            )
            for i in range(1, rows + 1, ROWS_PER_STATEMENT)
        ]
        for first in range(0, len(statements), STATEMENTS_PER_QUERY):
            run_many(conn, statements[first : first + STATEMENTS_PER_QUERY])
    finally:
        conn.close()
    return time.monotonic() - began


def snapshot_round(
    rows: int,
    workdir: Path,
    *,
    check: bool,
    env: dict[str, str] | None = None,
    root: Path | None = None,
    settings: dict[str, Any] | None = None,
    profile: Path | None = None,
    source: SourceServer | None = None,
) -> SnapshotRound:
    topic = f"bench-snapshot-{uuid.uuid4().hex[:8]}"
    create_topic(topic)
    chosen = dict(settings or {})
    chosen["snapshot"] = {"mode": "initial", **chosen.get("snapshot", {})}
    bridge = BridgeRun(
        workdir, SCHEMA, topic, None, env=env, root=root, settings=chosen, source=source
    )
    bridge.profile = profile
    try:
        bridge.start_process()
        started = bridge.wait_for_log(STARTED)
        cpu_started = usage_of(bridge.pid).cpu_s
        done = bridge.wait_for_rows(rows, timeout_s=600 + rows / 1000)
        usage = usage_of(bridge.pid)
        bridge.note_peaks()
    finally:
        bridge.stop()
    if check:
        check_topic(topic, rows)
    delete_topic(topic)
    return SnapshotRound(
        rows=rows,
        snapshot_s=done - started,
        total_s=done - bridge.started_at,
        cpu_s=usage.cpu_s - cpu_started,
        # The snapshot reader processes have ended by now: the peaks seen while it ran.
        peak_rss_mb=bridge.peak_rss_mb,
    )


def check_topic(topic: str, rows: int) -> None:
    """Every id 1..rows exactly once, as a snapshot INSERT (the source was idle)."""
    seen: set[int] = set()
    for _, message in records(topic):
        if message.get("type") != "INSERT" or message.get("table") != "orders":
            raise RuntimeError(f"{topic}: unexpected record {str(message)[:200]}")
        for row in message["data"] or ():
            key = int(row["id"])
            if key in seen:
                raise RuntimeError(f"{topic}: id {key} sent twice")
            seen.add(key)
    if seen != set(range(1, rows + 1)):
        raise RuntimeError(f"{topic}: {len(seen)} distinct ids of {rows}")


def run_snapshot(
    rows: int,
    repeat: int,
    workdir: Path,
    *,
    env: dict[str, str] | None = None,
    root: Path | None = None,
    settings: dict[str, Any] | None = None,
    profile: Path | None = None,
    source: SourceServer | None = None,
) -> dict[str, Any]:
    """``profile``: a folder for py-spy's raw stacks of the first round (``snapshot.txt``);
    ``source``: the server the rows are loaded into and read from (MariaDB by default)."""
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
    load_s = load_wide_rows(rows, source)
    print(f"[snapshot] loaded {rows:,} wide rows in {load_s:.1f}s", flush=True)
    rounds = []
    for index in range(repeat):
        result = snapshot_round(
            rows,
            workdir,
            check=index == 0,
            env=env,
            root=root,
            settings=settings,
            profile=profile / "snapshot.txt" if profile is not None and index == 0 else None,
            source=source,
        )
        print(f"[snapshot] round {index + 1}: {summary(result)}", flush=True)
        rounds.append(result)
    return {"rows": rows, "load_s": load_s, "rounds": rounds}


def summary(r: SnapshotRound) -> str:
    return (
        f"{r.rows / r.snapshot_s:,.0f} rows/s from the snapshot's start "
        f"({r.rows / r.total_s:,.0f} from spawn), {r.cpu_s / r.rows * 1e6:.1f} CPU s/M rows, "
        f"peak RSS {r.peak_rss_mb:.0f} MB"
    )


def report_lines(result: dict[str, Any]) -> list[str]:
    """The snapshot's table for bench/results/runs.md: medians of the rounds."""
    rounds: list[SnapshotRound] = result["rounds"]

    rows = result["rows"]
    return [
        "| snapshot rows | rows/s (from the snapshot's start) | rows/s (from spawn) "
        "| CPU s / M rows | peak RSS MB |",
        "|---|---|---|---|---|",
        f"| {rows:,} | {statistics.median([rows / r.snapshot_s for r in rounds]):,.0f} "
        f"| {statistics.median([rows / r.total_s for r in rounds]):,.0f} "
        f"| {statistics.median([r.cpu_s / rows * 1e6 for r in rounds]):.1f} "
        f"| {statistics.median([r.peak_rss_mb for r in rounds]):.0f} |",
        "",
        f"Snapshot: medians of {len(rounds)} round(s), wide rows of workload (a).",
    ]
