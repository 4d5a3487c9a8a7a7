"""Spark tests share one local[2] SparkSession (Kafka source and Delta Lake on its classpath)."""

from __future__ import annotations

from tests.spark_fixtures import spark

__all__ = ["spark"]
