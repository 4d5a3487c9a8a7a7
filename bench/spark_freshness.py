"""How fresh the Spark mirror keeps a table while the bridge streams changes into Kafka.

    var/venv/bin/python -m bench.spark_freshness --rate 20000 --seconds 60 [--trigger 1s]
        [--master 'local[2]' | --standalone 2] [--txn-rows 100] [--record]

1. A fresh schema of the local MariaDB gets the wide ``orders`` table; ``canal-bridge run``
   (``bench.measure.BridgeRun``, as ``bench.run --live`` runs it) follows its binlog into a
   fresh topic.
2. ``python -m spark_jobs.mirror`` reads that topic with a processing-time trigger
   (``--trigger``, default 1 second) under ``nice -n 10``. One warm-up row is committed and
   the load waits until the mirror's table shows it: the JVM's start, the Ivy check and the
   first MERGE (which creates the table) are over before anything is timed.
3. The paced loader of ``bench.run --live`` (``bench.workloads.load_paced``) commits
   ``--rate`` rows per second for ``--seconds``, taking each row's commit time on its clock
   right after COMMIT.
4. Then, until every row is visible (or ``--drain-seconds`` pass), the table's Delta log is
   read outside Spark (``bench.delta_log.TableWatch``): a row is visible from the commit
   timestamp of the first table version whose added files hold it. Freshness is that minus
   the row's commit time: it includes the bridge, Kafka, the wait for the next trigger and
   the micro-batch. Both clocks are this machine's.

Reported: p50 / p99 / max freshness, p99 of the first and second half of the rows (a
mirror falling behind shows as a second half that grows), the achieved load rate, the end
lag (the last row's freshness) and whether the mirror kept up: every row visible and the end
lag within ``--target-seconds`` (5). Results go to ``var/bench/spark-freshness-<time>.json``;
``--record`` adds a section to docs/spark.md ("Recorded freshness runs"). Everything started
is stopped by PID. Needs the local services: ``eval "$(deploy/local/services.sh env)"``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.delta_log import TableWatch
from bench.measure import BridgeRun, create_topic, delete_topic, percentiles, stop_process
from bench.spark_catchup import PYTHON, ROOT, batch_lines, load_average, machine, record
from bench.spark_cluster import SparkMaster, add_master_arguments, spark_master
from bench.workloads import (
    WORKLOADS,
    connect,
    create_schema,
    load_paced,
    master_position,
    multi_insert,
    run_many,
    wide_values,
)

SCHEMA = "bench_freshness"
TABLE = "orders"
READING = "reading"  # the bridge's log line when its binlog dump starts
WARM_UP_ID = -1  # outside the load's ids (1 to N)
PROGRESS_S = 2.0  # the job logs a batch's line within a second or so of its end
FRESHNESS_HEADING = "## Recorded freshness runs"
FRESHNESS_INTRO = (
    "Written by `bench/spark_freshness.py --record` (machine, commit, command, load average\n"
    "and the figures of one run each). Freshness is a row's source commit (the loader's clock\n"
    "right after COMMIT) to the commit timestamp of the first Delta version holding it, the\n"
    "bridge and Kafka included; the mirror's JVM start-up is not in it."
)


@dataclass(frozen=True, slots=True)
class Latency:
    """Seconds: median, 99th percentile (``bench.measure.percentiles``), max."""

    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, samples: list[float]) -> Latency:
        p50, p99 = percentiles(samples, 50, 99)
        return cls(p50, p99, max(samples, default=0.0))


@dataclass(frozen=True, slots=True)
class Freshness:
    rows: int
    missing: int  # rows not visible when the run stopped waiting
    all_rows: Latency
    first_half: Latency
    second_half: Latency
    end_lag_s: float | None  # the last row's freshness; None when it never became visible
    kept_up: bool


def freshness(commit_ms: list[float], visible_ms: dict[int, int], target_s: float) -> Freshness:
    """Freshness of rows 1 to ``len(commit_ms) - 1`` (``commit_ms[i]``: row ``i``'s commit)
    from when each became visible (``visible_ms``, by id; a row not there is missing). The
    mirror kept up when no row is missing and the last row took at most ``target_s``."""
    rows = len(commit_ms) - 1
    seconds = {
        i: (visible_ms[i] - commit_ms[i]) / 1000 for i in range(1, rows + 1) if i in visible_ms
    }
    middle = (rows + 1) // 2
    end_lag = seconds.get(rows)
    missing = rows - len(seconds)
    return Freshness(
        rows=rows,
        missing=missing,
        all_rows=Latency.of(list(seconds.values())),
        first_half=Latency.of([s for i, s in seconds.items() if i < middle]),
        second_half=Latency.of([s for i, s in seconds.items() if i >= middle]),
        end_lag_s=end_lag,
        kept_up=missing == 0 and end_lag is not None and end_lag <= target_s,
    )


def spark_interval(text: str) -> str:
    """``1s`` / ``500ms`` as Spark's interval text (``1 seconds``); anything else as is."""
    match = re.fullmatch(r"\s*([\d.]+)\s*(ms|s)\s*", text)
    if not match:
        return text
    unit = "milliseconds" if match.group(2) == "ms" else "seconds"
    return f"{match.group(1)} {unit}"


@dataclass
class MirrorRun:
    """``python -m spark_jobs.mirror`` on a topic, running until ``stop``."""

    topic: str
    workdir: Path
    trigger: str
    master: str | None

    def __post_init__(self) -> None:
        self.log = self.workdir / "mirror.log"
        self.table = self.workdir / "mirror" / SCHEMA / TABLE
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = dict(os.environ)
        if self.master:
            env["SPARK_MASTER"] = self.master
        command = ["nice", "-n", "10", str(PYTHON), "-m", "spark_jobs.mirror"]
        command += ["--topics", self.topic, "--mirror", str(self.workdir / "mirror")]
        command += ["--checkpoint", str(self.workdir / "cp")]
        command += ["--trigger-interval", spark_interval(self.trigger)]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the mirror exited ({self.process.returncode}): {tail}")

    def batches(self) -> list[tuple[int, int, float]]:
        """(batch id, records, seconds) of each batch the job logged."""
        return batch_lines(self.log.read_text(errors="replace") if self.log.exists() else "")

    def stop(self) -> None:
        """SIGTERM (the job stops its query cleanly), killed after 60 s; by PID. ``nice``
        execs the Python driver, which owns the JVM it started, so the JVM goes with it."""
        stop_process(self.process, grace_s=60)


def wait_visible(watch: TableWatch, ids: range, timeout_s: float, mirror: MirrorRun) -> bool:
    """Poll the table until every one of ``ids`` is visible; False when ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    wanted = set(ids)
    while True:
        watch.poll()
        wanted.difference_update(watch.visible_ms.keys())
        if not wanted:
            return True
        mirror.check_alive()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def wait_logged(mirror: MirrorRun, count: int, timeout_s: float = 30) -> int:
    """Wait until the mirror has logged ``count`` batches (a batch's line follows its commit
    by up to ``PROGRESS_S``); returns how many it has logged."""
    deadline = time.monotonic() + timeout_s
    while len(batches := mirror.batches()) < count and time.monotonic() < deadline:
        mirror.check_alive()
        time.sleep(0.2)
    return len(batches)


@dataclass
class Run:
    rate: int
    seconds: float
    txn_rows: int
    trigger: str
    master: str
    achieved_rate: float
    max_behind_s: float
    result: Freshness
    batches: list[tuple[int, int, float]]  # the batches after the warm-up row's
    busy_workers: int | None = None


def measure(args: argparse.Namespace, workdir: Path, where: SparkMaster) -> Run:
    """Steps 1 to 4 of the module's docstring; stops the bridge and the mirror by PID."""
    conn = connect()
    create_schema(conn, SCHEMA, WORKLOADS["d"])
    start = master_position(conn)
    topic = f"spark-freshness-{uuid.uuid4().hex[:8]}"
    create_topic(topic)
    bridge = BridgeRun(workdir, SCHEMA, topic, start)
    mirror = MirrorRun(topic, workdir, args.trigger, where.url)
    watch = TableWatch(mirror.table)
    total = int(args.rate * args.seconds) // args.txn_rows * args.txn_rows
    try:
        bridge.start_process()
        bridge.wait_for_log(READING)
        mirror.start()
        warm_up = range(WARM_UP_ID, WARM_UP_ID + 1)
        run_many(conn, ["BEGIN", multi_insert(SCHEMA, TABLE, warm_up, wide_values), "COMMIT"])
        if not wait_visible(watch, warm_up, args.start_timeout, mirror):
            raise TimeoutError(f"the warm-up row was not mirrored within {args.start_timeout} s")
        warm_up_batches = wait_logged(mirror, 1)
        print(f"[spark_freshness] mirror ready: loading {total:,} rows", flush=True)
        load = load_paced(conn, SCHEMA, args.rate, total, args.txn_rows)
        print(f"[spark_freshness] loaded in {load.seconds:.1f} s; waiting", flush=True)
        wait_visible(watch, range(1, total + 1), args.drain_seconds, mirror)
        time.sleep(PROGRESS_S)  # the last batch's line comes after its commit
        batches = mirror.batches()[warm_up_batches:]
    finally:
        mirror.stop()
        bridge.stop()
        conn.close()
        delete_topic(topic)
    return Run(
        rate=args.rate,
        seconds=args.seconds,
        txn_rows=args.txn_rows,
        trigger=args.trigger,
        master=where.description,
        achieved_rate=load.rows / load.seconds,
        max_behind_s=load.max_behind_s,
        result=freshness(load.commit_ms, watch.visible_ms, args.target_seconds),
        batches=batches,
    )


def report(label: str, command: str, run: Run, loads: tuple[str, str]) -> str:
    r = run.result
    durations = [b[2] for b in run.batches] or [0.0]
    workers = f", {run.busy_workers} workers running executors" if run.busy_workers else ""
    end_lag = f"{r.end_lag_s:.2f}" if r.end_lag_s is not None else "never visible"
    return "\n".join(
        [
            f"### {label} ({time.strftime('%Y-%m-%d %H:%M')})",
            "",
            f"- machine: {machine()}",
            f"- load average before / after: {loads[0]} / {loads[1]}",
            f"- command: `{command}`",
            f"- mirror: master {run.master}{workers}, trigger {run.trigger}",
            "",
            "| rate target / achieved (rows/s) | rows | rows per transaction | freshness p50 / p99 "
            "/ max (s) | p99 first half / second half (s) | end lag (s) | missing | kept up "
            "| batches (records), duration median / max (s) |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {run.rate:,} / {run.achieved_rate:,.0f} | {r.rows:,} | {run.txn_rows} "
            f"| {r.all_rows.p50:.2f} / {r.all_rows.p99:.2f} / {r.all_rows.max:.2f} "
            f"| {r.first_half.p99:.2f} / {r.second_half.p99:.2f} | {end_lag} | {r.missing:,} "
            f"| {'yes' if r.kept_up else 'no'} "
            f"| {len(run.batches)} ({sum(b[1] for b in run.batches):,}), "
            f"{statistics.median(durations):.1f} / {max(durations):.1f} |",
            "",
        ]
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench.spark_freshness", description=__doc__)
    parser.add_argument("--rate", type=int, default=20_000, help="row changes per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the load runs")
    parser.add_argument("--txn-rows", type=int, default=100, help="rows per transaction")
    parser.add_argument("--trigger", default="1s", help="the mirror's processing-time trigger")
    add_master_arguments(parser)
    parser.add_argument("--target-seconds", type=float, default=5.0, help="end lag to keep up")
    parser.add_argument("--drain-seconds", type=float, default=120.0)
    parser.add_argument("--start-timeout", type=float, default=300.0)
    parser.add_argument("--record", action="store_true", help="append to docs/spark.md")
    parser.add_argument("--label", default="")
    parser.add_argument("--keep", action="store_true", help="keep the mirror and its logs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    loads_before = load_average()
    raw = ROOT / "var" / "bench"
    raw.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="spark-freshness-", dir=raw))
    with spark_master(args.master, args.standalone, workdir / "cluster") as where:
        run = measure(args, workdir, where)
    run.busy_workers = where.busy_workers
    command = "var/venv/bin/python -m bench.spark_freshness " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    label = args.label or f"Freshness, {args.rate:,} changes/s"
    text = report(label, command, run, (loads_before, load_average()))
    print(text)
    stamp = int(time.time())
    (raw / f"spark-freshness-{stamp}.json").write_text(
        json.dumps({**asdict(run), "command": command, "workdir": str(workdir)}, indent=1)
    )
    if args.record:
        record(FRESHNESS_HEADING, FRESHNESS_INTRO, text)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if run.result.kept_up else 1


if __name__ == "__main__":
    sys.exit(main())
