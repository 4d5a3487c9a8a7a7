"""decode's pure functions on small DataFrames built from the bridge's real wire renderings."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from spark_jobs.decode import (
    changes,
    invalid_values,
    parse_messages,
    spark_type,
    typed_columns,
)
from tests.golden.flat_messages import read_golden

KAFKA_SCHEMA = st.StructType(
    [
        st.StructField("key", st.BinaryType()),
        st.StructField("value", st.BinaryType()),
        st.StructField("topic", st.StringType()),
        st.StructField("partition", st.IntegerType()),
        st.StructField("offset", st.LongType()),
        st.StructField("timestamp", st.TimestampType()),
        st.StructField(
            "headers",
            st.ArrayType(
                st.StructType(
                    [
                        st.StructField("key", st.StringType()),
                        st.StructField("value", st.BinaryType()),
                    ]
                )
            ),
        ),
    ]
)


def _message(kind: str, data: list[dict[str, Any]] | None, **extra: Any) -> dict[str, Any]:
    return {
        "data": data,
        "database": "shop",
        "es": 1_700_000_000_000,
        "gtid": "",
        "id": 7,
        "isDdl": False,
        "mysqlType": {"id": "int(11)", "note": "varchar(20)"} if data else None,
        "old": None,
        "pkNames": ["id"] if data else None,
        "sql": "",
        "sqlType": {"id": 4, "note": 12} if data else None,
        "table": "orders",
        "ts": 1_700_000_000_123,
        "type": kind,
        **extra,
    }


def _records(spark: SparkSession, messages: list[dict[str, Any] | bytes]) -> Any:
    rows = []
    for offset, message in enumerate(messages):
        value = message if isinstance(message, bytes) else orjson.dumps(message)
        headers = [
            ("binlog.file", b"mysql-bin.000002"),
            ("binlog.position", str(1000 + offset).encode()),
            ("binlog.server_id", b"1"),
        ]
        rows.append((b"k", value, "t", 0, offset, dt.datetime(2024, 1, 1), headers))
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def test_changes_give_one_row_per_row_with_before_and_after_images(spark: SparkSession) -> None:
    kafka = _records(
        spark,
        [
            _message("INSERT", [{"id": "1", "note": "a"}, {"id": "2", "note": None}]),
            _message(
                "UPDATE",
                [{"id": "1", "note": "b"}, {"id": "3", "note": "c"}],
                old=[{"note": "a"}, {"id": "2"}],
            ),
            _message("DELETE", [{"id": "3", "note": "c"}]),
            _message("ALTER", None, isDdl=True, sql="ALTER TABLE orders ADD x INT"),
            b"not json at all",
        ],
    )
    rows = changes(parse_messages(kafka)).orderBy("kafka_offset", "row_index").collect()
    assert [(r.type, r.row_index, r.before, r.after) for r in rows] == [
        ("INSERT", 0, None, {"id": "1", "note": "a"}),
        ("INSERT", 1, None, {"id": "2", "note": None}),
        ("UPDATE", 0, {"id": "1", "note": "a"}, {"id": "1", "note": "b"}),
        ("UPDATE", 1, {"id": "2", "note": "c"}, {"id": "3", "note": "c"}),
        ("DELETE", 0, {"id": "3", "note": "c"}, None),
    ]
    first = rows[0]
    assert (first.binlog_file, first.binlog_position, first.binlog_server_id) == (
        "mysql-bin.000002",
        1000,
        1,
    )
    assert (first.database, first.table, first.pk_names, first.columns) == (
        "shop",
        "orders",
        ["id"],
        ["id", "note"],
    )
    assert first.mysql_types == {"id": "int(11)", "note": "varchar(20)"}
    with_ddl = changes(parse_messages(kafka), include_ddl=True).where("is_ddl").collect()
    assert [(r.type, r.sql, r.before, r.after) for r in with_ddl] == [
        ("ALTER", "ALTER TABLE orders ADD x INT", None, None)
    ]


def test_messages_without_headers_still_parse(spark: SparkSession) -> None:
    kafka = _records(spark, [_message("INSERT", [{"id": "1", "note": "a"}])]).drop("headers")
    row = changes(parse_messages(kafka)).first()
    assert row is not None
    assert row.binlog_file is None and row.after == {"id": "1", "note": "a"}


@pytest.mark.parametrize(
    ("mysql_type", "expected"),
    [
        ("tinyint(4)", st.ByteType()),
        ("tinyint(3) unsigned", st.ShortType()),
        ("smallint(6)", st.ShortType()),
        ("smallint(5) unsigned", st.IntegerType()),
        ("mediumint(8) unsigned", st.IntegerType()),
        ("int(11)", st.IntegerType()),
        ("int(10) unsigned", st.LongType()),
        ("bigint(20)", st.LongType()),
        ("bigint(20) unsigned", st.DecimalType(20, 0)),
        ("decimal(10,2)", st.DecimalType(10, 2)),
        ("decimal(40,10)", st.StringType()),
        ("float", st.FloatType()),
        ("double", st.DoubleType()),
        ("bit(10)", st.LongType()),
        ("bit(64)", st.DecimalType(20, 0)),
        ("year(4)", st.IntegerType()),
        ("date", st.DateType()),
        ("time(3)", st.StringType()),
        ("datetime(3)", st.TimestampNTZType()),
        ("timestamp(6)", st.TimestampType()),
        ("char(5)", st.StringType()),
        ("longtext", st.StringType()),
        ("json", st.StringType()),
        ("enum('a','b')", st.StringType()),
        ("set('x','y','z')", st.StringType()),
        ("binary(4)", st.BinaryType()),
        ("varbinary(8)", st.BinaryType()),
        ("blob", st.BinaryType()),
        ("geometry", st.BinaryType()),
    ],
)
def test_spark_type_follows_the_declared_mysql_type(mysql_type: str, expected: st.DataType) -> None:
    assert spark_type(mysql_type) == expected


# Values as canal-bridge renders them (taken from a real MariaDB 10.11 binlog).
COLUMNS = [
    ("id", "bigint(20) unsigned"),
    ("ti", "tinyint(4)"),
    ("iu", "int(10) unsigned"),
    ("f", "float"),
    ("d", "double"),
    ("dec1", "decimal(10,2)"),
    ("dec2", "decimal(40,10)"),
    ("bt", "bit(10)"),
    ("y", "year(4)"),
    ("dt", "date"),
    ("tm", "time(3)"),
    ("dtm", "datetime(3)"),
    ("ts", "timestamp(6)"),
    ("vc", "varchar(20)"),
    ("bn", "binary(4)"),
    ("vb", "varbinary(8)"),
    ("en", "enum('a','b')"),
    ("st", "set('x','y','z')"),
    ("js", "longtext"),
]
IMAGE = {
    "id": "18446744073709551615",
    "ti": "-128",
    "iu": "4294967295",
    "f": "1.0E10",
    "d": "2.000001",
    "dec1": "1.50",
    "dec2": "123456789012345678901234567890.0123456789",
    "bt": "641",
    "y": "2024",
    "dt": "2024-02-29",
    "tm": "-838:59:59.123",
    "dtm": "2024-01-02 03:04:05.678",
    "ts": "2024-01-02 03:04:05.123456",
    "vc": "ünï😀",
    "bn": "\x01\x02",
    "vb": "\x00\xff\x80",
    "en": "b",
    "st": "x,z",
    "js": '{"a": [1, 2.5, null]}',
}


def _typed(spark: SparkSession, image: dict[str, str | None], zone: str = "UTC") -> Any:
    frame = spark.createDataFrame([(image,)], "image map<string,string>")
    return frame.select(
        *typed_columns(sf.col("image"), COLUMNS, zone),
        invalid_values(sf.col("image"), COLUMNS, zone).alias("_invalid"),
    )


def test_typed_columns_cast_canal_text_exactly(spark: SparkSession) -> None:
    frame = _typed(spark, IMAGE)
    assert [f.dataType for f in frame.schema.fields[:-1]] == [spark_type(t) for _, t in COLUMNS]
    row = frame.first()
    assert row is not None
    assert row.id == Decimal("18446744073709551615")
    assert (row.ti, row.iu, row.f, row.d) == (-128, 4294967295, 1.0e10, 2.000001)
    assert row.dec1 == Decimal("1.50") and str(row.dec1) == "1.50"
    assert row.dec2 == "123456789012345678901234567890.0123456789"
    assert (row.bt, row.y, row.dt, row.tm) == (641, 2024, dt.date(2024, 2, 29), "-838:59:59.123")
    assert row.dtm == dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    assert (row.vc, row.en, row.st, row.js) == ("ünï😀", "b", "x,z", '{"a": [1, 2.5, null]}')
    assert bytes(row.bn) == b"\x01\x02\x00\x00"  # BINARY(4) padding restored
    assert bytes(row.vb) == b"\x00\xff\x80"
    assert row._invalid is None
    ts = frame.select(sf.date_format("ts", "yyyy-MM-dd HH:mm:ss.SSSSSS").alias("t")).first()
    assert ts is not None and ts.t == "2024-01-02 03:04:05.123456"


def test_timestamp_text_is_read_in_the_bridges_zone(spark: SparkSession) -> None:
    for zone in ("+08:00", "Asia/Shanghai"):
        frame = _typed(spark, IMAGE, zone)
        row = frame.select(sf.unix_micros("ts").alias("us")).first()
        assert row is not None
        expected = dt.datetime(2024, 1, 1, 19, 4, 5, 123456, tzinfo=dt.UTC)
        assert row.us == int(expected.timestamp() * 1_000_000)


def test_zero_dates_and_out_of_range_values_are_null_and_flagged(spark: SparkSession) -> None:
    image = {name: None for name, _ in COLUMNS}
    image |= {
        "id": "1",
        "ti": "300",
        "dt": "0000-00-00",
        "dtm": "0000-00-00 00:00:00.000",
        "ts": "0000-00-00 00:00:00.000000",
        "vc": "",
    }
    row = _typed(spark, image).first()
    assert row is not None
    assert (row.ti, row.dt, row.dtm, row.ts, row.vc) == (None, None, None, None, "")
    assert row._invalid == {
        "ti": "300",
        "dt": "0000-00-00",
        "dtm": "0000-00-00 00:00:00.000",
        "ts": "0000-00-00 00:00:00.000000",
    }


def test_the_golden_records_decode_to_their_rows(spark: SparkSession) -> None:
    """The canonical records every writer is held to (``tests/golden``) are what the Spark
    jobs read: each row comes out with its images, keys, types and binlog coordinates; a
    tombstone (null value) is read without error and gives no row."""
    golden = read_golden()
    kafka = spark.createDataFrame(
        [
            (
                record.key.encode(),
                record.value,
                record.topic,
                record.partition,
                offset,
                dt.datetime(2026, 11, 25),
                [(name, value.encode()) for name, value in record.headers],
            )
            for offset, record in enumerate(golden)
        ],
        KAFKA_SCHEMA,
    )
    rows = changes(parse_messages(kafka)).orderBy("kafka_offset", "row_index").collect()
    expected = []
    for record in golden:
        if record.value is None:  # a tombstone: no change of its own
            continue
        message = orjson.loads(record.value)
        if message["isDdl"]:
            continue
        olds = message["old"] or [None] * len(message["data"])
        for index, (data, old) in enumerate(zip(message["data"], olds, strict=True)):
            kind = message["type"]
            before = {**data, **old} if old is not None else (data if kind == "DELETE" else None)
            after = None if kind == "DELETE" else data
            position = int(dict(record.headers)["binlog.position"])
            expected.append(
                (kind, message["table"], index, before, after, message["pkNames"], position)
            )
    got = [
        (r.type, r.table, r.row_index, r.before, r.after, r.pk_names, r.binlog_position)
        for r in rows
    ]
    assert got == expected and len(got) == 26
    assert any(record.value is None for record in golden)
    first = rows[0]
    assert first.mysql_types["price"] == "decimal(10,2)" and first.gtid.endswith(":23")
    assert first.after["note"] == 'say "hi"\\\n\té😀'
