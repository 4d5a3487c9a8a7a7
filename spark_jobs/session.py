"""One way to build a SparkSession with Spark's own Kafka source on the classpath.

The connector ``spark-sql-kafka-0-10_2.13`` is resolved from Maven Central through
``spark.jars.packages`` at the installed pyspark's version, into a cached Ivy folder
(``SPARK_IVY_DIR``, set by ``deploy/local/services.sh env``), so only the first run downloads.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def kafka_package() -> str:
    import pyspark

    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def build_session(app_name: str, master: str | None = None) -> SparkSession:
    """A session for ``app_name``; ``master`` defaults to spark-submit's or ``local[2]``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.jars.packages", kafka_package())
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    ivy_dir = os.environ.get("SPARK_IVY_DIR")
    if ivy_dir:
        builder = builder.config("spark.jars.ivy", ivy_dir)
    if master:
        builder = builder.master(master)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
    return builder.getOrCreate()
