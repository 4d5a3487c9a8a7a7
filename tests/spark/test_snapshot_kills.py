"""Snapshots through Spark under load and kills: three tables with 110k
rows (one with a composite key) snapshotted by ``canal-bridge run`` with ``snapshot.mode:
initial`` and a source account without write privileges, while a writer keeps updating,
deleting and inserting rows; the bridge is killed -9 twice during the snapshot and restarted
(tests/e2e/snapshot_load.py). Then no key's final state in the topic is older than the source,
and the Delta mirror the Spark job builds from the topic reconciles with every table (exit 0).

The negative cases: without the window's key dropping a stale row survives
(tests/e2e/test_snapshot.py), and a mirror built without the snapshot records fails reconcile
(tests/spark/test_snapshot_mirror.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.conftest import Account, MysqlEndpoint
from tests.e2e.snapshot_load import TABLES, run_snapshot
from tests.spark.mirroring import mirror_topic, reconcile_table

pytestmark = [pytest.mark.services, pytest.mark.both_servers, pytest.mark.timeout(900)]

QUERY_TIMEOUT_S = 300


def test_snapshot_under_writes_and_kills_mirrors_the_source(  # noqa: PLR0917 (fixtures)
    spark: SparkSession,
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    read_only_account: Account,
) -> None:
    run = run_snapshot(tmp_path, mysql, kafka_bootstrap, scratch_schema, read_only_account, kills=2)
    try:
        assert not run.differences, (
            f"{len(run.differences)} keys differ, e.g. {run.differences[:5]}"
        )
        log = run.bridge.output()
        assert "Traceback" not in log, log[-3000:]
    finally:
        run.bridge.kill()
    mirror = mirror_topic(spark, kafka_bootstrap, run.topic, tmp_path, QUERY_TIMEOUT_S)
    for table, _, _ in TABLES:
        code, report = reconcile_table(spark, mirror, f"{scratch_schema}.{table}", mysql)
        assert code == 0, report
