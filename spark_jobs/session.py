"""One way to build a SparkSession with Spark's Kafka source and Delta Lake on the classpath.

Two ways to run a job:

* ``python -m spark_jobs.<job>`` (tests, local runs): the connectors are resolved from Maven
  Central through ``spark.jars.packages`` at the installed pyspark's version, into a cached Ivy
  folder (``SPARK_IVY_DIR``, set by ``deploy/local/services.sh env``), so only the first run
  downloads; the master defaults to ``local[2]``.
* ``spark-submit --packages ... spark_jobs/<job>.py`` (clusters): spark-submit has already
  started the JVM with its ``--master`` and ``--packages``, so only the SQL settings are added.

Delta Lake (``io.delta:delta-spark_2.13``) holds the mirror tables; its version is the one
built for this Spark (Delta 4.0 for Spark 4.0), checked to resolve completely from Maven
Central together with the Kafka connector.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DELTA_VERSION = "4.0.0"


def kafka_package() -> str:
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def delta_package() -> str:
    return f"io.delta:delta-spark_2.13:{DELTA_VERSION}"


def packages() -> str:
    """The ``--packages`` value every job needs (for spark-submit and spark.jars.packages)."""
    return f"{kafka_package()},{delta_package()}"


def under_spark_submit() -> bool:
    """True when spark-submit launched this Python driver (it passes the JVM gateway's port)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    app_name: str, master: str | None = None, driver_memory: str | None = None
) -> SparkSession:
    """A session for ``app_name`` with Kafka and Delta; ``master`` defaults to spark-submit's,
    else ``SPARK_MASTER``, else ``local[2]``. ``driver_memory`` sizes the heap of a JVM this
    starts (spark-submit's ``--driver-memory`` does that for the JVMs it starts).

    A task that runs out of heap fails its task rather than the whole JVM
    (``spark.executor.killOnFatalError.depth=0``; in local mode the driver is the executor), so
    the error reaches the job, which retries the batch in smaller slices
    (``mirror.MirrorBatchWriter``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executor.killOnFatalError.depth", "0")
    )
    if under_spark_submit() and master is None:
        return builder.getOrCreate()
    builder = (
        builder.config("spark.jars.packages", packages())
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        # Small local runs: Delta's default of 50 partitions per MERGE/checkpoint is slow here.
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    ivy_dir = os.environ.get("SPARK_IVY_DIR")
    if ivy_dir:
        builder = builder.config("spark.jars.ivy", ivy_dir)
    if master:
        builder = builder.master(master)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
    return builder.getOrCreate()
