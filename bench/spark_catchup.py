"""How fast a Spark job (the mirror, or the changelog with ``--job changelog``) catches up
on a backlog, and how much heap it takes doing so.

    var/venv/bin/python -m bench.spark_catchup --changes 1000000 [--snapshot] [--reconcile]
        [--job mirror|changelog] [--driver-memory 1g]
        [--job-arg=--max-offsets-per-trigger=50000] [--master 'local[4]' | --standalone 2]
        [--record]

1. A fresh 3-partition topic gets ``--changes`` changes of one table
   (``bench.spark_backlog``: 10 INSERTs, 5 UPDATEs, 1 DELETE per 16; ``--snapshot``: INSERTs
   of an initial snapshot).
2. ``python -m spark_jobs.mirror --available-now`` (or ``spark_jobs.changelog``) runs with
   its defaults (local[2], Spark's 1g heap unless ``--driver-memory``) under ``nice -n 10``,
   its JVMs logging every garbage collection (``-Xlog:gc``). ``--master`` runs it on another
   master (``SPARK_MASTER``), ``--standalone N`` on a standalone cluster of N one-core
   workers started on this machine for the run (``bench.spark_cluster``), whose status
   tells how many workers ran its executors. The job's per-batch progress
   lines give the records and duration of each batch; the rate is records over the batches'
   summed durations (JVM start-up and the Ivy check aside, reported apart as the wall time),
   also for the first and the second half of the batches, so a rate that sinks as the
   output grows shows. The mirror's fold of what its last batches staged, after them, counts
   as part of the second half.
3. Heap: the largest heap in use before a collection (what the heap had to hold, garbage
   included) and after one (what was live), from the GC logs of the driver and any
   executors (the largest of any one JVM), against the heap's maximum.
4. ``--reconcile``: the table the changes leave is loaded into the local MariaDB
   (``bench_spark.items``) and ``python -m spark_jobs.reconcile`` compares the mirror with it.

Results go to ``var/bench/spark-catchup-<time>.json``; ``--record`` also appends a section to
docs/spark.md ("Recorded catch-up runs"). Needs the local services:
``eval "$(deploy/local/services.sh env)"``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.spark_backlog import (
    CREATE_TABLE,
    DATABASE,
    TABLE,
    create_topic,
    final_rows,
    produce_backlog,
)
from bench.spark_cluster import add_master_arguments, spark_master
from bench.workloads import connect

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "spark.md"
PYTHON = ROOT / "var" / "venv" / "bin" / "python"
_BATCH = re.compile(r"batch (\d+): ([\d,]+) records in ([\d.]+) s")
_FOLD = re.compile(r"folded [\d,]+ staged actions in ([\d.]+) s")
_GC = re.compile(r"Pause.*?(\d+)M->(\d+)M\((\d+)M\)")


def batch_lines(log_text: str) -> list[tuple[int, int, float]]:
    """(batch id, records, seconds) of each progress line in a job's log."""
    return [_batch(m) for m in _BATCH.finditer(log_text)]


def _batch(line: re.Match[str]) -> tuple[int, int, float]:
    return int(line.group(1)), int(line.group(2).replace(",", "")), float(line.group(3))


@dataclass
class Heap:
    collections: int = 0
    peak_before_mb: int = 0
    peak_after_mb: int = 0
    median_after_mb: int = 0
    committed_mb: int = 0


@dataclass
class Run:
    changes: int
    snapshot: bool
    produce_s: float
    wall_s: float
    exit_code: int
    batches: list[tuple[int, int, float]] = field(default_factory=list)
    final_fold_s: float = 0.0
    heap: Heap = field(default_factory=Heap)
    reconcile: str = ""
    reconcile_s: float = 0.0
    reconcile_peak_rss_mb: float = 0.0
    master: str = "local[2] (default)"
    busy_workers: int | None = None  # on a standalone cluster: most workers busy at once

    @property
    def records(self) -> int:
        return sum(b[1] for b in self.batches)

    def rate(
        self, batches: list[tuple[int, int, float]] | None = None, extra_s: float = 0
    ) -> float:
        chosen = self.batches if batches is None else batches
        seconds = sum(b[2] for b in chosen) + (self.final_fold_s if batches is None else extra_s)
        return sum(b[1] for b in chosen) / seconds if seconds else 0.0

    def halves(self) -> tuple[float, float]:
        middle = len(self.batches) // 2
        return self.rate(self.batches[:middle], 0), self.rate(
            self.batches[middle:], self.final_fold_s
        )


def read_heap(*gc_logs: Path) -> Heap:
    heap = Heap()
    lines = [
        line
        for gc_log in gc_logs
        if gc_log.exists()
        for line in gc_log.read_text(errors="replace").splitlines()
    ]
    afters = []
    for line in lines:
        match = _GC.search(line)
        if match:
            before, after, committed = (int(g) for g in match.groups())
            afters.append(after)
            heap.peak_before_mb = max(heap.peak_before_mb, before)
            heap.committed_mb = max(heap.committed_mb, committed)
    if afters:
        heap.collections = len(afters)
        heap.peak_after_mb = max(afters)
        heap.median_after_mb = int(statistics.median(afters))
    return heap


# Each job's module and the option naming the folder it writes.
JOBS = {
    "mirror": ("spark_jobs.mirror", "--mirror"),
    "changelog": ("spark_jobs.changelog", "--output"),
}


def run_job(  # noqa: PLR0917 (one run's settings)
    job: str,
    topic: str,
    workdir: Path,
    driver_memory: str | None,
    job_args: list[str],
    log: Path,
    master: str | None = None,
) -> tuple[int, float, list[tuple[int, int, float]], float, Heap]:
    gc_log = workdir / "gc.log"
    env = dict(os.environ)
    # An executor's log names its PID (%p): on a cluster each executor writes its own.
    env["PYSPARK_SUBMIT_ARGS"] = (
        f"--conf spark.driver.extraJavaOptions=-Xlog:gc:file={gc_log} "
        f"--conf spark.executor.extraJavaOptions=-Xlog:gc:file={workdir}/gc-executor-%p.log "
        "pyspark-shell"
    )
    if master:
        env["SPARK_MASTER"] = master
    command = [
        "nice",
        "-n",
        "10",
        str(PYTHON),
        "-m",
        JOBS[job][0],
        "--topics",
        topic,
        JOBS[job][1],
        str(workdir / "mirror"),
        "--checkpoint",
        str(workdir / "cp"),
        "--available-now",
        *(["--driver-memory", driver_memory] if driver_memory else []),
        *job_args,
    ]
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=out, check=False)
    wall = time.monotonic() - started
    text = log.read_text(errors="replace")
    matches = list(_BATCH.finditer(text))
    batches = [_batch(m) for m in matches]
    after_batches = text[matches[-1].end() :] if matches else ""
    final_fold_s = sum(float(m.group(1)) for m in _FOLD.finditer(after_batches))
    heap = read_heap(gc_log, *sorted(workdir.glob("gc-executor-*.log")))
    return code.returncode, wall, batches, final_fold_s, heap


def load_source(changes: int, snapshot: bool) -> None:
    """``bench_spark.items`` as the changes leave it."""
    conn = connect()
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        cur.execute(f"CREATE DATABASE {DATABASE}")
        cur.execute(CREATE_TABLE.format(database=DATABASE, table=TABLE))
        chunk: list[tuple[object, ...]] = []
        insert = f"INSERT INTO {DATABASE}.{TABLE} VALUES (%s, %s, %s, %s, %s, %s)"
        for row in final_rows(changes, snapshot):
            chunk.append(row)
            if len(chunk) == 20_000:
                cur.executemany(insert, chunk)
                chunk.clear()
        if chunk:
            cur.executemany(insert, chunk)
    conn.close()


def run_reconcile(workdir: Path, log: Path) -> tuple[str, float, float]:
    env = dict(os.environ)
    env.setdefault("CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD", "bridge_admin")
    address = (
        f"{env.get('CANAL_BRIDGE_MYSQL_HOST', '127.0.0.1')}:"
        f"{env.get('CANAL_BRIDGE_MYSQL_PORT', '13306')}"
    )
    command = [
        "nice",
        "-n",
        "10",
        str(PYTHON),
        "-m",
        "spark_jobs.reconcile",
        "--mirror",
        str(workdir / "mirror"),
        "--table",
        f"{DATABASE}.{TABLE}",
        "--mysql",
        address,
        "--user",
        env.get("CANAL_BRIDGE_MYSQL_ADMIN_USER", "bridge_admin"),
        "--password-env",
        "CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD",
    ]
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with log.open("w") as out:
        subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=out, check=False)
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    verdict = next(
        (x for x in reversed(lines) if x.startswith(("IDENTICAL", "DIFFERENT"))),
        lines[-1] if lines else "no output",
    )
    return verdict, time.monotonic() - started, peak


def machine() -> str:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=ROOT, check=False
        ).stdout.strip()

    dirty = git("status", "--porcelain", "spark_jobs")
    import pyspark

    return (
        f"{os.cpu_count()} x {model}, {memory_gib:.0f} GiB, Python {platform.python_version()}, "
        f"PySpark {pyspark.__version__}, commit {git('rev-parse', '--short', 'HEAD')}"
        f"{' + local changes to spark_jobs' if dirty else ''}"
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


CATCHUP_HEADING = "## Recorded catch-up runs"


def insert_section(doc: str, heading: str, intro: str, section: str) -> str:
    """``doc`` with ``section`` added at the end of what ``heading`` holds (before the next
    heading of its level or above), so that each bench's runs stay under its own heading
    whichever comes last in the file; a missing heading is added at the end with ``intro``."""
    level = heading.split(" ", 1)[0]
    lines = doc.splitlines(keepends=True)
    if heading + "\n" not in lines:
        return doc.rstrip("\n") + f"\n\n{heading}\n\n{intro.strip()}\n\n{section.strip()}\n"
    start = lines.index(heading + "\n") + 1
    end = next(
        (
            i
            for i in range(start, len(lines))
            if lines[i].startswith("#") and len(lines[i].split(" ", 1)[0]) <= len(level)
        ),
        len(lines),
    )
    before = "".join(lines[:end]).rstrip("\n")
    after = "".join(lines[end:])
    return before + f"\n\n{section.strip()}\n" + (f"\n{after}" if after else "")


def record(heading: str, intro: str, section: str) -> None:
    """Add a run's ``section`` to docs/spark.md under ``heading`` (``insert_section``)."""
    RESULTS.write_text(insert_section(RESULTS.read_text(), heading, intro, section))


def report(label: str, command: str, run: Run, loads: tuple[str, str], memory: str) -> str:
    first, second = run.halves()
    kind = "initial snapshot rows" if run.snapshot else "changes (10 INSERT : 5 UPDATE : 1 DELETE)"
    lines = [
        f"### {label} ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- machine: {machine()}",
        f"- load average before / after: {loads[0]} / {loads[1]}",
        f"- command: `{command}`",
        f"- master: {run.master}"
        + (
            f" (workers running its executors at once: {run.busy_workers})"
            if run.busy_workers is not None
            else ""
        ),
        f"- backlog: {run.changes:,} {kind}, 3 partitions"
        + (f", produced in {run.produce_s:.0f} s" if run.produce_s > 1 else ", produced earlier"),
        "",
        "| heap | exit | batches | records | rate (records/s) | first half / second half "
        "| wall s (with start-up) | GCs | peak heap before GC / after GC / committed (MiB) "
        "| reconcile |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {memory} | {run.exit_code} | {len(run.batches)} | {run.records:,} "
        f"| {run.rate():,.0f} | {first:,.0f} / {second:,.0f} | {run.wall_s:.0f} "
        f"| {run.heap.collections} | {run.heap.peak_before_mb} / {run.heap.peak_after_mb} / "
        f"{run.heap.committed_mb} | {run.reconcile or '-'}"
        + (
            f" ({run.reconcile_s:.0f} s, peak RSS {run.reconcile_peak_rss_mb:,.0f} MiB)"
            if run.reconcile
            else ""
        )
        + " |",
        "",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench.spark_catchup", description=__doc__)
    parser.add_argument("--changes", type=int, required=True)
    parser.add_argument("--snapshot", action="store_true", help="INSERTs of an initial snapshot")
    parser.add_argument("--driver-memory", help="the job's --driver-memory (default: Spark's)")
    parser.add_argument(
        "--job-arg", action="append", default=[], help="an extra argument for the mirror job"
    )
    parser.add_argument("--job", choices=sorted(JOBS), default="mirror")
    parser.add_argument("--reconcile", action="store_true", help="the mirror's, with the source")
    add_master_arguments(parser)
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    parser.add_argument("--label", default="Catch-up")
    parser.add_argument("--keep", action="store_true", help="keep the topic and the mirror")
    parser.add_argument(
        "--topic", help="a topic already holding the --changes backlog (from a --keep run)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092")
    loads_before = load_average()
    topic = args.topic or f"spark-catchup-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    if not args.topic:
        create_topic(bootstrap, topic)
        produce_backlog(bootstrap, topic, args.changes, snapshot=args.snapshot)
    produce_s = time.monotonic() - started
    print(f"[spark_catchup] {args.changes:,} changes in {topic} ({produce_s:.0f} s)", flush=True)
    raw = ROOT / "var" / "bench"
    raw.mkdir(parents=True, exist_ok=True)
    stamp = int(time.time())
    workdir = Path(tempfile.mkdtemp(prefix="spark-catchup-", dir=raw))
    job_log = raw / f"spark-catchup-{stamp}.log"
    with spark_master(args.master, args.standalone, workdir / "cluster") as where:
        code, wall, batches, final_fold_s, heap = run_job(
            args.job, topic, workdir, args.driver_memory, args.job_arg, job_log, where.url
        )
    run = Run(args.changes, args.snapshot, produce_s, wall, code, batches, final_fold_s, heap)
    run.master, run.busy_workers = where.description, where.busy_workers
    print(f"[spark_catchup] {args.job} exit {code}, {run.records:,} records, {run.rate():,.0f}/s")
    if args.reconcile and code == 0 and args.job == "mirror":
        load_source(args.changes, args.snapshot)
        verdict, seconds, peak = run_reconcile(workdir, raw / f"spark-reconcile-{stamp}.log")
        run.reconcile, run.reconcile_s, run.reconcile_peak_rss_mb = verdict, seconds, peak
        print(f"[spark_catchup] reconcile: {verdict} ({seconds:.0f} s)", flush=True)
    command = "var/venv/bin/python -m bench.spark_catchup " + shlex.join(argv or sys.argv[1:])
    memory = args.driver_memory or "1g (default)"
    text = report(args.label, command, run, (loads_before, load_average()), memory)
    print(text)
    (raw / f"spark-catchup-{stamp}.json").write_text(
        json.dumps({**asdict(run), "command": command, "workdir": str(workdir)}, indent=1)
    )
    if args.record:
        record(CATCHUP_HEADING, "", text)
    if not args.keep and not args.topic:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics([topic])[topic].result(30)
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
