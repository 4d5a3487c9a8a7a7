"""Many destinations operated live: how fast the admin API and the console answer, and whether
a reload that adds a destination stalls the others.

    var/venv/bin/python -m bench.live_many --destinations 100 [--record]

One ``canal-bridge run`` with N-1 destinations on a MariaDB of this run's own (destination i
reads one-row table i, as in ``bench.many_destinations``), every table written once every
``--interval-ms`` the whole run. Then:

1. **Answers**, with the writes going on: ``--requests`` sequential requests each, over one
   kept-alive connection as a browser holds it, of ``GET /api/v1/destinations`` (the console's
   data: what it fetches every second), ``GET /api/v1/destinations/{first}``, ``GET /status``
   and the console's page with its script and style sheet; p50, p95 and the slowest, in ms.
2. **A reload**: the configuration file is rewritten with the N-th destination added (the
   others' settings unchanged, so they must not restart). Measured: the time from the write
   until the new destination logs that it started, and for the N-1 others the longest time
   between two records of one table in Kafka (the broker's append times) over the reload's
   window, next to the same figure over a window of the same length before it. A reload
   that paused the others shows as a gap far above the write interval.
3. **Nothing lost**: every row id written to every table is read back from the topic once
   at least.

Prints a Markdown table (``--record``: appended to bench/results/runs.md). Needs the local
services: ``eval "$(deploy/local/services.sh env)"``.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import re
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.kafka_read import records
from bench.many_destinations import (
    Source,
    create_tables,
    insert_everywhere,
    own_source,
    wait_acked,
    wait_started,
    write_config,
)
from bench.measure import BridgeRun, create_topic, delete_topic, percentiles
from bench.run import RESULTS, load_average, machine, record_table

TABLE = re.compile(r"t(\d+)$")
WINDOW_S = 10.0
ADDED_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Latency:
    """Milliseconds of ``requests`` sequential answers: median, 95th percentile
    (``bench.measure.percentiles``), slowest."""

    p50: float
    p95: float
    slowest: float

    @classmethod
    def of(cls, samples: list[float]) -> Latency:
        p50, p95 = percentiles(samples, 50, 95)
        return cls(p50, p95, max(samples, default=0.0))

    def cell(self) -> str:
        return f"{self.p50:.1f} / {self.p95:.1f} / {self.slowest:.1f}"


@dataclass(frozen=True)
class Result:
    destinations: int
    answers: dict[str, Latency]
    reload_s: float  # file written -> the added destination logged its start
    gap_before_ms: int  # the others' longest gap between two records, before the reload
    gap_reload_ms: int  # the same over the reload's window
    rows_written: int
    rows_missing: int
    load: tuple[str, str]

    def row(self) -> str:
        answers = " | ".join(self.answers[name].cell() for name in ANSWERS)
        return (
            f"| {self.destinations} | {answers} | {self.reload_s:.1f} "
            f"| {self.gap_before_ms:,} / {self.gap_reload_ms:,} "
            f"| {self.rows_written:,} / {self.rows_missing} | {self.load[0]} / {self.load[1]} |"
        )


# What is timed, and the paths fetched for it (several: fetched one after the other).
ANSWERS: dict[str, tuple[str, ...]] = {
    "GET /api/v1/destinations": ("/api/v1/destinations",),
    "GET /api/v1/destinations/{one}": ("/api/v1/destinations/many000",),
    "GET /status": ("/status",),
    "console page": ("/ui/", "/ui/console.js", "/ui/console.css"),
}

HEADER = (
    "| destinations | "
    + " | ".join(f"{name} ms p50 / p95 / max" for name in ANSWERS)
    + " | reload: added one started after s | others' longest gap ms: before / during reload "
    "| rows written / missing | load average before / after |\n|" + "---|" * (len(ANSWERS) + 5)
)


class Writer(threading.Thread):
    """Inserts one row into each table every ``interval_s`` (ids 2, 3, ...: the burst wrote
    1), one statement per table; keeps the last id written."""

    def __init__(self, source: Source, schema: str, tables: int, interval_s: float) -> None:
        super().__init__(name="bench-writer", daemon=True)
        self.source, self.schema, self.tables = source, schema, tables
        self.interval_s = interval_s
        self.last_id = 1
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                began = time.monotonic()
                row = self.last_id + 1
                self.source.run_sql(
                    [
                        f"INSERT INTO {self.schema}.t{i:03d} VALUES ({row}, {i})"
                        for i in range(self.tables)
                    ]
                )
                self.last_id = row
                self.stopping.wait(max(0.0, self.interval_s - (time.monotonic() - began)))
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the writer failed: {self.error}") from self.error


def say(what: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def timed_answers(port: int, requests: int) -> dict[str, Latency]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        measured = {}
        for name, paths in ANSWERS.items():
            samples = []
            for _ in range(requests):
                began = time.perf_counter()
                for path in paths:
                    connection.request("GET", path)
                    response = connection.getresponse()
                    response.read()
                    if response.status != 200:
                        raise RuntimeError(f"GET {path}: {response.status}")
                samples.append((time.perf_counter() - began) * 1000)
            measured[name] = Latency.of(samples)
        return measured
    finally:
        connection.close()


def longest_gaps(topic: str, window: tuple[float, float]) -> tuple[dict[int, set[int]], int]:
    """Row ids per table in ``topic``, and the longest time (ms) between two records of one
    table appended within ``window`` (wall-clock seconds)."""
    ids: dict[int, set[int]] = defaultdict(set)
    appended: dict[int, list[int]] = defaultdict(list)
    for timestamp, message in records(topic):
        match = TABLE.search(message.get("table") or "")
        if match is None:
            continue
        table = int(match.group(1))
        ids[table].update(int(row["id"]) for row in message["data"] or ())
        appended[table].append(timestamp)
    low, high = (int(edge * 1000) for edge in window)
    gap = 0
    for times in appended.values():
        inside = sorted(t for t in times if low <= t <= high)
        gap = max([gap, *(b - a for a, b in itertools.pairwise(inside))])
    return ids, gap


def reload_adding(bridge: BridgeRun, config: dict[str, Any], added: str) -> float:
    """Replace the running file by ``config`` (as editors and ConfigMaps do: a new file
    renamed over it); the seconds until ``added`` logs that it started."""
    assert bridge.config_file is not None
    began = time.monotonic()
    tmp = bridge.config_file.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(config))
    tmp.replace(bridge.config_file)
    while f"destination {added} started" not in bridge.log.read_text():
        bridge.check_alive()
        if time.monotonic() - began > ADDED_TIMEOUT_S:
            raise TimeoutError(f"{added} did not start within {ADDED_TIMEOUT_S:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - began


def measure(source: Source, count: int, interval_s: float, requests: int, workdir: Path) -> Result:
    schema = f"live_{uuid.uuid4().hex[:6]}"
    topic = f"bench-live-{uuid.uuid4().hex[:8]}"
    create_tables(source, schema, count)
    create_topic(topic)
    bridge = BridgeRun(workdir, schema, topic, None, env={"MANY_PASSWORD": source.password})
    full = write_config(workdir, source, schema, count, topic=topic, port=bridge.port, settings={})
    everything: dict[str, Any] = yaml.safe_load(full.read_text())
    first = {**everything, "destinations": everything["destinations"][:-1]}
    bridge.config_file = workdir / "live.yaml"
    bridge.config_file.write_text(yaml.safe_dump(first))
    added = everything["destinations"][-1]["name"]
    load_before = load_average()
    writer = Writer(source, schema, count, interval_s)
    try:
        bridge.start_process()
        wait_started(bridge, count - 1, timeout_s=60 + count * 2)
        insert_everywhere(source, schema, count)
        wait_acked(bridge, count - 1, time.monotonic() + 120)
        say(f"{count - 1} destinations streaming; timing answers while writing")
        writer.start()
        writing_since = time.time()
        answers = timed_answers(bridge.port, requests)
        time.sleep(max(0.0, writing_since + 1 + WINDOW_S - time.time()))
        before = (time.time() - WINDOW_S, time.time())
        say("reloading with one destination more")
        reload_wall = time.time()
        reload_s = reload_adding(bridge, everything, added)
        time.sleep(max(0.0, WINDOW_S - reload_s))
        during = (reload_wall, reload_wall + WINDOW_S)
        writer.stop()
        say("writes stopped; reading the topic back")
        wait_acked(bridge, count, time.monotonic() + 120)
        time.sleep(3)  # the last rows' batches
    finally:
        if writer.is_alive():
            writer.stopping.set()
        bridge.stop()
        source.run_sql([f"DROP DATABASE IF EXISTS {schema}"])
    try:
        ids, gap_before = longest_gaps(topic, before)
        _, gap_reload = longest_gaps(topic, during)
    finally:
        delete_topic(topic)
    others = range(count - 1)
    missing = sum(len(set(range(1, writer.last_id + 1)) - ids[t]) for t in others)
    return Result(
        destinations=count,
        answers=answers,
        reload_s=reload_s,
        gap_before_ms=gap_before,
        gap_reload_ms=gap_reload,
        rows_written=writer.last_id * (count - 1),
        rows_missing=missing,
        load=(load_before, load_average()),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.live_many", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--destinations", type=int, default=100)
    parser.add_argument("--interval-ms", type=float, default=200.0)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    parser.add_argument("--label", default="Many destinations operated live")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}", flush=True)
    with (
        own_source(args.destinations) as source,
        tempfile.TemporaryDirectory(prefix="live-") as workdir,
    ):
        result = measure(
            source, args.destinations, args.interval_ms / 1000, args.requests, Path(workdir)
        )
    print(HEADER, flush=True)
    print(result.row(), flush=True)
    if args.record:
        record_table("bench.live_many", argv, args.label, HEADER + "\n" + result.row())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
