"""canal 1.1.8's shipped conf/ (Kafka mode) through ``canal-bridge import-canal``: the output
validates, the keys without a place are exactly the expected ones, and no secret is copied."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from bridge.canal_import import import_canal, render, validation_problems
from bridge.cli import app
from bridge.config import load_config
from tests.canal_conf import canal_conf

SECRET = "Xq9-s3cr3t-Pa55"

# Keys of the shipped files (with a value) that have no place in destinations.yaml; the
# reasons are in bridge/canal_import/unmapped.py and kafka.py.
EXPECTED_UNMAPPED = {
    ("canal.properties", key)
    for key in (
        "kafka.kerberos.enable",
        "kafka.kerberos.jaas.file",
        "kafka.kerberos.krb5.file",
        "kafka.retries",
        "canal.port",
        "canal.admin.port",
        "canal.admin.user",
        "canal.zookeeper.flush.period",
        "canal.withoutNetty",
        "canal.instance.memory.rawEntry",
        "canal.instance.detecting.enable",
        "canal.instance.detecting.sql",
        "canal.instance.detecting.interval.time",
        "canal.instance.detecting.retry.threshold",
        "canal.instance.detecting.heartbeatHaEnable",
        "canal.instance.network.receiveBufferSize",
        "canal.instance.network.sendBufferSize",
        "canal.instance.network.soTimeout",
        "canal.instance.filter.druid.ddl",
        "canal.instance.filter.query.dcl",
        "canal.instance.filter.query.dml",
        "canal.instance.filter.query.ddl",
        "canal.instance.filter.table.error",
        "canal.instance.filter.rows",
        "canal.instance.filter.transaction.entry",
        "canal.instance.binlog.format",
        "canal.instance.binlog.image",
        "canal.instance.parser.parallelBufferSize",
        "canal.instance.tsdb.enable",
        "canal.instance.tsdb.dir",
        "canal.instance.tsdb.url",
        "canal.instance.tsdb.dbUsername",
        "canal.instance.tsdb.dbPassword",
        "canal.instance.tsdb.snapshot.interval",
        "canal.instance.tsdb.snapshot.expire",
        "canal.conf.dir",
        "canal.auto.scan.interval",
        "canal.instance.tsdb.spring.xml",
        "canal.instance.global.mode",
        "canal.instance.global.lazy",
        "canal.instance.global.manager.address",
        "canal.mq.accessChannel",
        "canal.mq.send.thread.size",
        "canal.mq.build.thread.size",
        "rocketmq.producer.group",
        "rocketmq.enable.message.trace",
        "rocketmq.namesrv.addr",
        "rocketmq.retry.times.when.send.failed",
        "rocketmq.vip.channel.enabled",
    )
} | {
    ("example/instance.properties", key)
    for key in (
        "canal.instance.multi.stream.on",
        "canal.instance.tsdb.enable",
        "canal.instance.connectionCharset",
    )
}


def test_the_shipped_conf_validates_with_the_expected_keys_left_out(tmp_path: Path) -> None:
    result = import_canal(canal_conf(tmp_path))
    text = render(result)
    assert validation_problems(result, text) == []
    assert result.findings.problems == []
    listed = {(note.origin, note.key) for note in result.findings.unmapped}
    assert listed == EXPECTED_UNMAPPED
    assert all(note.text for note in result.findings.unmapped)
    for note in result.findings.unmapped:  # one line each, in the header
        assert f"#   {note.line()}\n" in text
    # Every key of the shipped files is accounted for: mapped, listed, or left empty.
    assert "canal.properties: canal.ip" in result.findings.empty


def test_validate_accepts_the_written_file(tmp_path: Path) -> None:
    output = tmp_path / "destinations.yaml"
    runner = CliRunner()
    imported = runner.invoke(
        app, ["import-canal", "--conf", str(canal_conf(tmp_path)), "--output", str(output)]
    )
    assert imported.exit_code == 0, imported.output
    loaded = load_config(output, environ={"CANAL_EXAMPLE_PASSWORD": "from-env"})
    example = loaded.destination("example")
    assert example.source.address == "127.0.0.1:3306"
    assert example.source.password is not None
    assert example.source.password.get_secret_value() == "from-env"
    assert example.filter.black_regex == r"mysql\.slave_.*"
    assert (example.mq.topic, example.batch_size, example.store.mode) == ("example", 50, "MEMSIZE")
    validated = runner.invoke(
        app, ["validate", "--config", str(output)], env={"CANAL_EXAMPLE_PASSWORD": "x"}
    )
    assert validated.exit_code == 0, validated.output


def test_no_secret_reaches_output_or_messages(tmp_path: Path) -> None:
    conf = canal_conf(
        tmp_path,
        server={
            "canal.instance.tsdb.dbPassword": SECRET,
            "canal.admin.passwd": SECRET,
            "rabbitmq.password": SECRET,
            "kafka.sasl.jaas.config": f'x required username="u" password="{SECRET}";',
        },
        instance={"canal.instance.dbPassword": SECRET, "canal.instance.mq.bad": SECRET},
    )
    result = CliRunner().invoke(app, ["import-canal", "--conf", str(conf)])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output  # stdout and stderr
    config = yaml.safe_load(result.stdout)
    assert config["destinations"][0]["source"]["password"] == "${CANAL_EXAMPLE_PASSWORD}"
    assert config["kafka"]["sasl"]["password"] == "${CANAL_KAFKA_SASL_PASSWORD}"


def test_refusals_exit_2_with_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    rocket = canal_conf(tmp_path, {"canal.serverMode": "rocketMQ"})
    shipped = runner.invoke(app, ["import-canal", "--conf", str(rocket)])
    assert shipped.exit_code == 2
    assert shipped.stdout == ""
    assert shipped.stderr.count("\n") == 1
    assert "canal.serverMode = rocketMQ" in shipped.stderr
    missing = runner.invoke(app, ["import-canal", "--conf", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert missing.stderr.count("\n") == 1


def test_an_import_that_does_not_validate_exits_1_naming_the_problem(tmp_path: Path) -> None:
    conf = canal_conf(tmp_path, instance={"canal.instance.master.address": "no-port"})
    result = CliRunner().invoke(app, ["import-canal", "--conf", str(conf)])
    assert result.exit_code == 1
    assert "problem: destinations[0].source.address:" in result.stderr
    assert "#   destinations[0].source.address:" in result.stdout
