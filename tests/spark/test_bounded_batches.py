"""Catching up on a backlog: micro-batches are capped by default, each batch's progress is
logged, a batch that runs out of memory is retried in slices (or the job stops with one line
naming the setting to change, shown with a real heap too small for its batch), and a JVM that
dies ends the job at once.

The backlog comes straight from ``bench.spark_backlog`` (canal FlatMessages of one table:
INSERTs, UPDATEs and DELETEs, 3 partitions), whose ``final_rows`` is the table it leaves.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from bench.spark_backlog import DATABASE, TABLE, create_topic, final_rows, produce_backlog
from spark_jobs import budget
from spark_jobs import mirror as mirror_job
from spark_jobs.jvm import EXIT_JVM_DIED, JvmWatch, launched_jvm
from spark_jobs.mirror import BATCH_LOG, MirrorJob
from spark_jobs.mirror import parse_args as mirror_args
from spark_jobs.mirror_table import table_path
from spark_jobs.pending import PENDING, PendingActions
from spark_jobs.reconcile import read_mirror
from spark_jobs.stream import StreamOptions
from tests.processes import gone_within

pytestmark = [pytest.mark.services, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
BACKLOG = 12_000
SMALL_CAP = 4_000  # the default for the test session's 1 GiB heap at 4,000 records per GiB
# A batch too large for 512 MiB of heap: 4,000 records of about 200 KB.
FAT_RECORDS = 4_000
FAT_PADDING = 200_000


@dataclass(frozen=True)
class Backlog:
    bootstrap: str
    topic: str

    def options(
        self, checkpoint: Path, max_offsets_per_trigger: int | None = None
    ) -> StreamOptions:
        return StreamOptions(
            bootstrap_servers=self.bootstrap,
            checkpoint=str(checkpoint),
            topics=self.topic,
            available_now=True,
            max_offsets_per_trigger=max_offsets_per_trigger,
        )


@pytest.fixture(scope="module")
def backlog(kafka_bootstrap: str) -> Backlog:
    topic = f"spark-backlog-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic)
    produce_backlog(kafka_bootstrap, topic, BACKLOG)
    return Backlog(kafka_bootstrap, topic)


def expected_table() -> dict[int, tuple[str, int, Decimal, str]]:
    return {
        key: (name, qty, Decimal(price), note)
        for key, name, qty, price, note, _ in final_rows(BACKLOG)
    }


def mirrored(spark: SparkSession, mirror: Path) -> dict[int, tuple[str, int, Decimal, str]]:
    _, rows = read_mirror(spark, table_path(str(mirror), DATABASE, TABLE), "UTC")
    return {r["id"]: (r["name"], r["qty"], r["price"], r["note"]) for r in rows}


def test_the_default_cap_follows_the_heap() -> None:
    assert budget.default_max_offsets(budget.parse_size("1g")) == 100_000
    assert budget.default_max_offsets(budget.parse_size("4g")) == 400_000
    assert budget.default_max_offsets(budget.parse_size("2048")) == 200_000  # MiB, as Spark
    assert budget.default_max_offsets(budget.parse_size("64m")) == budget.MIN_RECORDS
    with pytest.raises(ValueError, match="not a memory size"):
        budget.parse_size("lots")


def test_a_backlog_is_mirrored_in_bounded_batches_with_progress(
    spark: SparkSession,
    backlog: Backlog,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No --max-offsets-per-trigger: the heap's default caps every batch (made small here so
    that a small backlog needs several); each batch logs offsets done and to go."""
    monkeypatch.setattr(budget, "RECORDS_PER_GIB", SMALL_CAP)
    monkeypatch.setattr(budget, "MIN_RECORDS", 1_000)
    mirror = tmp_path / "mirror"
    options = backlog.options(tmp_path / "cp")
    with caplog.at_level(logging.INFO, logger="spark_jobs"):
        assert MirrorJob(options, str(mirror)).run(spark) == 0
    per_batch = {
        r["batch_id"]: r["records"]
        for r in spark.read.format("delta")
        .load(str(mirror / BATCH_LOG))
        .groupBy("batch_id")
        .agg(sf.sum("records").alias("records"))
        .collect()
    }
    assert sum(per_batch.values()) == BACKLOG
    assert len(per_batch) >= BACKLOG // SMALL_CAP
    assert max(per_batch.values()) <= SMALL_CAP
    assert f"at most {SMALL_CAP} records per micro-batch" in caplog.text
    progress = re.findall(r"batch \d+: ([\d,]+) records .* ([\d,]+) to go", caplog.text)
    assert len(progress) == len(per_batch), caplog.text
    assert progress[-1][1] == "0"
    assert mirrored(spark, mirror) == expected_table()


def test_full_batches_are_staged_and_folded_when_the_run_ends(
    spark: SparkSession, backlog: Backlog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full batches (the job is behind) stage their actions instead of merging them: with a
    fold ratio too high to be reached, the mirror holds only the first batch (folded into an
    empty table) while the later ones wait in ``_cdc_pending``. A crash after the last batch's
    writes redoes it (staging it twice); the restarted run folds everything when it ends, and
    the mirror is the source's table."""
    monkeypatch.setattr(mirror_job, "FOLD_RATIO", 1_000)
    mirror = tmp_path / "mirror"
    batches = BACKLOG // SMALL_CAP
    seen: dict[int, tuple[int, int]] = {}
    crashed: list[int] = []

    def crash_after_last(batch_id: int) -> None:
        live = read_mirror(spark, table_path(str(mirror), DATABASE, TABLE), "UTC")[1]
        staged = sum(PendingActions(spark, str(mirror)).counts.values())
        seen[batch_id] = (len(live), staged)
        if batch_id == batches - 1 and not crashed:
            crashed.append(batch_id)
            raise RuntimeError("crash before the commit")

    options = backlog.options(tmp_path / "cp", max_offsets_per_trigger=SMALL_CAP)
    job = mirror_job.MirrorJob(options, str(mirror), crash_after_last)
    assert job.run(spark) == 1
    first_batch_rows = seen[0][0]
    assert seen[0][1] == 0 and first_batch_rows > 0
    assert all(rows == first_batch_rows for rows, _ in seen.values()), seen
    assert seen[batches - 1][1] >= (batches - 1) * SMALL_CAP
    assert mirrored(spark, mirror) != expected_table()  # the negative case: not folded yet

    assert job.run(spark) == 0
    assert seen[batches - 1][1] > seen[batches - 2][1] + SMALL_CAP  # staged twice
    assert spark.read.format("delta").load(str(mirror / PENDING)).count() == 0
    assert mirrored(spark, mirror) == expected_table()


def test_a_batch_out_of_memory_is_retried_in_slices(
    spark: SparkSession,
    backlog: Backlog,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One batch of the whole backlog whose MERGE fails for memory above 3,000 actions (a
    stand-in for a heap too small): the batch (about 7,500 keys) and its first half fail, its
    4 quarters (3,000 records each, so at most 3,000 keys) pass; the mirror is what the whole
    batch leaves."""
    from spark_jobs import mirror_table

    merge = mirror_table.MirrorTable.merge
    attempts: list[int] = []

    def merge_within_memory(self: mirror_table.MirrorTable, latest: object) -> None:
        size = latest.count()  # type: ignore[attr-defined]
        attempts.append(size)
        if size > 3_000:
            raise RuntimeError("java.lang.OutOfMemoryError: Java heap space")
        merge(self, latest)  # type: ignore[arg-type]

    monkeypatch.setattr(mirror_table.MirrorTable, "merge", merge_within_memory)
    mirror = tmp_path / "mirror"
    options = backlog.options(tmp_path / "cp", max_offsets_per_trigger=BACKLOG)
    with caplog.at_level(logging.WARNING, logger="spark_jobs"):
        assert MirrorJob(options, str(mirror)).run(spark) == 0
    assert "ran out of memory in 1 slice(s): retrying it in 2 slices" in caplog.text
    assert "retrying it in 4 slices" in caplog.text
    assert len(attempts) == 6 and max(attempts[2:]) <= 3_000
    monkeypatch.undo()
    assert mirrored(spark, mirror) == expected_table()


def test_a_batch_too_large_for_a_real_heap_stops_the_job_with_one_line(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A real heap, really exhausted: one batch of 4,000 records of about 200 KB each (0.8
    GB) for a job given 512 MiB. The batch runs out of memory whole; the job
    retries it smaller, and when even that fails it stops, exit 1, with one line naming the
    setting to change: never the same batch forever, never a hang. Nothing is committed, so
    the next start (with more heap) applies the batch."""
    topic = f"spark-fat-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic)
    produce_backlog(kafka_bootstrap, topic, FAT_RECORDS, padding=FAT_PADDING)
    command = _mirror_command(
        topic,
        tmp_path,
        "--available-now",
        "--driver-memory",
        "512m",
        "--max-offsets-per-trigger",
        str(FAT_RECORDS),
    )
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    job = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=240, check=False
    )
    assert job.returncode == 1, job.stderr[-3000:]
    failed = [line for line in job.stderr.splitlines() if "query failed:" in line]
    assert len(failed) == 1, job.stderr[-3000:]
    assert re.search(
        r"query failed: batch 0 .*runs out of memory even .*: give the job more heap "
        r"\(--driver-memory, or spark.executor.memory on a cluster\)",
        failed[0],
    ), failed[0]
    assert not (tmp_path / "mirror" / BATCH_LOG).exists()
    assert not (tmp_path / "cp" / "commits" / "0").exists()


def _mirror_command(topic: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "spark_jobs.mirror",
        "--topics",
        topic,
        "--mirror",
        str(tmp_path / "mirror"),
        "--checkpoint",
        str(tmp_path / "cp"),
        *extra,
    ]


def test_a_jvm_that_dies_ends_the_job_at_once(backlog: Backlog, tmp_path: Path) -> None:
    """The job's JVM killed (as the kernel's OOM killer would) while the query runs: the
    Python driver exits with EXIT_JVM_DIED and one line, instead of waiting forever."""
    job = subprocess.Popen(
        _mirror_command(backlog.topic, tmp_path, "--trigger-interval", "1 second"),
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "KAFKA_BOOTSTRAP_SERVERS": backlog.bootstrap},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(job.stderr or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while not any("batch 0:" in line for line in list(lines)):
            assert job.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.5)
        jvm = _jvm_of(job.pid)
        os.kill(jvm, signal.SIGKILL)
        assert job.wait(30) == EXIT_JVM_DIED
        reader.join(10)
        died = [line for line in lines if "the Spark JVM died" in line]
        assert len(died) == 1, "".join(lines)[-3000:]
        assert "--driver-memory" in died[0] and "--max-offsets-per-trigger" in died[0]
        assert not any("Traceback" in line for line in lines), "".join(lines)[-3000:]
    finally:
        job.kill()
        job.wait(10)
    assert gone_within(jvm, 10)


def _jvm_of(pid: int) -> int:
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in children.read_text().split():
            if b"java" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise AssertionError(f"no JVM under {pid}")


def test_the_watch_ends_the_process_when_the_jvm_is_gone() -> None:
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; from spark_jobs.jvm import JvmWatch; "
            "JvmWatch(lambda: 52).start(); time.sleep(30)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert code.returncode == EXIT_JVM_DIED
    assert code.stderr.strip().splitlines() == [
        "the Spark JVM died (out of memory): stopping; the batch in flight is redone at the "
        "next start; give it more heap (--driver-memory, spark.executor.memory) or smaller "
        "batches (--max-offsets-per-trigger)"
    ]


def test_the_jvm_is_found_where_pyspark_keeps_it(spark: SparkSession) -> None:
    """``launched_jvm`` reads PySpark's private ``SparkContext._gateway.proc``: this fails
    loudly when a PySpark version moves it."""
    proc = launched_jvm()
    assert proc is not None and proc.poll() is None
    watch = JvmWatch().start()
    watch.stop()


def test_the_settings_the_messages_name_exist() -> None:
    common = ["--topics", "t", "--mirror", "m", "--checkpoint", "c"]
    args = mirror_args([*common, "--driver-memory", "4g", "--max-offsets-per-trigger", "5000"])
    assert (args.driver_memory, args.max_offsets_per_trigger) == ("4g", 5000)
    assert "--driver-memory" in str(budget.BatchTooLarge(3, 2_000, 2))
