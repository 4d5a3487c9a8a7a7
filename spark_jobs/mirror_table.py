"""One mirrored source table: a Delta table at ``<mirror>/<database>/<table>``.

Besides the source's columns (typed as in ``decode.spark_type``) every mirror table has:

=====================  ====================  ==================================================
column                 type                  meaning
=====================  ====================  ==================================================
``_cdc_deleted``       boolean               true: a tombstone, the key was deleted (readers
                                             of the current state filter these: ``current``)
``_cdc_order``         struct                where the row's last change is in the change order
                                             (``decode.change_order``): binlog file, position,
                                             event time, rank, Kafka partition, offset, row
``_cdc_gtid``          string                the last change's GTID (when known)
``_cdc_es``            timestamp             the last change's binlog event time
``_cdc_invalid``       map<string,string>    original text of values without a Spark value
                                             (zero dates, ...); null when none
=====================  ====================  ==================================================

A change is applied only when it is newer than the row's ``_cdc_order``, and a delete leaves a
tombstone carrying its order, so a change that arrives late (a replay after a bridge restart,
or an old key's history read after its primary-key UPDATE because partitions advance unevenly
in a rate-limited batch) cannot bring back an older state. Tombstones older than the retention
are purged (``purge_tombstones``); a change older than that could then resurrect a row.

Table properties: ``cdc.source`` (``db.table``), ``cdc.primaryKey`` and ``cdc.mysqlTypes``
(JSON: the key columns; each column's declared type, which decides how its text is cast) and
``cdc.ddlOrder`` (JSON: the change order of the last DDL applied, so replayed DDL and rows
older than it do not change the schema again). Column mapping is on (``name`` mode) so that
``DROP COLUMN`` is a metadata change, and deletion vectors are on so that a MERGE marks the
rows it replaces instead of rewriting every file holding one: updates spread over all keys
touch nearly every file of the table, and without deletion vectors each micro-batch rewrote
the whole table, growing slower as the table grew.

The job is the only writer, so schema and properties are cached here and refreshed only after
this object changes them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from spark_jobs.ddl import Position
from spark_jobs.decode import cast_value, invalid_values, spark_type

META_PREFIX = "_cdc_"
ORDER_TYPE = st.StructType(
    [
        st.StructField("binlog_file", st.StringType()),
        st.StructField("binlog_position", st.LongType()),
        st.StructField("es", st.LongType()),
        st.StructField("rank", st.IntegerType()),
        st.StructField("kafka_partition", st.IntegerType()),
        st.StructField("kafka_offset", st.LongType()),
        st.StructField("row_index", st.IntegerType()),
    ]
)
META_COLUMNS = st.StructType(
    [
        st.StructField("_cdc_deleted", st.BooleanType()),
        st.StructField("_cdc_order", ORDER_TYPE),
        st.StructField("_cdc_gtid", st.StringType()),
        st.StructField("_cdc_es", st.TimestampType()),
        st.StructField("_cdc_invalid", st.MapType(st.StringType(), st.StringType())),
    ]
)
_EMPTY_MAP = "CAST(map() AS map<string,string>)"

Order = tuple[Any, ...]


# The error conditions of "no Delta table at this path" (Spark 4.0, Delta 4.0): reading a path
# that does not exist (PATH_NOT_FOUND) or a folder without a Delta log (DELTA_TABLE_NOT_FOUND),
# SHOW TBLPROPERTIES of either (DELTA_MISSING_DELTA_TABLE), DESCRIBE HISTORY of either
# (DELTA_TABLE_ONLY_OPERATION).
NO_TABLE_CONDITIONS = frozenset(
    {
        "PATH_NOT_FOUND",
        "DELTA_TABLE_NOT_FOUND",
        "DELTA_MISSING_DELTA_TABLE",
        "DELTA_TABLE_ONLY_OPERATION",
    }
)


def is_no_table(exc: AnalysisException) -> bool:
    """Whether ``exc`` says the path holds no Delta table, by its error condition (not its
    message text, which Spark and Delta reword between versions)."""
    return exc.getCondition() in NO_TABLE_CONDITIONS


def table_path(root: str, database: str, table: str) -> str:
    return f"{root.rstrip('/')}/{database}/{table}"


def current(frame: DataFrame) -> DataFrame:
    """The current state of a mirror table read as ``frame``: no tombstones, no _cdc_ columns."""
    return frame.where(~sf.col("_cdc_deleted")).select(
        *[sf.col(quote(c)) for c in frame.columns if not c.startswith(META_PREFIX)]
    )


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass
class TableState:
    columns: list[tuple[str, str]]
    """(name, declared MySQL type) of the source columns, in table order."""
    primary_key: list[str]
    ddl_order: Order | None


class MirrorTable:
    def __init__(self, spark: SparkSession, root: str, database: str, table: str) -> None:
        self.spark = spark
        self.database = database
        self.table = table
        self.path = table_path(root, database, table)
        self.ref = f"delta.{quote(self.path)}"
        self._state: TableState | None = None
        self._loaded = False
        self._rows: int | None = None

    # ---------------------------------------------------------------- state

    @property
    def state(self) -> TableState | None:
        """The table's columns, key and last DDL order; None when the table does not exist."""
        if not self._loaded:
            self._state = self._read_state()
            self._loaded = True
        return self._state

    @property
    def rows(self) -> int:
        """The table's rows, tombstones included (counted again after a change of rows)."""
        if self._rows is None:
            self._rows = self.spark.read.format("delta").load(self.path).count()
        return self._rows

    def _read_state(self) -> TableState | None:
        try:
            rows = self.spark.sql(f"SHOW TBLPROPERTIES {self.ref}").collect()
        except AnalysisException as exc:
            if is_no_table(exc):
                return None
            raise
        props = {r["key"]: r["value"] for r in rows}
        if "cdc.mysqlTypes" not in props:
            return None
        types = json.loads(props["cdc.mysqlTypes"])
        schema = self.spark.read.format("delta").load(self.path).schema
        columns = [
            (f.name, types.get(f.name, "")) for f in schema if not f.name.startswith(META_PREFIX)
        ]
        order = json.loads(props["cdc.ddlOrder"]) if props.get("cdc.ddlOrder") else None
        return TableState(
            columns=columns,
            primary_key=json.loads(props.get("cdc.primaryKey", "[]")),
            ddl_order=tuple(order) if order else None,
        )

    def _set_properties(self) -> None:
        state = self.state
        assert state is not None
        props = {
            "cdc.mysqlTypes": json.dumps(dict(state.columns)),
            "cdc.primaryKey": json.dumps(state.primary_key),
            "cdc.ddlOrder": json.dumps(list(state.ddl_order)) if state.ddl_order else "",
        }
        assignments = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items())
        self.spark.sql(f"ALTER TABLE {self.ref} SET TBLPROPERTIES ({assignments})")

    # ---------------------------------------------------------------- schema changes

    def create(self, columns: Sequence[tuple[str, str]], primary_key: Sequence[str]) -> None:
        fields = [st.StructField(name, spark_type(t)) for name, t in columns]
        definition = ", ".join(
            f"{quote(f.name)} {f.dataType.simpleString()}" for f in [*fields, *META_COLUMNS]
        )
        props = {
            "delta.columnMapping.mode": "name",
            "delta.enableDeletionVectors": "true",
            "cdc.source": f"{self.database}.{self.table}",
            "cdc.primaryKey": json.dumps(list(primary_key)),
            "cdc.mysqlTypes": json.dumps(dict(columns)),
        }
        assignments = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items())
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.ref} ({definition}) USING delta "
            f"TBLPROPERTIES ({assignments})"
        )
        self._state = TableState(list(columns), list(primary_key), None)
        self._loaded = True
        self._rows = 0

    def add_columns(self, columns: Sequence[tuple[str, str]], position: Position = None) -> None:
        """Add ``columns`` at the end, or (one column) where ``position`` says: FIRST ("") or
        after a column (the end when the mirror lacks that column)."""
        state = self.state
        assert state is not None
        place, at = self._place(position)
        definition = ", ".join(
            f"{quote(n)} {spark_type(t).simpleString()}{place}" for n, t in columns
        )
        self.spark.sql(f"ALTER TABLE {self.ref} ADD COLUMNS ({definition})")
        state.columns[at:at] = columns
        self._set_properties()

    def drop_column(self, name: str) -> None:
        state = self.state
        assert state is not None
        self.spark.sql(f"ALTER TABLE {self.ref} DROP COLUMN {quote(name)}")
        state.columns = [(n, t) for n, t in state.columns if n.lower() != name.lower()]
        self._set_properties()

    def rename_column(self, old: str, new: str) -> None:
        """A metadata change (column mapping); the key and ``_cdc_invalid`` follow the name."""
        state = self.state
        column = self.column(old)
        assert state is not None and column is not None
        self.spark.sql(f"ALTER TABLE {self.ref} RENAME COLUMN {quote(column[0])} TO {quote(new)}")
        state.columns = [(new, t) if n == column[0] else (n, t) for n, t in state.columns]
        state.primary_key = [new if k.lower() == old.lower() else k for k in state.primary_key]
        self._set_properties()
        self.spark.sql(
            f"UPDATE {self.ref} SET _cdc_invalid = transform_keys(_cdc_invalid, "
            f"(k, v) -> CASE WHEN k = {sql_string(column[0])} THEN {sql_string(new)} ELSE k END) "
            f"WHERE map_contains_key(_cdc_invalid, {sql_string(column[0])})"
        )

    def retype_column(self, name: str, mysql_type: str, timezone: str) -> None:
        """Declare ``name`` as ``mysql_type``. When its Spark type changes, every row's value
        is converted (from its text where it was a string, or cast) in one overwrite of the
        table, so a crash leaves the old table or the new one."""
        state = self.state
        column = self.column(name)
        assert state is not None and column is not None
        target = spark_type(mysql_type)
        if spark_type(column[1]) != target:
            self._rewrite_column(column, mysql_type, target, timezone)
        state.columns = [(n, mysql_type) if n == column[0] else (n, t) for n, t in state.columns]
        self._set_properties()

    def move_column(self, name: str, position: str) -> None:
        """Put ``name`` first ("") or after another column (left alone when that is absent)."""
        state = self.state
        column = self.column(name)
        assert state is not None and column is not None
        was = state.columns.index(column)
        state.columns.remove(column)
        place, at = self._place(position)
        if not place:
            state.columns.insert(was, column)
            return
        self.spark.sql(f"ALTER TABLE {self.ref} ALTER COLUMN {quote(column[0])}{place}")
        state.columns.insert(at, column)
        self._set_properties()

    def _place(self, position: Position) -> tuple[str, int]:
        """``position`` as Delta's `` FIRST`` / `` AFTER `x``` and the index in
        ``state.columns`` it means; ("", end) for None or a column the mirror lacks."""
        state = self.state
        assert state is not None
        if position == "":
            return " FIRST", 0
        after = self.column(position) if position else None
        if after is None:
            return "", len(state.columns)
        return f" AFTER {quote(after[0])}", state.columns.index(after) + 1

    def _rewrite_column(
        self, column: tuple[str, str], mysql_type: str, target: st.DataType, timezone: str
    ) -> None:
        name = column[0]
        frame = self.spark.read.format("delta").load(self.path)
        value = sf.col(quote(name))
        text = sf.col("_cdc_invalid")[name]
        if isinstance(frame.schema[name].dataType, st.StringType):
            converted = cast_value(value, mysql_type, timezone)
        else:
            converted = value.try_cast(target)
        converted = sf.coalesce(converted, cast_value(text, mysql_type, timezone))
        kept = sf.map_filter(
            sf.coalesce(sf.col("_cdc_invalid"), sf.expr(_EMPTY_MAP)), lambda k, _: k != name
        )
        invalid = sf.when(
            converted.isNull() & text.isNotNull(),
            sf.map_concat(kept, sf.create_map(sf.lit(name), text)),
        ).otherwise(kept)
        rewritten = frame.select(
            *[
                converted.alias(name)
                if c == name
                else sf.when(sf.size(invalid) > 0, invalid).alias(c)
                if c == "_cdc_invalid"
                else sf.col(quote(c))
                for c in frame.columns
            ]
        )
        (
            rewritten.write.format("delta")
            .mode("overwrite")
            .option("overwriteSchema", "true")
            .save(self.path)
        )

    def set_ddl_order(self, order: Order) -> None:
        state = self.state
        assert state is not None
        state.ddl_order = tuple(order)
        self._set_properties()

    def column(self, name: str) -> tuple[str, str] | None:
        state = self.state
        assert state is not None
        return next(((n, t) for n, t in state.columns if n.lower() == name.lower()), None)

    # ---------------------------------------------------------------- data changes

    def fill(self, name: str, text: str | None, timezone: str) -> None:
        """Set column ``name`` of every row to ``text`` cast to its type (an ADD's default)."""
        column = self.column(name)
        assert column is not None
        image = sf.create_map(sf.lit(name), sf.lit(text).cast("string"))
        fill = self.spark.range(1).select(
            cast_value(image[name], column[1], timezone).alias("v"),
            invalid_values(image, [column], timezone).alias("inv"),
        )
        view = self._view(fill)
        try:
            self.spark.sql(
                f"MERGE INTO {self.ref} AS t USING {view} AS s ON true "
                f"WHEN MATCHED THEN UPDATE SET {quote(name)} = s.v, _cdc_invalid = "
                f"CASE WHEN s.inv IS NULL THEN t._cdc_invalid "
                f"ELSE map_concat(map_filter(coalesce(t._cdc_invalid, {_EMPTY_MAP}), "
                f"(k, v) -> k != {sql_string(name)}), s.inv) END"
            )
        finally:
            self.spark.catalog.dropTempView(view)

    def truncate(self, order: Order, es_ms: int | None) -> None:
        """Every row becomes a tombstone at ``order`` (a TRUNCATE's place in the stream)."""
        self.spark.sql(
            f"UPDATE {self.ref} SET _cdc_deleted = true, _cdc_order = {order_sql(order)}, "
            f"_cdc_es = timestamp_millis({es_ms if es_ms is not None else 'NULL'})"
        )

    def purge_tombstones(self, older_than_es_ms: int) -> None:
        self._rows = None
        self.spark.sql(
            f"DELETE FROM {self.ref} WHERE _cdc_deleted "
            f"AND _cdc_es < timestamp_millis({int(older_than_es_ms)})"
        )

    def merge(self, latest: DataFrame) -> None:
        """Apply one action per key: ``latest`` has the typed columns, ``_cdc_cols`` (the
        columns the image carried), ``_cdc_op`` ('U' upsert / 'D' delete) and META_COLUMNS
        (but ``_cdc_deleted``).

        Only actions newer than the row's ``_cdc_order`` apply. An update sets the columns its
        image carries (an image from before an ADD COLUMN leaves the added column alone); a
        delete turns the row into a tombstone; a key never seen is inserted either way (a
        delete inserts a tombstone).
        """
        state = self.state
        assert state is not None
        names = [n for n, _ in state.columns]
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in state.primary_key)
        newer = "s._cdc_order > t._cdc_order"
        updates = [
            f"{quote(n)} = CASE WHEN array_contains(s._cdc_cols, {sql_string(n)}) "
            f"THEN s.{quote(n)} WHEN t._cdc_deleted THEN NULL ELSE t.{quote(n)} END"
            for n in names
        ]
        invalid = (
            f"map_concat(map_filter(coalesce(t._cdc_invalid, {_EMPTY_MAP}), "
            "(k, v) -> NOT array_contains(s._cdc_cols, k)), "
            f"coalesce(s._cdc_invalid, {_EMPTY_MAP}))"
        )
        meta = ["_cdc_order", "_cdc_gtid", "_cdc_es"]
        stamp = [f"{m} = s.{m}" for m in meta]
        updates += [*stamp, "_cdc_deleted = false"]
        # Most rows have no invalid values: spare them the lambda (evaluated without codegen).
        updates.append(
            "_cdc_invalid = CASE WHEN t._cdc_invalid IS NULL THEN s._cdc_invalid "
            f"WHEN size({invalid}) > 0 THEN {invalid} END"
        )
        inserted = [*names, *meta, "_cdc_invalid"]
        self._rows = None
        view = self._view(latest)
        try:
            self.spark.sql(
                f"MERGE INTO {self.ref} AS t USING {view} AS s ON {on} "
                f"WHEN MATCHED AND {newer} AND s._cdc_op = 'D' THEN UPDATE SET "
                f"{', '.join(stamp)}, _cdc_deleted = true "
                f"WHEN MATCHED AND {newer} THEN UPDATE SET {', '.join(updates)} "
                "WHEN NOT MATCHED THEN INSERT "
                f"({', '.join(quote(c) for c in inserted)}, _cdc_deleted) "
                f"VALUES ({', '.join('s.' + quote(c) for c in inserted)}, s._cdc_op = 'D')"
            )
        finally:
            self.spark.catalog.dropTempView(view)

    def _view(self, frame: DataFrame) -> str:
        name = f"cdc_src_{uuid.uuid4().hex}"
        frame.createOrReplaceTempView(name)
        return name


def order_sql(order: Order) -> str:
    """A DDL's order ``(file, position, es, partition, offset)`` as an ORDER_TYPE literal."""
    file, position, es, partition, offset = order
    return (
        f"named_struct('binlog_file', {sql_string(file)}, "
        f"'binlog_position', CAST({int(position)} AS BIGINT), 'es', CAST({int(es)} AS BIGINT), "
        f"'rank', 1, 'kafka_partition', {int(partition)}, "
        f"'kafka_offset', CAST({int(offset)} AS BIGINT), 'row_index', 0)"
    )


def typed_frame(actions: DataFrame, columns: Sequence[tuple[str, str]], timezone: str) -> DataFrame:
    """``actions`` (``image`` map, ``_cdc_op``, ``_order`` and the message columns) with the
    image typed as ``columns`` plus the META_COLUMNS the merge writes."""
    image = sf.col("image")
    typed: list[Column] = [cast_value(image[n], t, timezone).alias(n) for n, t in columns]
    return actions.select(
        *typed,
        sf.map_keys(image).alias("_cdc_cols"),
        sf.col("_cdc_op"),
        sf.col("_order").cast(ORDER_TYPE).alias("_cdc_order"),
        sf.coalesce(sf.col("binlog_gtid"), sf.col("gtid")).alias("_cdc_gtid"),
        sf.timestamp_millis(sf.col("es")).alias("_cdc_es"),
        invalid_values(image, columns, timezone).alias("_cdc_invalid"),
    )
