"""What the Spark tests do with a topic, in one place: read it as a batch, build a Delta mirror
from it, wait for a query, reconcile the mirror with the source."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

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
    await_query(MirrorJob(options, str(mirror)).start(spark), timeout_s)
    return mirror


def await_query(query: StreamingQuery, timeout_s: float = QUERY_TIMEOUT_S) -> None:
    """Until an available-now query ends; it must end in time and without an error."""
    assert query.awaitTermination(timeout_s), "query still running"
    assert query.exception() is None


def read_topic(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The whole topic as a batch, headers included (``spark_jobs.decode.parse_messages``'
    input)."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )


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
