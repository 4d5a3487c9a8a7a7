"""``canal-bridge check`` against real sources and Kafka: each misconfiguration is flagged."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pymysql
import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from bridge.check import CheckResult, check_source
from bridge.check import source as check_source_module
from bridge.config import DestinationConfig, parse_config
from bridge.parse.exceptions import SourceMisconfigured
from bridge.parse.source import AccountAuth, preflight, read_variables
from tests.conftest import MysqlEndpoint
from tests.integration.mariadb_server import ThrowawayServer, throwaway_mariadb

THROWAWAY_SERVER_ID = 7


def _destination(
    address: str, user: str, password: str, slave_id: int = 4321, **mq: Any
) -> dict[str, Any]:
    return {
        "name": "checked",
        "source": {
            "address": address,
            "username": user,
            "password": password,
            "slave_id": slave_id,
            "connect_timeout_s": 5,
        },
        "mq": {"topic": "ops-check-unused", **mq},
    }


def _destination_config(data: dict[str, Any]) -> DestinationConfig:
    config = parse_config({"kafka": {"bootstrap_servers": "127.0.0.1:1"}, "destinations": [data]})
    return config.destinations[0]


def _outcomes(results: list[CheckResult]) -> dict[str, tuple[str, str]]:
    return {r.check: (r.outcome, r.detail) for r in results}


def _root(server: ThrowawayServer) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(unix_socket=server.socket, user="root", autocommit=True)


@pytest.mark.services  # a throwaway mariadbd
def test_binlog_off_is_flagged() -> None:
    with throwaway_mariadb() as server:
        data = _destination(server.address, server.user, server.password)
        results = _outcomes(check_source(_destination_config(data)))
    outcome, detail = results["binary log"]
    assert outcome == "FAIL"
    assert detail == (
        f"binary logging is off on {server.address}: start the server with log_bin and "
        "binlog_format=ROW"
    )
    assert results["connection"][0] == "PASS"
    assert results["privileges"][0] == "PASS"


@pytest.fixture(scope="module")
def binlog_server() -> Iterator[ThrowawayServer]:
    with throwaway_mariadb(
        "--log-bin=mysql-bin", f"--server-id={THROWAWAY_SERVER_ID}", "--binlog-format=ROW"
    ) as server:
        yield server


def test_statement_format_minimal_image_and_server_id_are_flagged(
    binlog_server: ThrowawayServer,
) -> None:
    root = _root(binlog_server)
    try:
        with root.cursor() as cur:
            cur.execute("SET GLOBAL binlog_format = 'STATEMENT'")
            cur.execute("SET GLOBAL binlog_row_image = 'MINIMAL'")
            cur.execute("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
        data = _destination(
            binlog_server.address,
            binlog_server.user,
            binlog_server.password,
            slave_id=THROWAWAY_SERVER_ID,
        )
        destination = _destination_config(data)
        results = _outcomes(check_source(destination))
        # preflight, which a run uses, refuses the same source on the first of these problems.
        with pytest.raises(SourceMisconfigured) as refused:
            preflight(destination.source)
    finally:
        with root.cursor() as cur:
            cur.execute("SET GLOBAL binlog_format = 'ROW'")
            cur.execute("SET GLOBAL binlog_row_image = 'FULL'")
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        root.close()
    assert results["binlog format"] == ("FAIL", str(refused.value))
    assert "set binlog_format=ROW" in results["binlog format"][1]
    assert results["row image"][0] == "FAIL"
    assert "binlog_row_image is MINIMAL" in results["row image"][1]
    assert "set binlog_row_image=FULL" in results["row image"][1]
    assert results["server id"][0] == "FAIL"
    assert f"slave_id {THROWAWAY_SERVER_ID} equals the server_id" in results["server id"][1]
    # Not a risk to data: the schema history names the columns; only the cheaper path.
    assert results["row metadata"][0] == "PASS"
    assert "schema history" in results["row metadata"][1]
    # A fresh server keeps binlogs forever unless told otherwise: worth a warning.
    assert results["binlog retention"][0] == "WARN"
    assert results["privileges"][0] == "PASS"


def test_missing_privilege_and_short_retention_are_flagged(
    binlog_server: ThrowawayServer,
) -> None:
    root = _root(binlog_server)
    try:
        with root.cursor() as cur:
            cur.execute("CREATE USER 'weak'@'%' IDENTIFIED BY 'weak-pw'")
            cur.execute("GRANT SELECT, REPLICATION CLIENT ON *.* TO 'weak'@'%'")
            cur.execute("SET GLOBAL binlog_expire_logs_seconds = 3600")
        data = _destination(binlog_server.address, "weak", "weak-pw")
        results = _outcomes(check_source(_destination_config(data)))
    finally:
        with root.cursor() as cur:
            cur.execute("DROP USER IF EXISTS 'weak'@'%'")
            cur.execute("SET GLOBAL binlog_expire_logs_seconds = 0")
        root.close()
    outcome, detail = results["privileges"]
    assert outcome == "FAIL"
    assert "lacks REPLICATION SLAVE" in detail
    assert "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'weak'" in detail
    assert results["binlog retention"][0] == "WARN"
    assert "expire after 1.0 h" in results["binlog retention"][1]
    for check in ("binary log", "binlog format", "row image", "server id", "row metadata"):
        assert results[check][0] == "PASS", (check, results[check])


def _create_topic(bootstrap: str, topic: str, partitions: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)


def _run_check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "check", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.both_servers
def test_cli_table_flags_wrong_partition_count_missing_topic_and_size_limit(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    good, skewed, small = f"ops-good-{suffix}", f"ops-skewed-{suffix}", f"ops-small-{suffix}"
    _create_topic(kafka_bootstrap, good, 3)
    _create_topic(kafka_bootstrap, skewed, 2)
    _create_topic(kafka_bootstrap, small, 1, **{"max.message.bytes": "50000"})
    missing = f"ops-missing-{suffix}"
    source = (mysql.address, mysql.user, mysql.password)
    config = {
        "kafka": {"bootstrap_servers": kafka_bootstrap},
        "admin": {"listen": None},
        "destinations": [
            {
                **_destination(*source, slave_id=50001, topic=good, partitions=3),
                "name": "fine",
            },
            {
                **_destination(
                    *source,
                    slave_id=50002,
                    topic=skewed,
                    partitions=3,
                    dynamic_topic=f"{missing}:shop\\..*",
                    ddl=f"topic:{small}",
                ),
                "name": "broken",
            },
        ],
    }
    path = tmp_path / "destinations.yaml"
    path.write_text(yaml.safe_dump(config))
    run = _run_check(path)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["SCOPE", "CHECK", "RESULT", "DETAIL"]

    def row(scope: str, check: str) -> str:
        found = [line for line in lines if line.split()[:1] == [scope] and f" {check} " in line]
        assert len(found) == 1, (scope, check, run.stdout)
        return found[0]

    assert " PASS " in row("fine", f"topic {good}")
    assert " PASS " in row("fine", f"size {good}")
    assert " PASS " in row("fine", "binlog format")
    assert " PASS " in row("kafka", "connection")
    skew = row("broken", f"topic {skewed}")
    assert " FAIL " in skew
    assert "has 2 partitions but the configuration routes by 3" in skew
    assert "set it to 2" in skew
    absent = row("broken", f"topic {missing}")
    assert " FAIL " in absent and "does not exist: create it" in absent
    size = row("broken", f"size {small}")
    assert " FAIL " in size and "accepts records up to 50000 bytes" in size
    assert lines[-1].startswith(f"{len(lines) - 3} checks: 3 failed")

    # The same file without the broken destination passes: exit code 0.
    config["destinations"] = config["destinations"][:1]
    path.write_text(yaml.safe_dump(config))
    run = _run_check(path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " FAIL " not in run.stdout


@pytest.mark.both_servers
def test_unreachable_kafka_fails_with_the_fix(tmp_path: Path, mysql: MysqlEndpoint) -> None:
    config = {
        "kafka": {"bootstrap_servers": "127.0.0.1:1"},
        "destinations": [_destination(mysql.address, mysql.user, mysql.password, 50003)],
    }
    path = tmp_path / "destinations.yaml"
    path.write_text(yaml.safe_dump(config))
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "from bridge.check import *; from bridge.config import load_config;"
            f"import sys; print(render(check_kafka(load_config({str(path)!r}), 3)))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "kafka  connection  FAIL" in run.stdout, run.stdout + run.stderr
    assert "check kafka.bootstrap_servers" in run.stdout


# --- MySQL's settings: the real server's answers, and what other values would be judged ----


def _assert_config_keys_exist(message: str) -> None:
    """Every ``source.x`` / ``start.x`` a detail names is a key of the destination config."""
    for key in re.findall(r"\b(?:source|start)(?:\.[a-z_]+)+", message):
        model: Any = DestinationConfig
        for part in key.split("."):
            assert part in model.model_fields, (key, message)
            model = model.model_fields[part].annotation
            model = next((a for a in getattr(model, "__args__", ()) if a is not type(None)), model)


def _checked(
    mysql: MysqlEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    start: dict[str, Any] | None = None,
    **variables: Any,
) -> dict[str, tuple[str, str]]:
    """check_source on the real server, with ``variables`` replacing what it reports."""
    real = read_variables
    monkeypatch.setattr(
        check_source_module, "read_variables", lambda conn: replace(real(conn), **variables)
    )
    data = _destination(mysql.address, mysql.user, mysql.password, slave_id=50011)
    if start is not None:
        data["start"] = start
    results = check_source(_destination_config(data))
    for result in results:
        assert "\n" not in result.detail
        _assert_config_keys_exist(result.detail)
    return _outcomes(results)


@pytest.mark.services
@pytest.mark.only_on("mysql", reason="the settings of MySQL 8/9 a user gets wrong")
def test_mysql_server_passes_every_source_check(
    mysql: MysqlEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _checked(mysql, monkeypatch)
    assert {check: outcome for check, (outcome, _) in results.items()} == {
        name: "PASS"
        for name in (
            "connection",
            "binary log",
            "binlog format",
            "row image",
            "server id",
            "privileges",
            "row metadata",
            "binlog compression",
            "partial JSON",
            "binlog retention",
            "gtid",
            "auth plugin",
            "time zone",
        )
    }
    assert results["connection"][1].startswith(f"{mysql.address}: MySQL 9.")
    assert results["binlog compression"][1].startswith("binlog_transaction_compression=")
    assert results["auth plugin"][1].startswith(f"'{mysql.user}'@'%' uses caching_sha2_password")
    assert results["gtid"][1].startswith("gtid_mode=ON, enforce_gtid_consistency=ON")


MYSQL_CASES = [
    pytest.param(
        {"transaction_compression": "ON"},
        (
            "binlog compression",
            "PASS",
            "binlog_transaction_compression=ON: compressed transactions (zstd) are decoded",
        ),
        id="compression-on",
    ),
    pytest.param(
        {"row_value_options": "PARTIAL_JSON"},
        (
            "partial JSON",
            "PASS",
            "PARTIAL_JSON with binlog_row_image=FULL: JSON diffs are applied",
        ),
        id="partial-json-full",
    ),
    pytest.param(
        {"row_value_options": "PARTIAL_JSON", "row_image": "MINIMAL"},
        (
            "partial JSON",
            "FAIL",
            "with binlog_row_image=MINIMAL: the before image leaves unchanged JSON columns out",
        ),
        id="partial-json-minimal",
    ),
    pytest.param(
        {"row_value_options": "PARTIAL_JSON", "row_image": "NOBLOB"},
        (
            "partial JSON",
            "FAIL",
            "set binlog_row_image=FULL (or binlog_row_value_options='')",
        ),
        id="partial-json-noblob",
    ),
    pytest.param(
        {"binlog_expire_logs_seconds": 3600, "expire_logs_days": None},
        (
            "binlog retention",
            "WARN",
            "binlogs expire after 1.0 h: a longer stop loses the cursor's position (error 1236); "
            "set binlog_expire_logs_seconds to cover",
        ),
        id="retention-one-hour",
    ),
    pytest.param(
        {"binlog_expire_logs_seconds": 0, "expire_logs_days": None},
        (
            "binlog retention",
            "WARN",
            "binlog_expire_logs_seconds is 0: nothing tells how long binlogs are kept",
        ),
        id="retention-unset",
    ),
    pytest.param(
        {"expire_logs_auto_purge": False},
        (
            "binlog retention",
            "WARN",
            "binlog_expire_logs_auto_purge=OFF: binlogs go only when purged by hand",
        ),
        id="auto-purge-off",
    ),
    pytest.param(
        {"gtid_mode": "ON_PERMISSIVE"},
        (
            "gtid",
            "WARN",
            "gtid_mode=ON_PERMISSIVE is a migration step: transactions without a GTID stop a GTID "
            "start (start.gtid)",
        ),
        id="gtid-on-permissive",
    ),
    pytest.param(
        {"gtid_mode": "OFF_PERMISSIVE", "enforce_gtid_consistency": "WARN"},
        (
            "gtid",
            "WARN",
            "finish with enforce_gtid_consistency=ON and gtid_mode=ON before using start.gtid",
        ),
        id="gtid-off-permissive",
    ),
    pytest.param(
        {"enforce_gtid_consistency": "WARN"},
        (
            "gtid",
            "WARN",
            "gtid_mode=ON with enforce_gtid_consistency=WARN: set enforce_gtid_consistency=ON",
        ),
        id="gtid-on-unenforced",
    ),
    pytest.param(
        {"gtid_mode": "OFF"},
        (
            "gtid",
            "PASS",
            "gtid_mode=OFF: positions are file offsets (start.gtid unusable)",
        ),
        id="gtid-off",
    ),
]


@pytest.mark.services
@pytest.mark.only_on("mysql", reason="the settings of MySQL 8/9 a user gets wrong")
@pytest.mark.parametrize(("variables", "expected"), MYSQL_CASES)
def test_mysql_settings_are_judged_with_the_fix(
    mysql: MysqlEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, Any],
    expected: tuple[str, str, str],
) -> None:
    name, outcome, fragment = expected
    results = _checked(mysql, monkeypatch, **variables)
    assert results[name][0] == outcome, results[name]
    assert fragment in results[name][1], results[name]
    if name == "binlog retention":
        assert "expire_logs_days" not in results[name][1], "MySQL 8.4 removed it"


@pytest.mark.services
@pytest.mark.only_on("mysql", reason="MySQL's GTID sets and gtid_purged")
@pytest.mark.parametrize(
    ("gtid", "variables", "expected"),
    [
        ("0-1-42", {}, ("FAIL", "is a MariaDB GTID but the source is MySQL")),
        ("not-a-uuid:1-5", {}, ("FAIL", "MySQL does not read it as a GTID set")),
        (
            "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5",
            {"gtid_mode": "OFF"},
            ("FAIL", "start.gtid is set but gtid_mode=OFF"),
        ),
        # gtid_purged is empty on the shared server: every set contains it.
        ("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", {}, ("PASS", "gtid_mode=ON")),
    ],
)
def test_mysql_start_gtid_is_checked_against_the_server(
    mysql: MysqlEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    gtid: str,
    variables: dict[str, Any],
    expected: tuple[str, str],
) -> None:
    outcome, fragment = expected
    results = _checked(mysql, monkeypatch, start={"gtid": gtid}, **variables)
    assert results["gtid"][0] == outcome, results["gtid"]
    assert fragment in results["gtid"][1], results["gtid"]


@pytest.mark.services
@pytest.mark.only_on("mysql", reason="mysql_native_password's removal is MySQL's")
@pytest.mark.parametrize(
    ("version", "plugin", "expected"),
    [
        (
            "8.0.36",
            "mysql_native_password",
            (
                "WARN",
                "which MySQL 8.4 turns off by default and 9.0 removes: an upgrade locks it out; "
                "ALTER USER 'canal'@'%' IDENTIFIED WITH caching_sha2_password BY '<password>'",
            ),
        ),
        ("8.0.36", "sha256_password", ("WARN", "deprecated since MySQL 8.0.16")),
        ("9.7.4", "caching_sha2_password", ("PASS", "uses caching_sha2_password")),
    ],
)
def test_mysql_auth_plugin_is_judged(
    mysql: MysqlEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    plugin: str,
    expected: tuple[str, str],
) -> None:
    outcome, fragment = expected
    monkeypatch.setattr(
        check_source_module, "account_auth", lambda conn: AccountAuth(mysql.user, "%", plugin)
    )
    results = _checked(mysql, monkeypatch, version=version)
    assert results["auth plugin"][0] == outcome, results["auth plugin"]
    assert fragment in results["auth plugin"][1], results["auth plugin"]


@pytest.mark.services
@pytest.mark.only_on("mysql", reason="an account whose plugin the check cannot read")
def test_unreadable_auth_plugin_is_skipped(
    mysql: MysqlEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_source_module, "account_auth", lambda conn: None)
    assert _checked(mysql, monkeypatch)["auth plugin"][0] == "SKIP"


def test_mariadb_compressed_binlog_and_mysql_start_gtid_fail(
    mysql: MysqlEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _checked(
        mysql,
        monkeypatch,
        start={"gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"},
        mariadb_log_bin_compress="ON",
    )
    assert results["binlog compression"][0] == "FAIL"
    assert "SET GLOBAL log_bin_compress=OFF" in results["binlog compression"][1]
    assert results["gtid"][0] == "FAIL"
    assert "is no MariaDB GTID list" in results["gtid"][1]
    assert "partial JSON" not in results, "a MySQL setting: no row on MariaDB"
