"""The generated settings of canal and Debezium Server: where they read, where they write,
acks=all, and no password in any file."""

from __future__ import annotations

from dataclasses import replace

from bench.compare.settings import (
    DEBEZIUM_RELEASES,
    RunSpec,
    canal_properties,
    debezium_name,
    debezium_properties,
    debezium_topic,
    properties_text,
)

SPEC = RunSpec(
    schema="bench_cmp_a",
    table="orders",
    start=("mariadb-bin.000042", 389),
    start_gtids="0-1-99",
    mysql=("127.0.0.1", 13306),
    user="canal",
    bootstrap="127.0.0.1:19092",
    slave_id=41234,
)


def parse_properties(text: str) -> dict[str, str]:
    """The subset of java.util.Properties' syntax the writer uses: key=value, \\\\ escapes."""
    result = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        result[key] = value.replace("\\\\", "\\")
    return result


def test_canal_reads_the_workload_range_into_its_topic_with_acks_all() -> None:
    props = canal_properties(SPEC, "cmp-canal-1", "/tmp/run")

    assert props["canal.serverMode"] == "kafka"
    assert props["canal.mq.flatMessage"] == "true"
    assert props["kafka.acks"] == "all"
    assert props["canal.mq.topic"] == "cmp-canal-1"
    assert props["kafka.bootstrap.servers"] == "127.0.0.1:19092"
    assert props["canal.instance.master.address"] == "127.0.0.1:13306"
    assert props["canal.instance.master.journal.name"] == "mariadb-bin.000042"
    assert props["canal.instance.master.position"] == "389"
    assert props["canal.instance.filter.regex"] == r"bench_cmp_a\..*"
    assert props["canal.instance.mysql.slaveId"] == "41234"


def test_the_filter_regex_survives_the_properties_file() -> None:
    text = properties_text(canal_properties(SPEC, "t", "/tmp/run"))
    assert parse_properties(text)["canal.instance.filter.regex"] == r"bench_cmp_a\..*"
    assert r"bench_cmp_a\\..*" in text  # written escaped, else Java reads "bench_cmp_a..*"


def test_debezium_uses_the_mariadb_connector_kafka_sink_acks_all_and_plain_json() -> None:
    props = debezium_properties(SPEC, "cmpdbz1", "/srv/compare/runs/x")

    assert props["debezium.sink.type"] == "kafka"
    assert props["debezium.sink.kafka.producer.acks"] == "all"
    assert props["debezium.sink.kafka.producer.bootstrap.servers"] == "127.0.0.1:19092"
    assert props["debezium.source.connector.class"].endswith("MariaDbConnector")
    assert props["debezium.source.snapshot.mode"] == "recovery"
    assert props["debezium.format.value.schemas.enable"] == "false"
    assert props["debezium.source.offset.storage.file.filename"] == (
        "/srv/compare/runs/x/offsets.dat"
    )
    assert props["debezium.source.table.include.list"] == "bench_cmp_a.orders"
    assert debezium_topic("cmpdbz1", SPEC) == "cmpdbz1.bench_cmp_a.orders"


def test_no_password_is_written_to_either_file() -> None:
    for props in (
        canal_properties(SPEC, "t", "/d"),
        debezium_properties(SPEC, "p", "/d"),
    ):
        assert not [key for key in props if "password" in key.lower()]


def test_debezium_reads_mysql_with_its_own_connector_and_tls_off() -> None:
    spec = replace(SPEC, flavor="mysql", mysql=("127.0.0.1", 13307), start_gtids="u:1-9")

    props = debezium_properties(spec, "p", "/d")

    assert props["debezium.source.connector.class"] == (
        "io.debezium.connector.mysql.MySqlConnector"
    )
    assert props["debezium.source.database.ssl.mode"] == "disabled"  # MySQL's name for it
    assert props["debezium.source.database.port"] == "13307"
    assert debezium_properties(SPEC, "p", "/d")["debezium.source.database.ssl.mode"] == "disable"


def test_mariadb_keeps_the_recorded_debezium_and_mysql_gets_one_reading_tagged_gtids() -> None:
    # 3.0.8 is the release of MariaDB's recorded figures; on MySQL it cannot parse a tagged
    # GTID in gtid_executed, which 3.6.1 reads.
    assert DEBEZIUM_RELEASES == {"mariadb": "3.0.8.Final", "mysql": "3.6.1.Final"}
    assert debezium_name("mariadb") == "Debezium Server 3.0.8"
    assert debezium_name("mysql") == "Debezium Server 3.6.1"
