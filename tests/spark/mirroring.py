"""Building a Delta mirror from a topic and reconciling it with the source, as the Spark tests
do it (one place: tests/spark/test_*.py)."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs import reconcile
from spark_jobs.mirror import MirrorJob
from spark_jobs.stream import StreamOptions
from tests.conftest import MysqlEndpoint

QUERY_TIMEOUT_S = 240
PASSWORD_ENV = "SPARK_TEST_RECONCILE_PASSWORD"


def mirror_topic(
    spark: SparkSession, bootstrap: str, topic: str, root: Path, timeout_s: float = QUERY_TIMEOUT_S
) -> Path:
    """The mirror job over the whole topic (available now), into ``root/mirror``."""
    mirror = root / "mirror"
    options = StreamOptions(
        bootstrap_servers=bootstrap,
        checkpoint=str(root / "cp"),
        topics=topic,
        available_now=True,
    )
    query = MirrorJob(options, str(mirror)).start(spark)
    assert query.awaitTermination(timeout_s), "the mirror query is still running"
    assert query.exception() is None
    return mirror


def reconcile_args(mirror: Path, table: str, mysql: MysqlEndpoint) -> argparse.Namespace:
    """``spark_jobs.reconcile``'s arguments for ``table``; the password in ``PASSWORD_ENV``."""
    os.environ[PASSWORD_ENV] = mysql.admin_password
    return reconcile.parse_args(
        [
            "--mirror",
            str(mirror),
            "--table",
            table,
            "--mysql",
            mysql.address,
            "--user",
            mysql.admin_user,
            "--password-env",
            PASSWORD_ENV,
        ]
    )


def reconcile_table(
    spark: SparkSession, mirror: Path, table: str, mysql: MysqlEndpoint
) -> tuple[int, str]:
    """reconcile's exit code and report for ``table`` (``schema.table``)."""
    out = io.StringIO()
    code = reconcile.run(reconcile_args(mirror, table, mysql), spark, out)
    return code, out.getvalue()
