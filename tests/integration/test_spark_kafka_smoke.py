"""Spark Structured Streaming reads a Kafka topic through Spark's own `kafka` source."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer
from pyspark.sql import SparkSession

from tests import spark_fixtures

spark = spark_fixtures.spark  # the session fixture every Spark test shares


def test_structured_streaming_reads_kafka_topic(spark: SparkSession, kafka_bootstrap: str) -> None:
    topic = f"spark-smoke-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    for i in range(5):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v")
        .writeStream.format("memory")
        .queryName("smoke_" + topic.replace("-", "_"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the streaming query did not finish within 180s"
    rows = spark.sql(f"SELECT k, v FROM smoke_{topic.replace('-', '_')} ORDER BY k").collect()
    assert [(r.k, r.v) for r in rows] == [(str(i), f"v{i}") for i in range(5)]
