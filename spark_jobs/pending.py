"""Row actions staged for the mirror tables while the job is behind: ``<mirror>/_cdc_pending``.

A Delta MERGE reads every file of its target that holds a key it touches, and updates spread
over all keys touch nearly every file: merging each micro-batch on its own costs a read of the
whole table, so a catch-up grew slower as the table grew (at 100,000 changes a batch, a batch
took twice as long on a table of 3 million rows as on one of 1 million). While the job is
behind (its batches are full), a batch's actions are appended here instead, and folded into
the table in one MERGE once they amount to ``FOLD_RATIO`` of its rows (the batch that would
take them there is merged with them rather than staged): the table is read once per that many
changes, so a change costs the same whatever the size of the table.

The mirror table holds every change up to its last fold. It is folded when a batch is not full
(the job has caught up), before a DDL that changes its columns or rows is applied, and when an
available-now run ends, so a mirror that has caught up holds every change; while catching up,
what waits here is part of its lag.

One Delta table partitioned by database and table holds the actions as the messages carry
them (the image as a map of texts, its binlog order and GTID), typed only when folded: an ADD
COLUMN seen in row images needs no fold first. Every fold applies the latest action per key,
newer than the row (``MirrorTable.merge``), so a batch staged twice (redone after a crash
before its commit) or a fold redone (after a crash before its actions were cleared) leaves the
same table.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as sf

from spark_jobs.mirror_table import is_no_table, quote, sql_string

PENDING = "_cdc_pending"
FOLD_RATIO = 0.5
"""Fold a table's staged actions once they number this fraction of its rows."""

ACTION_COLUMNS = ("image", "_cdc_op", "_order", "binlog_gtid", "gtid", "es")
"""What ``MirrorTable.merge``'s source is typed from (``mirror_table.typed_frame``)."""

TableKey = tuple[str, str]


class PendingActions:
    """The staged actions under one mirror root, and how many each table has."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.path = f"{root.rstrip('/')}/{PENDING}"
        self.ref = f"delta.{quote(self.path)}"
        self._counts: dict[TableKey, int] | None = None

    @property
    def counts(self) -> dict[TableKey, int]:
        """Actions staged per table (tables with none left out), read once, then kept."""
        if self._counts is None:
            self._counts = self._read_counts()
        return self._counts

    def _read_counts(self) -> dict[TableKey, int]:
        try:
            frame = self.spark.read.format("delta").load(self.path)
        except AnalysisException as exc:
            if is_no_table(exc):
                return {}
            raise
        rows = frame.groupBy("database", "table").count().collect()
        return {(r["database"], r["table"]): r["count"] for r in rows if r["count"]}

    def _last_commit(self) -> Row | None:
        """The table's last Delta commit (version, operation metrics); None before the first
        stage."""
        try:
            return self.spark.sql(f"DESCRIBE HISTORY {self.ref} LIMIT 1").first()
        except AnalysisException as exc:
            if is_no_table(exc):
                return None
            raise

    def version(self) -> int | None:
        """The table's current Delta version; None before the first stage."""
        commit = self._last_commit()
        return int(commit["version"]) if commit else None

    def restore(self, version: int | None) -> None:
        """Back to ``version`` (what a batch that failed had staged is gone, so its retry
        stages and folds no more than itself)."""
        if version is None:
            if self.version() is not None:
                self.spark.sql(f"DELETE FROM {self.ref}")
        elif self.version() != version:
            self.spark.sql(f"RESTORE TABLE {self.ref} TO VERSION AS OF {int(version)}")
        self._counts = None

    def tables(self) -> list[TableKey]:
        return sorted(self.counts)

    def stage(self, key: TableKey, actions: DataFrame) -> None:
        """Append ``actions`` (``mirror._actions``' columns) for table ``key``."""
        counts = self.counts  # read before the write adds to the table
        database, table = key
        staged = actions.select(
            sf.lit(database).alias("database"),
            sf.lit(table).alias("table"),
            *ACTION_COLUMNS,
        )
        staged.write.format("delta").mode("append").partitionBy("database", "table").save(self.path)
        commit = self._last_commit()
        metrics = (commit["operationMetrics"] if commit else None) or {}
        added = int(metrics.get("numOutputRows", 0))
        if added:
            counts[key] = counts.get(key, 0) + added

    def actions(self, key: TableKey) -> DataFrame:
        """Table ``key``'s staged actions, ``ACTION_COLUMNS``."""
        database, table = key
        frame = self.spark.read.format("delta").load(self.path)
        return frame.where((sf.col("database") == database) & (sf.col("table") == table)).select(
            *ACTION_COLUMNS
        )

    def with_staged(self, key: TableKey, actions: DataFrame) -> DataFrame:
        """``actions`` and what is staged for ``key`` before them, as one frame."""
        if key not in self.counts:
            return actions.select(*ACTION_COLUMNS)
        return self.actions(key).unionByName(actions.select(*ACTION_COLUMNS))

    def clear(self, key: TableKey) -> None:
        """Drop what is staged for ``key`` (once it is folded): whole partitions, no rewrite."""
        if key not in self.counts:
            return
        database, table = key
        self.spark.sql(
            f"DELETE FROM {self.ref} WHERE database = {sql_string(database)} "
            f"AND `table` = {sql_string(table)}"
        )
        del self.counts[key]
