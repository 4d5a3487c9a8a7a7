"""import-canal: each canal key family lands on its destinations.yaml key, or is listed with a
reason; refusals are one line; secrets never reach the output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.canal_import import (
    CanalConfUnreadable,
    CanalImport,
    UnsupportedServerMode,
    import_canal,
    render,
    validation_problems,
)
from bridge.config import parse_config
from tests.canal_conf import canal_conf

SECRET = "Xq9-s3cr3t-Pa55"


def imported(tmp_path: Path, **keys: dict[str, str]) -> CanalImport:
    return import_canal(canal_conf(tmp_path, **keys))


def destination(result: CanalImport) -> dict[str, Any]:
    first: dict[str, Any] = result.config["destinations"][0]
    return first


def unmapped(result: CanalImport) -> dict[str, str]:
    return {note.key: note.text for note in result.findings.unmapped}


def changed(result: CanalImport) -> dict[str, str]:
    return {note.key: note.text for note in result.findings.changed}


# --- refusals ---------------------------------------------------------------------------------


def test_tcp_mode_the_shipped_default_imports_with_a_note(tmp_path: Path) -> None:
    result = import_canal(canal_conf(tmp_path))  # the shipped file says tcp
    assert destination(result)["mq"]["topic"] == "example"
    assert changed(result)["canal.serverMode"].startswith("tcp: canal served its own")
    assert "canal.serverMode" not in changed(
        imported(tmp_path / "k", server={"canal.serverMode": "kafka"})
    )


@pytest.mark.parametrize("mode", ["rocketMQ", "rabbitMQ", "pulsarMQ"])
def test_other_brokers_are_refused(tmp_path: Path, mode: str) -> None:
    conf = canal_conf(tmp_path, {"canal.serverMode": mode})
    with pytest.raises(UnsupportedServerMode, match=f"canal.serverMode = {mode}: ") as caught:
        import_canal(conf)
    assert "\n" not in str(caught.value)


def test_kafka_mode_is_accepted_in_any_case(tmp_path: Path) -> None:
    assert destination(imported(tmp_path, server={"canal.serverMode": "KAFKA"}))


def test_missing_folder_and_files_are_one_line_refusals(tmp_path: Path) -> None:
    with pytest.raises(CanalConfUnreadable, match="not a folder; pass canal's conf/"):
        import_canal(tmp_path / "nothing")
    with pytest.raises(CanalConfUnreadable, match=r"canal.properties: no such file"):
        import_canal(tmp_path)
    conf = canal_conf(tmp_path, {"canal.destinations": "example,orders"})
    with pytest.raises(CanalConfUnreadable, match=r"orders/instance.properties: no such file"):
        import_canal(conf)


def test_auto_scan_imports_every_instance_folder(tmp_path: Path) -> None:
    conf = canal_conf(tmp_path)
    (conf / "orders").mkdir()
    (conf / "orders" / "instance.properties").write_text(
        "canal.instance.master.address=10.0.0.2:3306\ncanal.mq.topic=orders\n"
    )
    (conf / "spring").mkdir()  # canal's own folder of instance XML, never an instance
    (conf / "spring" / "instance.properties").write_text("canal.mq.topic=no\n")
    names = [d["name"] for d in import_canal(conf).config["destinations"]]
    assert names == ["example", "orders"]
    (conf / "canal.properties").open("a").write("\ncanal.auto.scan = false\n")
    assert [d["name"] for d in import_canal(conf).config["destinations"]] == ["example"]


# --- one destination ---------------------------------------------------------------------------


def test_source_and_credentials(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        instance={
            "canal.instance.master.address": "db.internal:3307",
            "canal.instance.dbUsername": "repl",
            "canal.instance.dbPassword": SECRET,
            "canal.instance.mysql.slaveId": "4242",
        },
    )
    source = destination(result)["source"]
    assert source["address"] == "db.internal:3307"
    assert source["username"] == "repl"
    assert str(source["password"]) == "${CANAL_EXAMPLE_PASSWORD}"
    assert source["slave_id"] == 4242
    assert "canal.instance.mysql.slaveId" not in changed(result)
    assert result.findings.env == {"CANAL_EXAMPLE_PASSWORD": "canal.instance.dbPassword of example"}


def test_a_missing_slave_id_is_derived_once_per_destination(tmp_path: Path) -> None:
    conf = canal_conf(tmp_path)
    for name in ("a", "b"):
        (conf / name).mkdir()
        (conf / name / "instance.properties").write_text(
            f"canal.instance.master.address=127.0.0.1:3306\ncanal.mq.topic={name}\n"
        )
    first = import_canal(conf)
    ids = [d["source"]["slave_id"] for d in first.config["destinations"]]
    assert len(set(ids)) == 3
    assert ids == [d["source"]["slave_id"] for d in import_canal(conf).config["destinations"]]
    assert "made one up" in changed(first)["canal.instance.mysql.slaveId"]


def test_druid_encrypted_password_is_flagged(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.instance.enableDruid": "true"})
    assert "druid-encrypted" in changed(result)["canal.instance.enableDruid"]
    assert "enableDruid" not in changed(imported(tmp_path / "off"))


@pytest.mark.parametrize(
    ("mode", "ssl"),
    [
        ("DISABLED", None),
        ("PREFERRED", None),
        ("REQUIRED", {"verify_cert": False, "verify_identity": False}),
        ("VERIFY_CA", {"verify_cert": True, "verify_identity": False}),
        ("VERIFY_IDENTITY", {"verify_cert": True, "verify_identity": True}),
    ],
)
def test_ssl_modes(tmp_path: Path, mode: str, ssl: dict[str, bool] | None) -> None:
    result = imported(tmp_path, instance={"canal.instance.master.sslMode": mode})
    assert destination(result)["source"].get("ssl") == ssl


def test_binlog_file_position_and_time_map_to_start(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        instance={
            "canal.instance.master.journal.name": "mysql-bin.000003",
            "canal.instance.master.position": "4567",
            "canal.instance.master.timestamp": "1700000000000",
            "canal.instance.master.gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5",
        },
    )
    assert destination(result)["start"] == {
        "journal_name": "mysql-bin.000003",
        "position": 4567,
        "timestamp": 1700000000000,
        "gtid": None,  # canal ignores it while gtidon is false
    }
    assert unmapped(result)["canal.instance.master.gtid"] == "canal ignores it: gtidon is false"


def test_gtid_is_taken_with_gtidon(tmp_path: Path) -> None:
    gtid = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"
    result = imported(
        tmp_path,
        instance={"canal.instance.gtidon": "true", "canal.instance.master.gtid": gtid},
    )
    assert destination(result)["start"]["gtid"] == gtid
    assert "canal.instance.master.gtid" not in unmapped(result)
    assert "GTID" in changed(result)["canal.instance.gtidon"]


def test_filters(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        instance={
            "canal.instance.filter.regex": "shop\\\\..*,crm\\\\.users",
            "canal.instance.filter.black.regex": "shop\\\\.tmp_.*",
            "canal.instance.filter.field": "shop.orders:id/total",
            "canal.instance.filter.black.field": "crm.users:password_hash",
        },
    )
    assert destination(result)["filter"] == {
        "regex": r"shop\..*,crm\.users",
        "black_regex": r"shop\.tmp_.*",
        "field": "shop.orders:id/total",
        "black_field": "crm.users:password_hash",
        "skip": [],
    }


def test_dml_filters_become_skipped_change_kinds(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        instance={
            "canal.instance.filter.dml.insert": "false",
            "canal.instance.filter.dml.update": "true",
            "canal.instance.filter.dml.delete": "true",
        },
    )
    assert destination(result)["filter"]["skip"] == ["update", "delete"]
    assert not {k for k in unmapped(result) if k.startswith("canal.instance.filter.dml.")}


def test_mq_routing(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        instance={
            "canal.mq.topic": "fallback",
            "canal.mq.dynamicTopic": "mytest1.user,topic2:mytest2\\\\..*",
            "canal.mq.partitionsNum": "3",
            "canal.mq.partition": "2",
            "canal.mq.partitionHash": "test.table:id^name,.*\\\\..*",
            "canal.mq.dynamicTopicPartitionNum": "test.*:4,mycanal:6",
        },
        server={"canal.mq.database.hash": "false"},
    )
    mq = destination(result)["mq"]
    assert mq["topic"] == "fallback"
    assert mq["dynamic_topic"] == r"mytest1.user,topic2:mytest2\..*"
    assert (mq["partitions"], mq["partition"]) == (3, 2)
    assert mq["partition_hash"] == r"test.table:id^name,.*\..*"
    assert mq["dynamic_topic_partitions"] == "test.*:4,mycanal:6"
    assert mq["database_hash"] is False
    assert (mq["value_mode"], mq["key_change"]) == ("canal", "update")


def test_batch_and_store_sizes(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={
            "canal.mq.canalBatchSize": "200",
            "canal.mq.canalGetTimeout": "250",
            "canal.instance.memory.buffer.size": "4096",
            "canal.instance.memory.buffer.memunit": "2048",
            "canal.instance.memory.batch.mode": "ITEMSIZE",
            "canal.instance.transaction.size": "512",
            "canal.instance.get.ddl.isolation": "true",
        },
    )
    entry = destination(result)
    assert (entry["batch_size"], entry["get_timeout_ms"], entry["transaction_size"]) == (
        200,
        250,
        512,
    )
    assert entry["store"] == {
        "buffer_size": 4096,
        "mem_unit": 2048,
        "mode": "ITEMSIZE",
        "ddl_isolation": True,
    }


def test_no_get_timeout_means_return_at_once(tmp_path: Path) -> None:
    result = imported(tmp_path, server={"canal.mq.canalGetTimeout": "0"})
    assert destination(result)["get_timeout_ms"] is None


def test_instance_file_overrides_canal_properties(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={"canal.instance.memory.buffer.size": "4096"},
        instance={"canal.instance.memory.buffer.size": "1024"},
    )
    assert destination(result)["store"]["buffer_size"] == 1024


def test_server_only_mq_keys_in_an_instance_file_are_listed(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.mq.canalBatchSize": "999"})
    assert destination(result)["batch_size"] == 50
    assert "canal.properties only" in unmapped(result)["canal.mq.canalBatchSize"]


def test_reset_to_latest_maps_to_on_purged(tmp_path: Path) -> None:
    assert destination(imported(tmp_path / "a"))["on_purged"] == "fail"
    result = imported(tmp_path / "b", server={"canal.auto.reset.latest.pos.mode": "true"})
    assert destination(result)["on_purged"] == "latest"


# --- server-wide -------------------------------------------------------------------------------


def test_kafka_producer_settings(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={
            "kafka.bootstrap.servers": "k1:9092,k2:9092",
            "kafka.compression.type": "lz4",
            "kafka.retries": "3",
            "kafka.max.in.flight.requests.per.connection": "5",
            "kafka.send.buffer.bytes": "131072",
            "kafka.no.such.setting": "1",
        },
    )
    kafka = result.config["kafka"]
    assert kafka["bootstrap_servers"] == "k1:9092,k2:9092"
    assert kafka["producer"] == {
        "acks": "all",
        "batch.size": 16384,
        "queue.buffering.max.kbytes": 32768,  # buffer.memory 33554432 bytes
        "compression.type": "lz4",
        "linger.ms": 1,
        "max.in.flight.requests.per.connection": 5,
        "message.max.bytes": 1048576,  # max.request.size
        "retries": 3,
        "socket.send.buffer.bytes": 131072,
    }
    assert "kafka.no.such.setting" in unmapped(result)
    assert "message.max.bytes" in changed(result)["kafka.max.request.size"]


def test_producer_settings_the_idempotent_producer_refuses_are_listed(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={"kafka.acks": "1", "kafka.max.in.flight.requests.per.connection": "10"},
    )
    producer = result.config["kafka"]["producer"]
    for name in ("acks", "retries", "max.in.flight.requests.per.connection"):
        assert name not in producer
    reasons = unmapped(result)
    assert "acks=all" in reasons["kafka.acks"]
    assert "retries=0" in reasons["kafka.retries"]  # the shipped value
    assert "at most 5" in reasons["kafka.max.in.flight.requests.per.connection"]


def test_canals_older_mq_names_are_read(tmp_path: Path) -> None:
    conf = canal_conf(tmp_path)
    text = (conf / "canal.properties").read_text(encoding="latin-1")
    text = text.replace("kafka.bootstrap.servers", "canal.mq.servers")
    (conf / "canal.properties").write_text(text, encoding="latin-1")
    assert import_canal(conf).config["kafka"]["bootstrap_servers"] == "127.0.0.1:9092"


def test_sasl_username_is_taken_and_the_password_never(tmp_path: Path) -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{SECRET}";'
    )
    result = imported(
        tmp_path,
        server={
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas,
            "kafka.ssl.truststore.location": "/etc/kafka/truststore.jks",
            "kafka.ssl.truststore.password": SECRET,
        },
    )
    kafka = result.config["kafka"]
    assert kafka["security_protocol"] == "SASL_SSL"
    assert kafka["sasl"]["mechanism"] == "SCRAM-SHA-512"
    assert kafka["sasl"]["username"] == "alice"
    assert str(kafka["sasl"]["password"]) == "${CANAL_KAFKA_SASL_PASSWORD}"
    assert "PEM" in unmapped(result)["kafka.ssl.truststore.password"]
    text = render(result)
    assert SECRET not in text
    assert "alice" in text  # the negative case: what is not secret does come through


def test_unsupported_sasl_mechanism_is_listed(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={
            "kafka.sasl.mechanism": "GSSAPI",
            "kafka.sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;",
        },
    )
    assert "sasl" not in result.config["kafka"]
    assert "GSSAPI" in unmapped(result)["kafka.sasl.jaas.config"]


def test_file_meta_points_at_canals_own_cursors(tmp_path: Path) -> None:
    result = imported(tmp_path)
    conf = tmp_path / "conf"
    assert result.config["meta"] == {
        "store": "file",
        "dir": str(conf.resolve()),  # ${canal.conf.dir}: the folder imported
        "flush_period_ms": 1000,
    }
    data = imported(tmp_path / "b", server={"canal.file.data.dir": "../data"})
    assert data.config["meta"]["dir"] == str((tmp_path / "b" / "data").resolve())


def test_zookeeper_meta_and_ha(tmp_path: Path) -> None:
    result = imported(
        tmp_path,
        server={
            "canal.zkServers": "zk1:2181,zk2:2181/prod",
            "canal.instance.global.spring.xml": "classpath:spring/default-instance.xml",
            "canal.zookeeper.flush.period": "500",
        },
    )
    assert result.config["zookeeper"] == {"hosts": "zk1:2181,zk2:2181", "root": "/prod/otter/canal"}
    assert result.config["meta"] == {"store": "zookeeper", "flush_period_ms": 500}
    assert "zookeeper" not in imported(tmp_path / "none").config


def test_admin_listens_on_the_metrics_port(tmp_path: Path) -> None:
    result = imported(tmp_path, server={"canal.metrics.pull.port": "19112"})
    assert result.config["admin"] == {"listen": "127.0.0.1:19112"}


# --- what is left over ------------------------------------------------------------------------


def test_unknown_keys_are_listed_as_unknown(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.instance.made.up": "1"})
    note = next(n for n in result.findings.unmapped if n.key == "canal.instance.made.up")
    assert note.origin == "example/instance.properties"
    assert note.text.startswith("unknown to import-canal")


def test_bad_values_are_problems_naming_the_key(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.mq.partitionsNum": "three"})
    assert result.findings.problems == [
        "example/instance.properties: canal.mq.partitionsNum = 'three' is not an integer; "
        "fix it in canal's conf"
    ]
    assert destination(result)["mq"]["partitions"] is None
    assert imported(tmp_path / "good").findings.problems == []


def test_a_bad_secret_value_is_not_shown(tmp_path: Path) -> None:
    result = imported(tmp_path, server={"kafka.buffer.memory": "lots"})
    assert "'lots'" in result.findings.problems[0]  # the negative case: values are shown
    findings = result.findings
    findings.bad_value("canal.properties", "canal.instance.dbPassword", SECRET, "an integer")
    assert SECRET not in findings.problems[-1]
    assert "(hidden)" in findings.problems[-1]


def test_literal_dollar_braces_survive_loading(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.instance.filter.black.regex": "shop\\\\.t${x}"})
    text = render(result)
    assert "$${x}" in text
    loaded = parse_config(yaml.safe_load(text), environ={"CANAL_EXAMPLE_PASSWORD": "p"})
    assert loaded.destinations[0].filter.black_regex == r"shop\.t${x}"


def test_validation_problems_name_destinations_yaml_paths(tmp_path: Path) -> None:
    result = imported(tmp_path, instance={"canal.mq.partition": "5"})
    problems = validation_problems(result, render(result))
    assert problems == ["destinations[0].mq: partition 5 must be < partitions 1"]


@pytest.mark.parametrize(("flag", "expected"), [("true", "flat_message"), ("false", "protobuf")])
def test_canals_flat_message_flag_chooses_the_format(
    tmp_path: Path, flag: str, expected: str
) -> None:
    result = imported(tmp_path, server={"canal.mq.flatMessage": flag})
    assert destination(result)["mq"]["format"] == expected
    assert "canal.mq.flatMessage" not in changed(result)
    assert validation_problems(result, render(result)) == []
