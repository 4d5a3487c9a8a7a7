"""canal FlatMessages from Kafka, decoded for Spark: one row per change, values typed per column.

Three pure steps, each a DataFrame -> DataFrame (or Column) function testable on small frames:

1. ``parse_messages``: Kafka records -> one row per FlatMessage, parsed with the explicit
   ``FLAT_MESSAGE_SCHEMA``, plus the Kafka coordinates and canal-bridge's binlog headers.
   A value that is not a FlatMessage parses to a row whose ``type`` is null (kept so a job
   can count it; ``changes`` drops it).
2. ``changes``: one row per changed row with ``before``/``after`` images as
   ``map<string,string>`` (canal's text, untouched): INSERT has only ``after``, DELETE only
   ``before``, UPDATE both (``before`` is ``data`` with ``old`` laid over it). DDL messages
   give one row each with both images null (``include_ddl``).
3. ``typed_columns``: the string values of an image cast to Spark types chosen from the
   declared ``mysqlType`` (``spark_type``), plus ``invalid_values``: the raw text of every
   non-null value that has no Spark value (zero dates, out-of-range numbers).

Type mapping (``spark_type``; ``sqlType`` is not used because canal varies it per *value*,
e.g. BIGINT UNSIGNED >= 2**63 says DECIMAL, while ``mysqlType`` is the declared column type):

=====================================  ===============================  =======================
MySQL declared type                    Spark type                       from canal's text
=====================================  ===============================  =======================
TINYINT / UNSIGNED                     ByteType / ShortType             "-128", "255"
SMALLINT / UNSIGNED                    ShortType / IntegerType
MEDIUMINT (either)                     IntegerType
INT / UNSIGNED                         IntegerType / LongType
BIGINT / UNSIGNED                      LongType / DecimalType(20,0)
DECIMAL(p,s), NUMERIC                  DecimalType(p,s) exact;          "1.50"
                                       StringType when p > 38
FLOAT / DOUBLE, REAL                   FloatType / DoubleType           "1.0E10" parses
BIT(n)                                 LongType; DecimalType(20,0)      unsigned decimal
                                       for BIT(64)
YEAR                                   IntegerType                      "0000" -> 0
DATE                                   DateType                         zero dates -> null *
DATETIME(fsp)                          TimestampNTZType (wall clock)    zero -> null *
TIMESTAMP(fsp)                         TimestampType (the text read     zero -> null *
                                       in ``timestamp_zone``)
TIME(fsp)                              StringType ("-838:59:59.000")    Spark 4.0 has no TIME
CHAR, VARCHAR, TEXT family             StringType
ENUM, SET                              StringType (labels, "x,z")
JSON (MySQL) / LONGTEXT (MariaDB)      StringType (the JSON text)
BINARY(n)                              BinaryType, right-padded with    ISO-8859-1 bytes
                                       0x00 to n (the binlog strips it)
VARBINARY, BLOB family, GEOMETRY       BinaryType                       ISO-8859-1 bytes
anything else                          StringType
=====================================  ===============================  =======================

\\* Zero and partial-zero dates ("0000-00-00", "2020-00-00 ...") have no Spark value: the typed
column is null and ``invalid_values`` keeps the original text under the column name, so a
consumer (and ``reconcile``) can tell them from a real NULL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

HEADER_FILE = "binlog.file"
HEADER_POSITION = "binlog.position"
HEADER_SERVER_ID = "binlog.server_id"
HEADER_GTID = "binlog.gtid"
# On a row a snapshot read rather than the binlog: ``schema.table;chunk`` (docs/snapshots.md).
HEADER_SNAPSHOT = "canal-bridge-snapshot"

ROW_TYPES = ("INSERT", "UPDATE", "DELETE")

_IMAGE = st.MapType(st.StringType(), st.StringType(), valueContainsNull=True)
_ENTRIES = st.ArrayType(
    st.StructType(
        [st.StructField("key", st.StringType()), st.StructField("value", st.StringType())]
    )
)

FLAT_MESSAGE_SCHEMA = st.StructType(
    [
        st.StructField("id", st.LongType()),
        st.StructField("database", st.StringType()),
        st.StructField("table", st.StringType()),
        st.StructField("pkNames", st.ArrayType(st.StringType())),
        st.StructField("isDdl", st.BooleanType()),
        st.StructField("type", st.StringType()),
        st.StructField("es", st.LongType()),
        st.StructField("ts", st.LongType()),
        st.StructField("sql", st.StringType()),
        st.StructField("gtid", st.StringType()),
        st.StructField("sqlType", st.MapType(st.StringType(), st.IntegerType())),
        st.StructField("mysqlType", st.MapType(st.StringType(), st.StringType())),
        st.StructField("data", st.ArrayType(_IMAGE)),
        st.StructField("old", st.ArrayType(_IMAGE)),
    ]
)

# The order of changes: binlog coordinates first (they order changes across Kafka partitions,
# e.g. a primary-key UPDATE that leaves its old key's partition), then the event time and the
# Kafka coordinates (without the headers) and the row's place in its message.
ORDER_COLUMNS = ("binlog_file", "binlog_position", "es", "kafka_partition", "kafka_offset")


# --------------------------------------------------------------------------------------------
# Reading Kafka


# The isolation level the jobs read with unless told otherwise (a Kafka consumer's own default
# is read_uncommitted, which also returns the records of aborted transactions).
READ_COMMITTED = "read_committed"


def read_kafka(
    spark: SparkSession,
    bootstrap_servers: str,
    *,
    topics: str | None = None,
    topic_pattern: str | None = None,
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """A streaming DataFrame of the topics' records, headers included.

    ``topics`` is a comma-separated list; ``topic_pattern`` a Java regex (exactly one of them).
    ``options`` are passed through (``kafka.security.protocol``, ``kafka.sasl.jaas.config``, ...).

    Records are read committed (``kafka.isolation.level=read_committed``, set before
    ``options``, which may override it): a bridge in exactly-once delivery writes each batch in
    a Kafka transaction, and a batch it aborted (a failed send, a fenced process) must not
    reach the lake. Topics written without transactions read the same either way.
    """
    if (topics is None) == (topic_pattern is None):
        raise ValueError("give exactly one of topics and topic_pattern")
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("startingOffsets", starting_offsets)
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "true")
        .option("kafka.isolation.level", READ_COMMITTED)
    )
    reader = (
        reader.option("subscribe", topics)
        if topics
        else reader.option("subscribePattern", topic_pattern)
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    return reader.load()


def _header(name: str) -> Column:
    """The value of the first header ``name`` as a string (null when absent or without headers).

    Found by its place in the array of keys rather than by a lambda over the headers: Spark
    evaluates lambdas (``filter(headers, h -> ...)``) row by row without code generation, which
    made reading five headers cost more than parsing the whole FlatMessage."""
    place = sf.array_position(sf.col("headers.key"), name).cast("int")
    return sf.when(place > 0, sf.element_at(sf.col("headers.value"), place)).cast("string")


# --------------------------------------------------------------------------------------------
# Step 1: messages


def parse_messages(kafka: DataFrame) -> DataFrame:
    """One row per Kafka record: Kafka and binlog coordinates, then the FlatMessage's fields.

    Works on a batch or streaming frame with Kafka's columns (``headers`` may be missing).
    """
    has_headers = "headers" in kafka.columns
    message = sf.from_json(sf.col("value").cast("string"), FLAT_MESSAGE_SCHEMA)

    def header(name: str) -> Column:
        return _header(name) if has_headers else sf.lit(None).cast("string")

    return (
        kafka.select(
            sf.col("topic"),
            sf.col("partition").alias("kafka_partition"),
            sf.col("offset").alias("kafka_offset"),
            sf.col("timestamp").alias("kafka_timestamp"),
            sf.col("key").cast("string").alias("kafka_key"),
            header(HEADER_FILE).alias("binlog_file"),
            header(HEADER_POSITION).try_cast("bigint").alias("binlog_position"),
            header(HEADER_SERVER_ID).try_cast("bigint").alias("binlog_server_id"),
            header(HEADER_GTID).alias("binlog_gtid"),
            header(HEADER_SNAPSHOT).alias("snapshot_chunk"),
            message.alias("m"),
        )
        .select(
            "*",
            sf.col("m.id").alias("batch_id"),
            sf.col("m.database").alias("database"),
            sf.col("m.table").alias("table"),
            sf.col("m.type").alias("type"),
            sf.coalesce(sf.col("m.isDdl"), sf.lit(False)).alias("is_ddl"),
            sf.col("m.es").alias("es"),
            sf.col("m.ts").alias("ts"),
            sf.col("m.sql").alias("sql"),
            sf.col("m.gtid").alias("gtid"),
            sf.col("m.pkNames").alias("pk_names"),
            sf.col("m.sqlType").alias("sql_types"),
            sf.col("m.mysqlType").alias("mysql_types"),
            sf.col("m.data").alias("data"),
            sf.col("m.old").alias("old"),
        )
        .drop("m")
    )


# --------------------------------------------------------------------------------------------
# Step 2: changes


def changes(messages: DataFrame, include_ddl: bool = False) -> DataFrame:
    """One row per changed row (and per DDL when ``include_ddl``), in the shape of
    ``CHANGE_COLUMNS``; records that are not FlatMessages are dropped."""
    rows = (
        messages.where(sf.col("type").isin(*ROW_TYPES) & ~sf.col("is_ddl"))
        .select("*", sf.posexplode("data").alias("row_index", "row"))
        .withColumn("old_row", sf.expr("try_element_at(old, row_index + 1)"))
    )
    before_update = sf.map_concat(
        sf.map_filter("row", lambda k, _v: ~sf.map_contains_key(sf.col("old_row"), k)),
        sf.col("old_row"),
    )
    image_kind = sf.col("type")
    rows = rows.select(
        "*",
        sf.when(image_kind == "INSERT", sf.lit(None).cast(_IMAGE))
        .when(image_kind == "UPDATE", sf.coalesce(before_update, sf.col("row")))
        .otherwise(sf.col("row"))
        .alias("before"),
        sf.when(image_kind == "DELETE", sf.lit(None).cast(_IMAGE))
        .otherwise(sf.col("row"))
        .alias("after"),
        sf.map_keys("row").alias("columns"),
    )
    result = rows.select(*CHANGE_COLUMNS)
    if include_ddl:
        ddl = messages.where(sf.col("is_ddl")).select(
            "*",
            sf.lit(0).alias("row_index"),
            sf.lit(None).cast(_IMAGE).alias("before"),
            sf.lit(None).cast(_IMAGE).alias("after"),
            sf.lit(None).cast("array<string>").alias("columns"),
        )
        result = result.unionByName(ddl.select(*CHANGE_COLUMNS))
    return result


CHANGE_COLUMNS = (
    "topic",
    "kafka_partition",
    "kafka_offset",
    "kafka_timestamp",
    "kafka_key",
    "binlog_file",
    "binlog_position",
    "binlog_server_id",
    "binlog_gtid",
    "snapshot_chunk",
    "batch_id",
    "database",
    "table",
    "type",
    "is_ddl",
    "es",
    "ts",
    "sql",
    "gtid",
    "pk_names",
    "sql_types",
    "mysql_types",
    "row_index",
    "columns",
    "before",
    "after",
)


def change_order(*extra: Column) -> Column:
    """A struct that sorts changes in binlog order (see ``ORDER_COLUMNS``); ``extra`` fields
    break ties after the Kafka coordinates."""
    return sf.struct(
        sf.coalesce(sf.col("binlog_file"), sf.lit("")).alias("binlog_file"),
        sf.coalesce(sf.col("binlog_position"), sf.lit(-1)).alias("binlog_position"),
        sf.coalesce(sf.col("es"), sf.lit(-1)).alias("es"),
        *extra,
        sf.col("kafka_partition"),
        sf.col("kafka_offset"),
        sf.col("row_index"),
    )


# --------------------------------------------------------------------------------------------
# Step 3: types


@dataclass(frozen=True, slots=True)
class DeclaredType:
    """A MySQL column type as canal's ``mysqlType`` writes it: ``decimal(10,2) unsigned``."""

    base: str
    args: tuple[str, ...]
    unsigned: bool

    @classmethod
    def parse(cls, text: str) -> DeclaredType:
        match = re.match(r"\s*([a-zA-Z_]+(?:\s+precision)?)\s*(?:\((.*)\))?(.*)$", text or "", re.S)
        if not match:
            return cls(base=(text or "").strip().lower(), args=(), unsigned=False)
        base, args, rest = match.groups()
        arg_list = tuple(a.strip() for a in args.split(",")) if args else ()
        return cls(base=base.lower(), args=arg_list, unsigned="unsigned" in rest.lower())

    def int_arg(self, index: int, default: int) -> int:
        try:
            return int(self.args[index])
        except (IndexError, ValueError):
            return default


def _integer(signed: st.DataType, unsigned: st.DataType) -> Callable[[DeclaredType], st.DataType]:
    return lambda t: unsigned if t.unsigned else signed


def _decimal(t: DeclaredType) -> st.DataType:
    precision, scale = t.int_arg(0, 10), t.int_arg(1, 0)
    if precision > SPARK_MAX_PRECISION:
        return st.StringType()
    return st.DecimalType(precision, scale)


def _bit(t: DeclaredType) -> st.DataType:
    return st.DecimalType(20, 0) if t.int_arg(0, 1) >= 64 else st.LongType()


SPARK_MAX_PRECISION = 38

_BINARY = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
_GEOMETRY = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
)

SPARK_TYPES: dict[str, Callable[[DeclaredType], st.DataType]] = {
    "tinyint": _integer(st.ByteType(), st.ShortType()),
    "bool": lambda _t: st.ByteType(),
    "boolean": lambda _t: st.ByteType(),
    "smallint": _integer(st.ShortType(), st.IntegerType()),
    "mediumint": _integer(st.IntegerType(), st.IntegerType()),
    "int": _integer(st.IntegerType(), st.LongType()),
    "integer": _integer(st.IntegerType(), st.LongType()),
    "bigint": _integer(st.LongType(), st.DecimalType(20, 0)),
    "decimal": _decimal,
    "numeric": _decimal,
    "dec": _decimal,
    "fixed": _decimal,
    "float": lambda _t: st.FloatType(),
    "double": lambda _t: st.DoubleType(),
    "double precision": lambda _t: st.DoubleType(),
    "real": lambda _t: st.DoubleType(),
    "bit": _bit,
    "year": lambda _t: st.IntegerType(),
    "date": lambda _t: st.DateType(),
    "datetime": lambda _t: st.TimestampNTZType(),
    "timestamp": lambda _t: st.TimestampType(),
    **{name: (lambda _t: st.BinaryType()) for name in _BINARY + _GEOMETRY},
}
"""Declared base type -> Spark type; anything not listed (text, enum, set, json, time) is a
string."""


def spark_type(mysql_type: str) -> st.DataType:
    """The Spark type of a column declared as ``mysql_type`` (canal's ``mysqlType`` text)."""
    declared = DeclaredType.parse(mysql_type)
    factory = SPARK_TYPES.get(declared.base)
    return factory(declared) if factory else st.StringType()


def _zone_suffix(zone: str) -> str:
    """What to append to a 'yyyy-MM-dd HH:mm:ss' text so Spark reads it in ``zone``."""
    if zone.upper() in ("UTC", "Z", "GMT"):
        return "Z"
    if re.fullmatch(r"[+-]\d{2}:\d{2}", zone):
        return zone
    return f" {zone}"


def cast_value(value: Column, mysql_type: str, timestamp_zone: str = "UTC") -> Column:
    """``value`` (canal's text, a string column) as the Spark type of ``mysql_type``; null
    where the text has no value of that type (see ``invalid_values``)."""
    declared = DeclaredType.parse(mysql_type)
    target = spark_type(mysql_type)
    if isinstance(target, st.BinaryType):
        data = sf.encode(value, "ISO-8859-1")
        if declared.base == "binary" and declared.args:
            width = declared.int_arg(0, 1)
            data = sf.when(
                sf.length(data) < width, sf.rpad(data, width, sf.lit(b"\x00"))
            ).otherwise(data)
        return data
    if isinstance(target, st.TimestampType):
        return sf.concat(value, sf.lit(_zone_suffix(timestamp_zone))).try_cast(target)
    if isinstance(target, st.StringType):
        return value
    return value.try_cast(target)


def typed_columns(
    image: Column, columns: Iterable[tuple[str, str]], timestamp_zone: str = "UTC"
) -> list[Column]:
    """One typed column per ``(name, mysqlType)``, named ``name``, from the ``image`` map."""
    return [
        cast_value(image[name], mysql_type, timestamp_zone).alias(name)
        for name, mysql_type in columns
    ]


def invalid_values(
    image: Column, columns: Iterable[tuple[str, str]], timestamp_zone: str = "UTC"
) -> Column:
    """``map<string,string>`` of column -> original text for non-null values without a Spark
    value (zero dates, numbers out of the column's range); null when there are none."""
    # One single-entry or empty array per column, concatenated: no lambda (``filter``), which
    # Spark would evaluate row by row without code generation.
    none = sf.array().cast(_ENTRIES)
    entries = [
        sf.when(
            image[name].isNotNull() & cast_value(image[name], mysql_type, timestamp_zone).isNull(),
            sf.array(sf.struct(sf.lit(name).alias("key"), image[name].alias("value"))),
        ).otherwise(none)
        for name, mysql_type in columns
        if not isinstance(spark_type(mysql_type), st.StringType | st.BinaryType)
    ]
    if not entries:
        return sf.lit(None).cast(_IMAGE)
    kept = sf.concat(*entries)
    return sf.when(sf.size(kept) > 0, sf.map_from_entries(kept))


def schema_of(columns: Sequence[tuple[str, str]]) -> st.StructType:
    """The Spark schema of ``(name, mysqlType)`` columns."""
    return st.StructType([st.StructField(name, spark_type(t)) for name, t in columns])
