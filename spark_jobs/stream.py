"""What the streaming jobs share: their Kafka/trigger/checkpoint options and how they run.

Each job parses ``StreamOptions`` from its command line (``add_stream_arguments``), builds a
streaming query on ``decode.read_kafka`` and hands it to ``run_query``, which waits for it
and stops it cleanly on SIGTERM/SIGINT (a Kubernetes pod being deleted, Ctrl-C): the running
micro-batch finishes or is abandoned before its commit, so the next start redoes it from the
checkpoint. While it waits it logs each batch's progress (``progress.ProgressLog``);
``run_job`` around it ends the process at once when the JVM dies (``jvm.JvmWatch``).

Every micro-batch is capped: ``--max-offsets-per-trigger`` when given, else the default
``budget.default_max_offsets`` takes from the heap the batch runs in, so that what a batch
needs does not grow with the backlog.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from spark_jobs.budget import default_max_offsets, failure_line, parse_size, task_heap
from spark_jobs.decode import read_kafka
from spark_jobs.jvm import JvmWatch
from spark_jobs.progress import ProgressLog
from spark_jobs.session import build_session

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    bootstrap_servers: str
    checkpoint: str
    topics: str | None = None
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    available_now: bool = False
    trigger_interval: str = "10 seconds"
    timestamp_zone: str = "UTC"
    kafka_options: dict[str, str] = field(default_factory=dict)
    driver_memory: str | None = None

    def batch_cap(self, spark: SparkSession) -> int:
        """Records per micro-batch: ``max_offsets_per_trigger``, else the heap's default."""
        if self.max_offsets_per_trigger:
            return self.max_offsets_per_trigger
        heap = task_heap(spark)
        cap = default_max_offsets(heap)
        log.info(
            "at most %d records per micro-batch (the default for %.1f GiB of heap; "
            "--max-offsets-per-trigger overrides it)",
            cap,
            heap / (1 << 30),
        )
        return cap

    def read(self, spark: SparkSession, cap: int | None = None) -> DataFrame:
        """The topics' records, at most ``cap`` (default ``batch_cap``) per micro-batch."""
        return read_kafka(
            spark,
            self.bootstrap_servers,
            topics=self.topics,
            topic_pattern=self.topic_pattern,
            starting_offsets=self.starting_offsets,
            max_offsets_per_trigger=cap or self.batch_cap(spark),
            options=self.kafka_options,
        )

    def trigger(self, writer: DataStreamWriter) -> DataStreamWriter:
        if self.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=self.trigger_interval)


def add_stream_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--topics", help="comma-separated Kafka topics to read")
    source.add_argument("--topic-pattern", help="Java regex of the topics to read")
    parser.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS"),
        help="Kafka brokers (default: $KAFKA_BOOTSTRAP_SERVERS)",
    )
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder (any Hadoop FS)")
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        help="where a new checkpoint starts: earliest | latest | Spark's JSON offsets",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=None,
        help="records per micro-batch (default: 100,000 per GiB of heap, at least 10,000)",
    )
    parser.add_argument(
        "--driver-memory",
        default=os.environ.get("SPARK_DRIVER_MEMORY"),
        help="heap of a local run's JVM, e.g. 4g (default $SPARK_DRIVER_MEMORY, else Spark's "
        "1g); under spark-submit use its --driver-memory / --executor-memory",
    )
    parser.add_argument(
        "--available-now",
        action="store_true",
        help="process what the topics hold now, in one or more batches, then exit",
    )
    parser.add_argument("--trigger-interval", default="10 seconds")
    parser.add_argument(
        "--timestamp-zone",
        default="UTC",
        help="zone of TIMESTAMP texts: the bridge's timestamp_time_zone (default UTC)",
    )
    parser.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Kafka source option, e.g. kafka.security.protocol=SASL_SSL (repeatable)",
    )


def stream_options(args: argparse.Namespace) -> StreamOptions:
    if not args.bootstrap_servers:
        raise SystemExit("--bootstrap-servers is required (or set KAFKA_BOOTSTRAP_SERVERS)")
    if args.driver_memory:
        try:
            parse_size(args.driver_memory)
        except ValueError as exc:
            raise SystemExit(f"--driver-memory: {exc}") from exc
    extra = {}
    for item in args.kafka_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--kafka-option {item!r}: expected KEY=VALUE")
        extra[key.strip()] = value
    return StreamOptions(
        bootstrap_servers=args.bootstrap_servers,
        checkpoint=args.checkpoint,
        topics=args.topics,
        topic_pattern=args.topic_pattern,
        starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        available_now=args.available_now,
        trigger_interval=args.trigger_interval,
        timestamp_zone=args.timestamp_zone,
        kafka_options=extra,
        driver_memory=args.driver_memory,
    )


def configure_logging() -> None:
    """INFO for the jobs' own lines, WARNING for the rest, nothing from Py4J: it logs a
    traceback (at INFO, and at ERROR on the root logger) for every call that fails when the JVM
    is gone, while the failure also reaches the caller as an exception, which ``JvmWatch``
    turns into its one line."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_from_py4j)
    logging.getLogger("spark_jobs").setLevel(logging.INFO)


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def run_job(app_name: str, driver_memory: str | None, run: Callable[[SparkSession], int]) -> int:
    """A job's main: build the session, ``run`` the job in it (start its query and
    ``run_query`` it), stop Spark. A JVM that dies on the way ends the process at once
    (``jvm.EXIT_JVM_DIED``, one line)."""
    spark = build_session(app_name, driver_memory=driver_memory)
    watch = JvmWatch().start()
    try:
        return run(spark)
    except Exception:
        watch.check()
        raise
    finally:
        watch.stop()
        spark.stop()


def run_query(query: StreamingQuery, on_end: Callable[[], None] | None = None) -> int:
    """Wait for ``query``, logging each batch; SIGTERM/SIGINT stop it. ``on_end`` runs when it
    ended on its own (available-now) without failing. Returns 0, or 1 when it failed."""
    stopping = threading.Event()
    progress = ProgressLog()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping the query", signal.Signals(signum).name)
        stopping.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while query.isActive and not stopping.is_set():
            try:
                query.awaitTermination(1)
            except StreamingQueryException:
                break  # reported below, in one line
            progress.update(query)
        if stopping.is_set():
            query.stop()
        progress.update(query)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    failure = query.exception()
    if failure is not None:
        line = failure_line(str(failure))
        log.error("query failed: %s", line or failure)
        return 1
    if on_end is not None and not stopping.is_set():
        on_end()
    return 0
