"""The changelog job: every change, append-only, as Parquet partitioned by database/table/date.

``python -m spark_jobs.changelog --topics T --output PATH --checkpoint CP [--available-now]``
(or ``spark-submit ... spark_jobs/changelog.py ...``).

One row per changed row (and one per DDL, with ``is_ddl`` and ``sql`` set and no images), in
the shape of ``decode.CHANGE_COLUMNS`` plus ``es_time`` (the event time as a timestamp) and the
partition column ``date`` (the UTC date of ``es``). Images stay canal's text
(``map<string,string>``) with ``mysql_types``/``sql_types`` beside them, because one dataset
holds every table; ``decode.typed_columns`` types them per table when read.

Exactly-once into the folder comes from Spark's file sink: its ``_spark_metadata`` log lists
the files of committed batches (readers that go through Spark see only those), and the
checkpoint makes a restarted query resume after the last committed batch. Records that are
not FlatMessages are dropped. Kafka's at-least-once duplicates (a bridge restart replays its
unacknowledged batch) are kept: ``(binlog_file, binlog_position, row_index)`` identifies them.
Rows a snapshot read (``snapshot_chunk`` set: ``schema.table;chunk``, from the record header
``canal-bridge-snapshot``) are INSERTs sharing one binlog position per chunk (where the chunk
went into the stream), told apart by their primary key; at least once, a restart may send a
key's snapshot row again (from the chunk read again, at a later position).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `spark-submit spark_jobs/changelog.py`
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming.query import StreamingQuery

from spark_jobs.decode import changes, parse_messages
from spark_jobs.stream import (
    StreamOptions,
    add_stream_arguments,
    configure_logging,
    run_job,
    run_query,
    stream_options,
)

PARTITION_COLUMNS = ("database", "table", "date")


def changelog_rows(kafka: DataFrame) -> DataFrame:
    """Kafka records -> changelog rows (DDL included), with ``es_time`` and ``date``."""
    rows = changes(parse_messages(kafka), include_ddl=True)
    es_time = sf.timestamp_millis(sf.col("es"))
    return rows.select(
        "*",
        es_time.alias("es_time"),
        sf.to_date(sf.coalesce(es_time, sf.col("kafka_timestamp"))).alias("date"),
    )


@dataclass(frozen=True, slots=True)
class ChangelogJob:
    stream: StreamOptions
    output: str

    def start(self, spark: SparkSession) -> StreamingQuery:
        writer = (
            changelog_rows(self.stream.read(spark))
            .writeStream.format("parquet")
            .partitionBy(*PARTITION_COLUMNS)
            .option("path", self.output)
            .option("checkpointLocation", self.stream.checkpoint)
            .outputMode("append")
        )
        return self.stream.trigger(writer).start()

    def run(self, spark: SparkSession) -> int:
        return run_query(self.start(spark))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spark_jobs.changelog", description=__doc__.split("\n")[0]
    )
    add_stream_arguments(parser)
    parser.add_argument("--output", required=True, help="folder of the Parquet changelog")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    configure_logging()
    args = parse_args(argv)
    job = ChangelogJob(stream=stream_options(args), output=args.output)
    return run_job("canal-bridge-changelog", args.driver_memory, job.run)


if __name__ == "__main__":
    sys.exit(main())
