"""The mirror job: a current-state Delta copy of every source table, one MERGE per micro-batch.

``python -m spark_jobs.mirror --topics T --mirror PATH --checkpoint CP [--available-now]``
(or ``spark-submit ... spark_jobs/mirror.py ...``). Each micro-batch (``foreachBatch``):

1. Decode the records (``decode.parse_messages``/``changes``); DDL messages go to the driver.
2. Per table, in binlog order: split the batch's row changes at the table's schema-changing DDL
   (ADD/DROP/RENAME/CHANGE/MODIFY COLUMN, TRUNCATE), so each change is applied with the schema
   (and under the column names) it was made under.
3. For each segment, turn changes into actions on keys (INSERT/UPDATE: upsert the after-image;
   DELETE: delete the before-image's key; an UPDATE that changes the primary key also deletes
   the old key, as ``mq.key_change: split`` sends it as DELETE + INSERT), keep the latest
   action per key and MERGE them (``MirrorTable.merge``). While the job is behind (the batch
   is full), the actions are staged instead and folded in when they amount to a fraction of
   the table (``pending``): a MERGE reads the whole table, once per fold rather than per batch.
4. Apply the DDL that ends the segment: ADD COLUMN (with the value existing rows got, where
   it goes), DROP COLUMN, RENAME COLUMN, CHANGE/MODIFY (new name, type: existing values are
   converted, place), TRUNCATE. Other DDL, and DDL that fails, is recorded and skipped.
5. Append the DDL outcomes to ``<mirror>/_cdc_ddl`` and the batch's offsets to
   ``<mirror>/_cdc_batches`` (Delta tables, idempotent writes keyed by the query and batch).

"Latest" is the binlog order (file, position, then event time, Kafka partition and offset,
row): Kafka offsets alone cannot order a key's old-key delete (on the new key's partition)
against its earlier history (on the old key's partition). Applying the latest action per key
makes the batch idempotent: at-least-once duplicates, a bridge's replay after a restart and
Spark re-running a batch that died before its commit all leave the same state. Tables without
a primary key are not mirrored (logged once per batch).

Requires full row images (``binlog_row_image=FULL``, as canal does).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `spark-submit spark_jobs/mirror.py`
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from operator import or_

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as sf
from pyspark.sql import types as st
from pyspark.sql.streaming.query import StreamingQuery

from spark_jobs.budget import MIN_SLICE_RECORDS, BatchTooLarge, out_of_memory
from spark_jobs.ddl import (
    AddColumn,
    AlterClause,
    ChangeColumn,
    DropColumn,
    OtherClause,
    RenameColumn,
    parse_alter,
)
from spark_jobs.decode import ORDER_COLUMNS, change_order, changes, parse_messages
from spark_jobs.mirror_table import MirrorTable, Order, quote, typed_frame
from spark_jobs.pending import FOLD_RATIO, PendingActions, TableKey
from spark_jobs.stream import (
    StreamOptions,
    add_stream_arguments,
    configure_logging,
    run_job,
    run_query,
    stream_options,
)

log = logging.getLogger("spark_jobs.mirror")

DDL_LOG = "_cdc_ddl"
BATCH_LOG = "_cdc_batches"
TOMBSTONE_RETENTION_MS = 7 * 24 * 3600 * 1000
PURGE_EVERY_BATCHES = 100
FULL_BATCH = 0.9
"""A batch of this fraction of the cap is full: the job is behind. (Kafka's source spreads the
cap over the partitions rounding down, and transaction markers take offsets but are no
records, so a full batch may hold a little less than the cap.)"""

DDL_LOG_SCHEMA = st.StructType(
    [
        st.StructField("batch_id", st.LongType()),
        st.StructField("database", st.StringType()),
        st.StructField("table", st.StringType()),
        st.StructField("type", st.StringType()),
        st.StructField("sql", st.StringType()),
        st.StructField("es", st.LongType()),
        st.StructField("binlog_file", st.StringType()),
        st.StructField("binlog_position", st.LongType()),
        st.StructField("kafka_partition", st.IntegerType()),
        st.StructField("kafka_offset", st.LongType()),
        st.StructField("outcome", st.StringType()),
        st.StructField("detail", st.StringType()),
    ]
)


@dataclass(frozen=True, slots=True)
class DdlEvent:
    database: str
    table: str
    type: str
    sql: str
    es: int
    binlog_file: str | None
    binlog_position: int | None
    kafka_partition: int
    kafka_offset: int

    @property
    def order(self) -> Order:
        """Comparable with ``decode.change_order`` without its row index."""
        return (
            self.binlog_file or "",
            self.binlog_position if self.binlog_position is not None else -1,
            self.es if self.es is not None else -1,
            self.kafka_partition,
            self.kafka_offset,
        )


@dataclass
class DdlOutcome:
    event: DdlEvent
    outcome: str  # applied | skipped | failed | already-applied
    detail: str = ""


@dataclass
class ColumnInfo:
    """What a batch's messages say about a table: its columns in order, types, key."""

    columns: list[tuple[str, str]] = field(default_factory=list)
    last_seen: dict[str, Order] = field(default_factory=dict)
    primary_key: list[str] = field(default_factory=list)


class MirrorBatchWriter:
    """The ``foreachBatch`` function: applies one micro-batch to the mirror under ``root``.

    A batch of fewer than ``FULL_BATCH`` of ``batch_cap`` records means the job has caught up:
    every table's staged actions are folded in then (no cap: every batch).
    ``after_batch(batch_id)`` runs after the batch's writes and before Spark commits it (tests
    use it to fail a batch at that point).
    """

    def __init__(
        self,
        root: str,
        checkpoint: str,
        timestamp_zone: str = "UTC",
        after_batch: Callable[[int], None] | None = None,
        tombstone_retention_ms: int = TOMBSTONE_RETENTION_MS,
        *,
        batch_cap: int | None = None,
    ) -> None:
        self.root = root.rstrip("/")
        self.checkpoint = checkpoint
        self.timestamp_zone = timestamp_zone
        self.after_batch = after_batch
        self.tombstone_retention_ms = tombstone_retention_ms
        self.batch_cap = batch_cap
        self._tables: dict[tuple[str, str], MirrorTable] = {}
        self._pending: PendingActions | None = None
        self._app_id: str | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        slices = 1
        ranges: list[OffsetRange] | None = None
        pending = self._pending_actions(spark)
        staged_before = pending.version()
        while True:
            try:
                self._apply_batch(spark, batch, batch_id, slices, ranges)
                break
            except Exception as exc:
                if not out_of_memory(exc):
                    raise
                if ranges is None:
                    ranges = _offset_ranges(batch, batch_id, exc)
                slices = _more_slices(ranges, batch_id, slices, exc)
                pending.restore(staged_before)
        if self.after_batch is not None:
            self.after_batch(batch_id)

    def _apply_batch(
        self,
        spark: SparkSession,
        batch: DataFrame,
        batch_id: int,
        slices: int,
        ranges: list[OffsetRange] | None,
    ) -> None:
        """Apply the batch whole (``slices`` 1) or in ``slices`` consecutive offset ranges per
        Kafka partition, one after the other; then log it once.

        A slice is the batch's records filtered by offset, read again from Kafka: nothing of
        the whole batch is held (a batch of large records may not even fit on the way to
        disk), only one slice's messages at a time.

        Applying a batch in parts leaves what applying it whole does: only a change newer
        than a row's ``_cdc_order`` applies, whatever part it comes in."""
        if slices == 1 or ranges is None:
            with _persisted(parse_messages(batch)) as messages:
                caught_up = self._caught_up(messages.count())
                outcomes = self._apply_messages(spark, messages, caught_up)
                self._finish(spark, messages, batch_id, outcomes, caught_up)
            return
        outcomes = []
        caught_up = self._caught_up(sum(r.records for r in ranges))
        for part in _slices(batch, ranges, slices):
            with _persisted(parse_messages(part)) as messages:
                outcomes += self._apply_messages(spark, messages, caught_up)
        self._finish(spark, parse_messages(batch), batch_id, outcomes, caught_up)

    def _caught_up(self, records: int) -> bool:
        return self.batch_cap is None or records < FULL_BATCH * self.batch_cap

    def _apply_messages(
        self, spark: SparkSession, messages: DataFrame, caught_up: bool
    ) -> list[DdlOutcome]:
        # The row changes are not cached: each table's MERGE derives its own from the cached
        # messages once (Delta materializes the MERGE source), which costs less than caching
        # every change's images a second time.
        return self._apply(spark, messages, changes(messages), caught_up)

    def _finish(
        self,
        spark: SparkSession,
        messages: DataFrame,
        batch_id: int,
        outcomes: list[DdlOutcome],
        caught_up: bool,
    ) -> None:
        if caught_up:
            self.fold_all(spark)
        self._write_logs(spark, messages, batch_id, outcomes)
        if batch_id % PURGE_EVERY_BATCHES == PURGE_EVERY_BATCHES - 1:
            self._purge_tombstones(messages)

    def fold_all(self, spark: SparkSession) -> None:
        """Fold every table's staged actions into it (the job has caught up, or is done)."""
        pending = self._pending_actions(spark)
        for key in pending.tables():
            self._fold(self._table(spark, *key), None)

    # ---------------------------------------------------------------- one batch

    def _apply(
        self, spark: SparkSession, messages: DataFrame, rows: DataFrame, caught_up: bool
    ) -> list[DdlOutcome]:
        ddl = _ddl_events(messages)
        info = _column_info(messages)
        outcomes: list[DdlOutcome] = []
        for key in sorted(set(info) | {(e.database, e.table) for e in ddl}):
            table_ddl = [e for e in ddl if (e.database, e.table) == key]
            outcomes += self._apply_table(
                spark, key, rows, info.get(key), table_ddl, caught_up=caught_up
            )
        return outcomes

    def _table(self, spark: SparkSession, database: str, table: str) -> MirrorTable:
        key = (database, table)
        cached = self._tables.get(key)
        if cached is None or cached.spark is not spark:
            cached = MirrorTable(spark, self.root, database, table)
            self._tables[key] = cached
        return cached

    def _pending_actions(self, spark: SparkSession) -> PendingActions:
        if self._pending is None or self._pending.spark is not spark:
            self._pending = PendingActions(spark, self.root)
        return self._pending

    def _apply_table(
        self,
        spark: SparkSession,
        key: tuple[str, str],
        rows: DataFrame,
        info: ColumnInfo | None,
        ddl: list[DdlEvent],
        *,
        caught_up: bool,
    ) -> list[DdlOutcome]:
        table = self._table(spark, *key)
        if table.state is None:
            if info is None:
                return [DdlOutcome(e, "skipped", "no mirror table yet") for e in ddl]
            if not info.primary_key:
                log.warning("%s.%s has no primary key: not mirrored", *key)
                return [DdlOutcome(e, "skipped", "table not mirrored: no key") for e in ddl]
            created_later = {name for e in ddl for name in _new_names(e)}
            table.create(
                [(n, t) for n, t in info.columns if n.lower() not in created_later],
                info.primary_key,
            )
        state = table.state
        assert state is not None
        pending = [e for e in ddl if state.ddl_order is None or e.order > state.ddl_order]
        outcomes = [DdlOutcome(e, "already-applied") for e in ddl if e not in pending]
        if info is not None:
            self._add_new_columns(table, info, {name for e in pending for name in _new_names(e)})
        boundaries = [e for e in pending if _changes_schema_or_rows(e)]
        table_rows = rows.where((sf.col("database") == key[0]) & (sf.col("table") == key[1]))
        lower: Order | None = None
        for event in [*boundaries, None]:
            upper = event.order if event is not None else None
            # Before a DDL, the table must hold every change made before it.
            fold = caught_up or event is not None
            if info is not None:
                self._merge_segment(table, table_rows, lower, upper, fold)
            elif fold:
                self._fold(table, None)
            if event is not None:
                outcomes.append(self._apply_ddl(table, event))
                lower = upper
        outcomes += [
            DdlOutcome(e, "skipped", "not a column change") for e in pending if e not in boundaries
        ]
        return outcomes

    def _add_new_columns(self, table: MirrorTable, info: ColumnInfo, pending: set[str]) -> None:
        """Columns the images carry that the mirror lacks, seen after the last DDL applied (an
        older image may carry a column dropped since)."""
        state = table.state
        assert state is not None
        new = [
            (n, t)
            for n, t in info.columns
            if table.column(n) is None
            and n.lower() not in pending
            and (state.ddl_order is None or info.last_seen[n] > state.ddl_order)
        ]
        if new:
            log.info(
                "%s.%s: adding columns %s seen in row images", table.database, table.table, new
            )
            table.add_columns(new)

    def _merge_segment(
        self,
        table: MirrorTable,
        rows: DataFrame,
        lower: Order | None,
        upper: Order | None,
        fold: bool,
    ) -> None:
        """Merge the segment's actions with what is staged before them (``fold``, or when
        they would take the staged actions to ``FOLD_RATIO`` of the table, counting a full
        batch), else stage them."""
        state = table.state
        assert state is not None
        message_order = _message_order()
        segment = rows
        if lower is not None:
            segment = segment.where(message_order > _order_literal(lower))
        if upper is not None:
            segment = segment.where(message_order < _order_literal(upper))
        if (lower is not None or upper is not None) and segment.isEmpty():
            # A DDL with no change of this table on one side: spare an empty MERGE.
            if fold:
                self._fold(table, None)
            return
        actions = _actions(segment, state.primary_key)
        pending = self._pending_actions(table.spark)
        key = (table.database, table.table)
        staged = pending.counts.get(key, 0) + (self.batch_cap or 0)
        if fold or staged >= FOLD_RATIO * table.rows:
            self._fold(table, actions)
        else:
            pending.stage(key, actions)

    def _fold(self, table: MirrorTable, actions: DataFrame | None) -> None:
        """MERGE ``actions`` and the table's staged actions into it, then clear those."""
        pending = self._pending_actions(table.spark)
        key: TableKey = (table.database, table.table)
        if actions is None:
            if key not in pending.counts:
                return
            actions = pending.actions(key)
        else:
            actions = pending.with_staged(key, actions)
        staged = pending.counts.get(key, 0)
        started = time.monotonic()
        self._merge_latest(table, actions)
        pending.clear(key)
        if staged:
            took = time.monotonic() - started
            log.info("%s.%s: folded %d staged actions in %.1f s", *key, staged, took)

    def _merge_latest(self, table: MirrorTable, actions: DataFrame) -> None:
        state = table.state
        assert state is not None
        typed = typed_frame(actions, state.columns, self.timestamp_zone)
        window = Window.partitionBy(*[sf.col(quote(k)) for k in state.primary_key]).orderBy(
            sf.col("_cdc_order").desc()
        )
        latest = (
            typed.withColumn("_rank", sf.row_number().over(window))
            .where(sf.col("_rank") == 1)
            .drop("_rank")
        )
        table.merge(latest)

    def _apply_ddl(self, table: MirrorTable, event: DdlEvent) -> DdlOutcome:
        try:
            outcome = self._apply_ddl_unsafe(table, event)
        except Exception as exc:  # a DDL must never stop the stream: record it, go on
            log.exception("DDL %r on %s.%s failed", event.sql, event.database, event.table)
            return DdlOutcome(event, "failed", f"{type(exc).__name__}: {exc}"[:2000])
        table.set_ddl_order(event.order)
        return outcome

    def _apply_ddl_unsafe(self, table: MirrorTable, event: DdlEvent) -> DdlOutcome:
        if event.type == "TRUNCATE":
            table.truncate(event.order, event.es)
            return DdlOutcome(event, "applied", "all rows deleted")
        notes = [self._apply_clause(table, clause) for clause in parse_alter(event.sql) or []]
        return DdlOutcome(event, "applied", "; ".join(notes))

    def _apply_clause(self, table: MirrorTable, clause: AlterClause) -> str:
        """Apply one ALTER clause to the mirror; what was done, for the DDL log."""
        state = table.state
        assert state is not None
        if isinstance(clause, AddColumn):
            if table.column(clause.name) is not None:
                return f"add {clause.name}: exists"
            table.add_columns([(clause.name, clause.mysql_type)], clause.position)
            if not clause.fill_known:
                return f"add {clause.name}: existing rows null (default not reproduced)"
            if clause.fill is not None:
                table.fill(clause.name, clause.fill, self.timestamp_zone)
                return f"add {clause.name} = {clause.fill!r}"
            return f"add {clause.name}"
        if isinstance(clause, DropColumn):
            if table.column(clause.name) is None:
                return f"drop {clause.name}: absent"
            if clause.name.lower() in (k.lower() for k in state.primary_key):
                return f"drop {clause.name}: key column kept"
            table.drop_column(clause.name)
            return f"drop {clause.name}"
        if isinstance(clause, RenameColumn):
            return self._rename(table, clause.old, clause.new)
        if isinstance(clause, ChangeColumn):
            return self._change(table, clause)
        return f"skipped: {clause.text}"

    def _rename(self, table: MirrorTable, old: str, new: str) -> str:
        if table.column(old) is None:
            return f"rename {old}: absent"
        if old.lower() != new.lower() and table.column(new) is not None:
            return f"rename {old}: {new} exists"
        if old != new:
            table.rename_column(old, new)
        return f"rename {old} to {new}"

    def _change(self, table: MirrorTable, clause: ChangeColumn) -> str:
        """CHANGE / MODIFY: rename, convert the existing values to the new type, move."""
        if table.column(clause.old) is None:
            if table.column(clause.new) is not None:
                return f"change {clause.old}: absent, {clause.new} exists"
            table.add_columns([(clause.new, clause.mysql_type)], clause.position)
            return f"change {clause.old}: absent, {clause.new} added"
        renamed = self._rename(table, clause.old, clause.new)
        if table.column(clause.new) is None:
            return renamed
        table.retype_column(clause.new, clause.mysql_type, self.timestamp_zone)
        if clause.position is not None:
            table.move_column(clause.new, clause.position)
        what = f"{clause.old} to {clause.new}" if clause.old != clause.new else clause.old
        return f"change {what} {clause.mysql_type}"

    def _purge_tombstones(self, messages: DataFrame) -> None:
        """Drop tombstones older than the retention, measured back from the batch's newest
        event time (so a stopped job does not purge what it has not caught up with), in the
        tables this process has touched."""
        newest = messages.agg(sf.max("es")).first()
        if newest is None or newest[0] is None:
            return
        for table in self._tables.values():
            if table.state is not None:
                table.purge_tombstones(newest[0] - self.tombstone_retention_ms)

    # ---------------------------------------------------------------- logs

    def _query_id(self, spark: SparkSession) -> str:
        """The streaming query's id (from the checkpoint): the idempotent-write app id, so a
        re-run of a batch does not append its log rows twice, and a new checkpoint starts a
        new sequence."""
        if self._app_id is None:
            text = spark.read.text(f"{self.checkpoint.rstrip('/')}/metadata").first()
            self._app_id = json.loads(text[0])["id"] if text else "unknown"
        return self._app_id

    def _write_logs(
        self, spark: SparkSession, messages: DataFrame, batch_id: int, outcomes: list[DdlOutcome]
    ) -> None:
        app_id = self._query_id(spark)
        now = datetime.now(UTC).replace(tzinfo=None)
        offsets = messages.groupBy("topic", sf.col("kafka_partition").alias("partition")).agg(
            sf.min("kafka_offset").alias("min_offset"),
            sf.max("kafka_offset").alias("max_offset"),
            sf.count(sf.lit(1)).alias("records"),
        )
        offsets = offsets.select(
            sf.lit(batch_id).cast("bigint").alias("batch_id"),
            "*",
            sf.lit(now).cast("timestamp").alias("processed_at"),
        )
        _append(offsets, f"{self.root}/{BATCH_LOG}", app_id, batch_id)
        if outcomes:
            frame = spark.createDataFrame(
                [
                    (
                        batch_id,
                        o.event.database,
                        o.event.table,
                        o.event.type,
                        o.event.sql,
                        o.event.es,
                        o.event.binlog_file,
                        o.event.binlog_position,
                        o.event.kafka_partition,
                        o.event.kafka_offset,
                        o.outcome,
                        o.detail,
                    )
                    for o in outcomes
                ],
                DDL_LOG_SCHEMA,
            )
            _append(frame, f"{self.root}/{DDL_LOG}", app_id, batch_id)


_ORDER_DEFAULTS = ("", -1, -1, -1, -1)


def _message_order() -> Column:
    """A message's place in the change order: ``DdlEvent.order``'s fields, as a struct."""
    return sf.struct(
        *[
            sf.coalesce(sf.col(c), sf.lit(d)).alias(c)
            for c, d in zip(ORDER_COLUMNS, _ORDER_DEFAULTS, strict=True)
        ]
    )


def _order_literal(order: Order) -> Column:
    file, position, es, partition, offset = order
    return sf.struct(
        sf.lit(file).alias("binlog_file"),
        sf.lit(position).cast("bigint").alias("binlog_position"),
        sf.lit(es).cast("bigint").alias("es"),
        sf.lit(partition).cast("int").alias("kafka_partition"),
        sf.lit(offset).cast("bigint").alias("kafka_offset"),
    )


def _append(frame: DataFrame, path: str, app_id: str, batch_id: int) -> None:
    (
        frame.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(path)
    )


@contextmanager
def _persisted(frame: DataFrame) -> Iterator[DataFrame]:
    kept = frame.persist()
    try:
        yield kept
    finally:
        kept.unpersist()


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """The offsets a batch holds of one Kafka partition, first and last included."""

    topic: str
    partition: int
    low: int
    high: int

    @property
    def records(self) -> int:
        return self.high - self.low + 1


def _offset_ranges(batch: DataFrame, batch_id: int, exc: Exception) -> list[OffsetRange]:
    """The batch's offset ranges, read without its values; ``BatchTooLarge`` when even that
    runs out of memory (only more heap helps then)."""
    try:
        rows = (
            batch.groupBy("topic", "partition")
            .agg(sf.min("offset").alias("low"), sf.max("offset").alias("high"))
            .collect()
        )
    except Exception as again:
        if out_of_memory(again):
            raise BatchTooLarge(batch_id, None, 1) from exc
        raise
    return [OffsetRange(r["topic"], r["partition"], r["low"], r["high"]) for r in rows]


def _more_slices(ranges: list[OffsetRange], batch_id: int, slices: int, exc: Exception) -> int:
    """The slices to retry a batch in after it ran out of memory in ``slices``; raises
    ``BatchTooLarge`` when they would hold fewer than ``MIN_SLICE_RECORDS`` records."""
    records = sum(r.records for r in ranges)
    more = slices * 2
    if records // more < MIN_SLICE_RECORDS:
        raise BatchTooLarge(batch_id, records, slices) from exc
    log.warning(
        "batch %d (%d records) ran out of memory in %d slice(s): retrying it in %d slices",
        batch_id,
        records,
        slices,
        more,
    )
    return more


def _slices(batch: DataFrame, ranges: list[OffsetRange], count: int) -> list[DataFrame]:
    """``batch`` cut into ``count`` parts: part i holds the i-th of ``count`` consecutive
    offset ranges of each Kafka partition."""
    parts = []
    for index in range(count):
        conditions = []
        for r in ranges:
            start = r.low + r.records * index // count
            end = r.low + r.records * (index + 1) // count
            if end > start:
                conditions.append(
                    (sf.col("topic") == r.topic)
                    & (sf.col("partition") == r.partition)
                    & sf.col("offset").between(start, end - 1)
                )
        if conditions:
            parts.append(batch.where(reduce(or_, conditions)))
    return parts


def _new_names(event: DdlEvent) -> set[str]:
    """The (lower-cased) column names ``event`` creates: added, or renamed to. Row images
    after it carry them; the mirror must not add them as columns of their own before it."""
    if event.type != "ALTER":
        return set()
    names: set[str] = set()
    for clause in parse_alter(event.sql) or []:
        if isinstance(clause, AddColumn):
            names.add(clause.name.lower())
        elif isinstance(clause, RenameColumn | ChangeColumn) and clause.old != clause.new:
            names.add(clause.new.lower())
    return names


def _changes_schema_or_rows(event: DdlEvent) -> bool:
    if event.type == "TRUNCATE":
        return True
    if event.type != "ALTER":
        return False
    return any(not isinstance(c, OtherClause) for c in parse_alter(event.sql) or [])


def _ddl_events(messages: DataFrame) -> list[DdlEvent]:
    rows = (
        messages.where(sf.col("is_ddl"))
        .select(
            "database",
            "table",
            "type",
            "sql",
            "es",
            "binlog_file",
            "binlog_position",
            "kafka_partition",
            "kafka_offset",
        )
        .collect()
    )
    events = [DdlEvent(**r.asDict()) for r in rows]
    events = [e for e in events if e.table]  # CREATE DATABASE and the like name no table
    return sorted(set(events), key=lambda e: e.order)


def _column_info(messages: DataFrame) -> dict[tuple[str, str], ColumnInfo]:
    """Per table: its columns in table order with their latest declared type, when each was
    last seen, and the latest primary key — from the row messages of the batch.

    One aggregation to the batch's distinct message shapes (columns, types, key: a handful per
    table), the rest in Python."""
    shapes = (
        messages.where(~sf.col("is_ddl") & sf.col("data").isNotNull() & (sf.size("data") > 0))
        .groupBy(
            "database",
            "table",
            "pk_names",
            sf.map_keys(sf.col("data")[0]).alias("columns"),
            sf.map_entries("mysql_types").alias("types"),
        )
        .agg(sf.max(_message_order()).alias("last_seen"))
        .collect()
    )
    newest: dict[tuple[str, str], dict[str, tuple[int, str, Order]]] = {}
    result: dict[tuple[str, str], ColumnInfo] = {}
    for shape in sorted(shapes, key=lambda r: tuple(r["last_seen"])):
        key = (shape["database"], shape["table"])
        seen = tuple(shape["last_seen"])
        types = {e["key"]: e["value"] for e in shape["types"] or ()}
        columns = newest.setdefault(key, {})
        for position, column in enumerate(shape["columns"]):
            columns[column] = (position, types.get(column) or "", seen)
        result.setdefault(key, ColumnInfo()).primary_key = list(shape["pk_names"] or [])
    for key, columns in newest.items():
        info = result[key]
        for column, (_, mysql_type, seen) in sorted(columns.items(), key=lambda c: c[1][0]):
            info.columns.append((column, mysql_type))
            info.last_seen[column] = seen
    return result


def _actions(segment: DataFrame, primary_key: Sequence[str]) -> DataFrame:
    """Change rows -> key actions: ``image``, ``_cdc_op`` and ``_order`` (binlog order, with
    every delete before the upserts of the same event).

    One rows event touches a key at most twice, leaving it before entering it again: a row
    moves out of the key (``mq.key_change: update``'s old key, or ``split``'s DELETE) and
    another row (or the same row, when the partition hash reads other columns than the key)
    moves in. ``split`` sends that DELETE and INSERT on their hashed values' partitions, so
    Kafka coordinates cannot order them; rank 0 for deletes does, in both modes."""
    before, after = sf.col("before"), sf.col("after")
    key_changed = reduce(or_, [~before[k].eqNullSafe(after[k]) for k in primary_key])
    kind = sf.col("type")

    def action(image: Column, op: str, rank: int) -> Column:
        return sf.struct(
            image.alias("image"), sf.lit(op).alias("_cdc_op"), sf.lit(rank).alias("rank")
        )

    # Up to three actions per change, made in one pass over the changes (null where none).
    candidates = sf.array(
        sf.when(kind.isin("INSERT", "UPDATE"), action(after, "U", 1)),
        sf.when((kind == "UPDATE") & key_changed, action(before, "D", 0)),
        sf.when(kind == "DELETE", action(before, "D", 0)),
    )
    chosen = segment.select("*", sf.explode(candidates).alias("_action")).where(
        sf.col("_action").isNotNull()
    )
    return chosen.select(
        sf.col("_action.image").alias("image"),
        sf.col("_action._cdc_op").alias("_cdc_op"),
        change_order(sf.col("_action.rank").alias("rank")).alias("_order"),
        *[c for c in segment.columns if c not in ("before", "after")],
    )


# -------------------------------------------------------------------------------- the job


@dataclass(frozen=True, slots=True)
class MirrorJob:
    stream: StreamOptions
    mirror: str
    after_batch: Callable[[int], None] | None = None
    tombstone_retention_ms: int = TOMBSTONE_RETENTION_MS

    def start(self, spark: SparkSession) -> StreamingQuery:
        cap = self.stream.batch_cap(spark)
        writer = MirrorBatchWriter(
            self.mirror,
            self.stream.checkpoint,
            self.stream.timestamp_zone,
            self.after_batch,
            self.tombstone_retention_ms,
            batch_cap=cap,
        )
        stream = self.stream.read(spark, cap).writeStream.foreachBatch(writer)
        stream = stream.option("checkpointLocation", self.stream.checkpoint)
        return self.stream.trigger(stream).start()

    def finish(self, spark: SparkSession) -> None:
        """After an available-now run: fold what its last, full batches staged."""
        MirrorBatchWriter(self.mirror, self.stream.checkpoint, self.stream.timestamp_zone).fold_all(
            spark
        )

    def run(self, spark: SparkSession) -> int:
        """Start the query, wait for it (``stream.run_query``), fold what it staged if it ended
        on its own (available-now)."""
        return run_query(self.start(spark), lambda: self.finish(spark))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_jobs.mirror", description=__doc__.split("\n")[0])
    add_stream_arguments(parser)
    parser.add_argument("--mirror", required=True, help="root folder of the mirror tables")
    parser.add_argument(
        "--tombstone-retention-hours",
        type=float,
        default=TOMBSTONE_RETENTION_MS / 3_600_000,
        help="keep deleted keys' tombstones this long (default 168): a change arriving later "
        "than that could bring a deleted row back",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    configure_logging()
    args = parse_args(argv)
    job = MirrorJob(
        stream=stream_options(args),
        mirror=args.mirror,
        tombstone_retention_ms=int(args.tombstone_retention_hours * 3_600_000),
    )
    return run_job("canal-bridge-mirror", args.driver_memory, job.run)


if __name__ == "__main__":
    sys.exit(main())
