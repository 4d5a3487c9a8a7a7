"""MariaDB -> canal-bridge -> Kafka -> the Spark jobs, checked against the live tables.

One mixed workload (every type family, NULLs, deletes, primary-key changes, transactions) runs
while the bridge is stopped twice (SIGTERM, then kill -9, which replays an unacknowledged
batch); the tests then mirror / log the topic and reconcile with MariaDB.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from spark_jobs.changelog import ChangelogJob
from spark_jobs.decode import changes, parse_messages
from spark_jobs.mirror import BATCH_LOG, DDL_LOG, MirrorJob
from spark_jobs.mirror_table import MirrorTable, current
from spark_jobs.stream import StreamOptions
from tests.conftest import MysqlEndpoint
from tests.spark.mirroring import (
    PASSWORD_ENV,
    QUERY_TIMEOUT_S,
    await_query,
    mirror_topic,
    read_topic,
    reconcile_args,
    reconcile_table,
)
from tests.spark.pipeline import (
    Workload,
    bridge_config,
    connect,
    mark,
    new_topic,
    run_in_thread,
    running_bridge,
    stop_bridge,
    wait_for,
)

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("everything", "pairs", "marker")


@dataclass(frozen=True)
class Pipeline:
    schema: str
    topic: str
    bootstrap: str


@pytest.fixture(scope="module")
def pipeline(
    mysql: MysqlEndpoint, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    schema = "t_spark_pipeline"
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {schema}")
        cur.execute(f"CREATE DATABASE {schema} CHARACTER SET utf8mb4")
    workload = Workload(mysql, schema)
    workload.create_tables()
    topic = new_topic(kafka_bootstrap, "spark-pipeline")
    config = bridge_config(tmp_path_factory.mktemp("bridge"), mysql, kafka_bootstrap, schema, topic)
    writer = None
    for stop in (signal.SIGTERM, signal.SIGKILL, None):
        with running_bridge(config) as bridge:
            if writer is None:
                writer = run_in_thread(lambda: workload.run(operations=260, pause_s=0.02))
            if stop is not None:
                time.sleep(1.5)
                assert writer.is_alive(), "the workload ended before the bridge was stopped"
                bridge.signal(stop)
                code = bridge.wait(60)
                assert stop == signal.SIGKILL or code == 0, bridge.output()
                continue
            writer.join(180)
            assert not writer.is_alive() and not writer.failures  # type: ignore[attr-defined]
            wait_for(kafka_bootstrap, topic, mark(mysql, schema, 1), timeout_s=120)
            stop_bridge(bridge)
    yield Pipeline(schema=schema, topic=topic, bootstrap=kafka_bootstrap)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {schema}")
    conn.close()


def _options(pipeline: Pipeline, checkpoint: Path, **extra: object) -> StreamOptions:
    settings: dict[str, object] = {"available_now": True, **extra}
    return StreamOptions(
        bootstrap_servers=pipeline.bootstrap,
        checkpoint=str(checkpoint),
        topics=pipeline.topic,
        **settings,  # type: ignore[arg-type]
    )


def _assert_mirror_identical(
    spark: SparkSession, mirror: Path, schema: str, mysql: MysqlEndpoint, tables: tuple[str, ...]
) -> None:
    for table in tables:
        code, report = reconcile_table(spark, mirror, f"{schema}.{table}", mysql)
        assert code == 0, report


@pytest.mark.both_servers
def test_mixed_workload_with_bridge_restarts_mirrors_exactly(
    spark: SparkSession, pipeline: Pipeline, mysql: MysqlEndpoint, tmp_path: Path
) -> None:
    mirror = mirror_topic(spark, pipeline.bootstrap, pipeline.topic, tmp_path)
    _assert_mirror_identical(spark, mirror, pipeline.schema, mysql, ("pairs", "marker"))

    # The command line, as an operator runs it, on the table with every type family.
    env = {**os.environ, PASSWORD_ENV: mysql.admin_password}
    args = vars(reconcile_args(mirror, f"{pipeline.schema}.everything", mysql))
    command = [sys.executable, "-m", "spark_jobs.reconcile"]
    for name in ("mirror", "table", "mysql", "user", "password_env"):
        command += [f"--{name.replace('_', '-')}", str(args[name])]
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "IDENTICAL" in result.stdout
    rows = spark.read.format("delta").load(str(mirror / pipeline.schema / "everything"))
    assert rows.where(sf.col("_cdc_invalid").isNotNull()).count() > 0, "no zero date exercised"

    # A row changed behind the mirror's back is reported, and the exit code says so.
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, vc FROM {pipeline.schema}.everything ORDER BY id LIMIT 1")
        key, original = cur.fetchone()
        cur.execute(
            f"UPDATE {pipeline.schema}.everything SET vc = 'tampered' WHERE id = %s", (key,)
        )
    try:
        code, report = reconcile_table(spark, mirror, f"{pipeline.schema}.everything", mysql)
    finally:
        with conn.cursor() as cur:
            cur.execute(
                f"UPDATE {pipeline.schema}.everything SET vc = %s WHERE id = %s", (original, key)
            )
        conn.close()
    assert code == 1, report
    assert "different: 1 rows" in report and "'tampered'" in report and f"('{key}',)" in report


def test_mirror_restarted_from_its_checkpoint_neither_loses_nor_double_applies(
    spark: SparkSession, pipeline: Pipeline, mysql: MysqlEndpoint, tmp_path: Path
) -> None:
    mirror, checkpoint = tmp_path / "mirror", tmp_path / "cp"
    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", pipeline.bootstrap)
        .option("subscribe", pipeline.topic)
        .load()
    )
    total = records.count()
    per_batch = total // 4 + 1  # about 4 batches

    class Crash(RuntimeError):
        pass

    def run(crash_in: int | None) -> list[int]:
        """One run from the checkpoint; ``crash_in``: the batch that fails after its writes
        (before Spark commits it, the worst moment). Returns the batches it applied."""
        applied: list[int] = []

        def after_batch(batch_id: int) -> None:
            applied.append(batch_id)
            if batch_id == crash_in:
                raise Crash(f"injected failure in batch {batch_id}")

        options = _options(pipeline, checkpoint, max_offsets_per_trigger=per_batch)
        query = MirrorJob(options, str(mirror), after_batch).start(spark)
        if crash_in is None:
            await_query(query)
        else:
            with pytest.raises(StreamingQueryException, match="injected failure"):
                query.awaitTermination(QUERY_TIMEOUT_S)
        return applied

    # Each run resumes at the batch the previous one died in, and writes it again.
    assert run(crash_in=1) == [0, 1]
    assert run(crash_in=2) == [1, 2]
    last = run(crash_in=None)
    assert last == list(range(2, 2 + len(last))) and len(last) >= 2, last

    # Each offset is in exactly one committed batch: contiguous, no overlap, none left out.
    batches = spark.read.format("delta").load(str(mirror / BATCH_LOG)).collect()
    assert len({(b.batch_id, b.partition) for b in batches}) == len(batches), "a batch logged twice"
    for partition in {b.partition for b in batches}:
        ranges = sorted((b.min_offset, b.max_offset) for b in batches if b.partition == partition)
        assert ranges[0][0] == 0
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert start == end + 1, f"partition {partition}: gap or overlap in {ranges}"
    assert sum(b.records for b in batches) == total
    _assert_mirror_identical(spark, mirror, pipeline.schema, mysql, TABLES)


def test_changelog_keeps_every_change_once_across_a_restart(
    spark: SparkSession, pipeline: Pipeline, tmp_path: Path
) -> None:
    output, checkpoint = tmp_path / "changelog", tmp_path / "cp"
    kafka = read_topic(spark, pipeline.bootstrap, pipeline.topic)
    expected = changes(parse_messages(kafka), include_ddl=True).count()

    first = ChangelogJob(
        _options(
            pipeline,
            checkpoint,
            max_offsets_per_trigger=expected // 3,
            available_now=False,
            trigger_interval="0 seconds",
        ),
        str(output),
    ).start(spark)
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    while (first.lastProgress or {}).get("batchId", -1) < 1:
        assert first.exception() is None and time.monotonic() < deadline
        time.sleep(0.2)
    first.stop()
    await_query(ChangelogJob(_options(pipeline, checkpoint), str(output)).start(spark))

    log = spark.read.parquet(str(output))
    assert log.count() == expected
    assert log.select("kafka_partition", "kafka_offset", "row_index").distinct().count() == expected
    partitions = {
        (r.database, r.table) for r in log.select("database", "table").distinct().collect()
    }
    assert partitions == {(pipeline.schema, t) for t in TABLES}
    folder = output / f"database={pipeline.schema}" / "table=everything"
    assert any(p.name.startswith("date=") for p in folder.iterdir())
    sample = log.where("type = 'UPDATE'").first()
    assert sample is not None and sample.before is not None and sample.after is not None
    assert sample.binlog_file and sample.binlog_position > 0


def test_add_column_mid_stream_reaches_the_mirror(
    spark: SparkSession,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    tmp_path: Path,
) -> None:
    schema = scratch_schema
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE {schema}.evolving (id INT PRIMARY KEY, note VARCHAR(20), gone INT)"
        )
        cur.execute(f"CREATE TABLE {schema}.marker (id INT PRIMARY KEY, at DATETIME(6))")
        cur.execute(f"CREATE TABLE {schema}.emptied (id INT PRIMARY KEY, v VARCHAR(5))")
    topic = new_topic(kafka_bootstrap, "spark-ddl")
    (tmp_path / "bridge").mkdir()
    config = bridge_config(tmp_path / "bridge", mysql, kafka_bootstrap, schema, topic)
    mirror, checkpoint = tmp_path / "mirror", tmp_path / "cp"
    pipeline = Pipeline(schema=schema, topic=topic, bootstrap=kafka_bootstrap)
    with running_bridge(config) as bridge:
        with conn.cursor() as cur:
            for key in range(1, 6):
                cur.execute(
                    f"INSERT INTO {schema}.evolving VALUES (%s, %s, %s)", (key, f"n{key}", key)
                )
            cur.execute(f"INSERT INTO {schema}.emptied VALUES (1, 'a'), (2, 'b')")
        wait_for(kafka_bootstrap, topic, mark(mysql, schema, 1), timeout_s=60)
        await_query(MirrorJob(_options(pipeline, checkpoint), str(mirror)).start(spark))

        with conn.cursor() as cur:
            statements = [
                f"UPDATE {schema}.evolving SET note = 'before' WHERE id = 1",
                f"ALTER TABLE {schema}.evolving ADD COLUMN qty INT NOT NULL DEFAULT 7, "
                "ADD COLUMN label VARCHAR(10) NULL",
                f"INSERT INTO {schema}.evolving (id, note, gone, qty, label) "
                "VALUES (6, 'n6', 6, 9, 'six')",
                f"UPDATE {schema}.evolving SET qty = 3, label = 'two' WHERE id = 2",
                f"ALTER TABLE {schema}.evolving DROP COLUMN gone",
                f"ALTER TABLE {schema}.evolving ADD INDEX by_note (note)",
                f"CREATE TABLE {schema}.unmirrored (id INT PRIMARY KEY)",
                f"ALTER TABLE {schema}.evolving MODIFY note VARCHAR(30)",
                f"UPDATE {schema}.evolving SET note = 'after' WHERE id = 3",
                f"DELETE FROM {schema}.evolving WHERE id = 4",
                f"INSERT INTO {schema}.evolving (id, note) VALUES (7, 'n7')",
                f"UPDATE {schema}.emptied SET v = 'c' WHERE id = 2",
                f"TRUNCATE TABLE {schema}.emptied",
                f"INSERT INTO {schema}.emptied VALUES (1, 'd')",
            ]
            for statement in statements:
                cur.execute(statement)
        wait_for(kafka_bootstrap, topic, mark(mysql, schema, 2), timeout_s=60)
        stop_bridge(bridge)
    conn.close()

    # The second run resumes from the checkpoint: one batch holding rows on both sides of
    # each DDL.
    await_query(MirrorJob(_options(pipeline, checkpoint), str(mirror)).start(spark))

    table = current(spark.read.format("delta").load(str(mirror / schema / "evolving")))
    columns = table.columns
    assert columns == ["id", "note", "qty", "label"]
    qty = {r.id: (r.qty, r.label) for r in table.collect()}
    assert qty == {
        1: (7, None),
        2: (3, "two"),
        3: (7, None),
        5: (7, None),
        6: (9, "six"),
        7: (7, None),
    }
    _assert_mirror_identical(spark, mirror, schema, mysql, ("evolving", "emptied", "marker"))

    # Tombstones (id 4 here) go once older than the retention; the current state stays.
    evolving = MirrorTable(spark, str(mirror), schema, "evolving")
    assert spark.read.format("delta").load(evolving.path).where("_cdc_deleted").count() == 1
    evolving.purge_tombstones(older_than_es_ms=int(time.time() * 1000) + 60_000)
    assert spark.read.format("delta").load(evolving.path).where("_cdc_deleted").count() == 0
    _assert_mirror_identical(spark, mirror, schema, mysql, ("evolving",))

    ddl = (
        spark.read.format("delta").load(str(mirror / DDL_LOG)).orderBy("binlog_position").collect()
    )
    outcomes = [(r.table, r.outcome, r.detail) for r in ddl]
    assert ("evolving", "applied", "add qty = '7'; add label") in outcomes
    assert ("evolving", "applied", "drop gone") in outcomes
    assert ("evolving", "skipped", "not a column change") in outcomes  # ADD INDEX, MODIFY
    assert ("unmirrored", "skipped", "no mirror table yet") in outcomes
    assert ("emptied", "applied", "all rows deleted") in outcomes
    assert not [o for o in outcomes if o[1] == "failed"]


@pytest.mark.parametrize("job", ["changelog", "mirror", "reconcile"])
def test_jobs_run_as_files_under_spark_submit(job: str) -> None:
    """spark-submit runs a job's file (not the module): its imports must still resolve."""
    spark_submit = Path(sys.executable).with_name("spark-submit")
    result = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[1]",
            str(ROOT / "spark_jobs" / f"{job}.py"),
            "--help",
        ],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"usage: spark_jobs.{job}" in result.stdout
