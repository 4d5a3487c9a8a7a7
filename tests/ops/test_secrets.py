"""Secrets never reach the output: a full run (data flowing, JSON logs), runs that fail on
Kafka SASL/TLS or on source credentials, and ``check`` / ``status`` on the same files.

Every secret is distinctive, so a plain substring search over the captured output is a
complete test; the output is also checked to be non-trivial (the run really happened).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
import yaml

from tests.e2e.bridge_process import create_topic
from tests.integration.mariadb_server import ThrowawayServer, throwaway_mariadb
from tests.ops.helpers import free_port, get, metric, scrape, wait_until

MYSQL_SECRET = "Mq-pw-7c1e9b2f-distinctive"
SASL_SECRET = "Ks-sasl-4d8a6e03-distinctive"
KEY_SECRET = "Tk-key-91f0c7aa-distinctive"
SECRETS = (MYSQL_SECRET, SASL_SECRET, KEY_SECRET)


@pytest.fixture(scope="module")
def source() -> Iterator[ThrowawayServer]:
    with throwaway_mariadb(
        "--log-bin=mysql-bin",
        "--server-id=9",
        "--binlog-format=ROW",
        user="cdc",
        password=MYSQL_SECRET,
    ) as server:
        root = pymysql.connect(unix_socket=server.socket, user="root", autocommit=True)
        with root.cursor() as cur:
            cur.execute("CREATE DATABASE shop")
            cur.execute("CREATE TABLE shop.t (id INT PRIMARY KEY, note VARCHAR(40))")
        root.close()
        yield server


def _config(
    path: Path, server: ThrowawayServer, kafka: dict[str, Any], password: str, listen: str | None
) -> Path:
    config = {
        "kafka": kafka,
        "meta": {"store": "file", "dir": str(path.parent / "meta"), "flush_period_ms": 200},
        "admin": {"listen": listen},
        "destinations": [
            {
                "name": "secretive",
                "source": {
                    "address": server.address,
                    "username": server.user,
                    "password": password,
                    "slave_id": 60001,
                },
                "filter": {"regex": r"shop\..*"},
                "heartbeat_period_s": 1,
                "mq": {"topic": f"ops-secrets-{uuid.uuid4().hex[:8]}"},
            }
        ],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _start(config: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bridge.cli", *args, "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _failing_run(name: str, config: Path, tmp_path: Path, source: ThrowawayServer, key: int) -> str:
    """Run until the expected failure shows in the log, stop, return the output."""
    log = tmp_path / f"{name}.log"
    process = _start(config, log, "run")
    try:
        wait_until(lambda: "destination secretive" in log.read_text(), 30, "the run started")
        if name == "right":
            # The row must come after the start position the parser takes (the binlog's end).
            wait_until(lambda: "destination secretive reading" in log.read_text(), 30, "reading")
            conn = pymysql.connect(unix_socket=source.socket, user="root", autocommit=True)
            with conn.cursor() as cur:
                cur.execute("INSERT INTO shop.t VALUES (%s, 'x')", (1000 + key,))
            conn.close()
            wait_until(lambda: "not delivered" in log.read_text(), 60, "a delivery failure")
        else:
            wait_until(lambda: "access denied" in log.read_text(), 30, "access denied")
    finally:
        _stop(process)
    return log.read_text()


def _assert_clean(output: str) -> None:
    for secret in SECRETS:
        assert secret not in output, f"a secret leaked:\n{output}"


def test_full_run_with_json_logs_keeps_the_password_out(
    tmp_path: Path, source: ThrowawayServer, kafka_bootstrap: str
) -> None:
    port = free_port()
    config = _config(
        tmp_path / "destinations.yaml",
        source,
        {"bootstrap_servers": kafka_bootstrap, "producer": {"linger.ms": 5}},
        MYSQL_SECRET,
        f"127.0.0.1:{port}",
    )
    create_topic(
        kafka_bootstrap, yaml.safe_load(config.read_text())["destinations"][0]["mq"]["topic"], 1
    )
    log = tmp_path / "run.log"
    process = _start(config, log, "run", "--log-format", "json")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: get(base + "/readyz")[0] == 200 if process.poll() is None else "exited",
            60,
            "ready",
        )
        assert process.poll() is None, log.read_text()
        conn = pymysql.connect(
            host=source.host,
            port=source.port,
            user="root",
            unix_socket=source.socket,
            autocommit=True,
        )
        with conn.cursor() as cur:
            for key in range(10):
                cur.execute("INSERT INTO shop.t VALUES (%s, %s)", (key, f"row {key}"))
        conn.close()
        wait_until(
            lambda: (
                (metric(scrape(base), "canal_bridge_rows_total", destination="secretive") or 0)
                >= 10
            ),
            60,
            "10 rows delivered",
        )
        metrics_text = (
            get(base + "/metrics")[1] + get(base + "/healthz")[1] + get(base + "/readyz")[1]
        )
    finally:
        _stop(process)
    assert process.returncode == 0, log.read_text()
    output = log.read_text()
    records = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert any(r["message"].startswith("destination secretive reading") for r in records)
    # Context: records logged on the destination's threads carry its name and cursor.
    stopped = [r for r in records if "MQ worker of secretive stopped" in r["message"]]
    assert stopped and stopped[0]["destination"] == "secretive"
    assert stopped[0]["position"].startswith("mysql-bin.")
    _assert_clean(output)
    _assert_clean(metrics_text)


def test_failing_runs_and_check_keep_sasl_tls_and_source_secrets_out(
    tmp_path: Path, source: ThrowawayServer, kafka_bootstrap: str
) -> None:
    sasl = {
        "bootstrap_servers": kafka_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",  # the broker speaks PLAINTEXT: SASL fails
        "sasl": {"mechanism": "PLAIN", "username": "bridge", "password": SASL_SECRET},
        "producer": {"message.timeout.ms": 3000},
    }
    tls = {
        "bootstrap_servers": kafka_bootstrap,
        "security_protocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-512", "username": "bridge", "password": SASL_SECRET},
        "ssl": {"key_location": str(tmp_path / "missing.key"), "key_password": KEY_SECRET},
    }
    outputs = []
    # A wrong source password (access denied) with SASL against a PLAINTEXT broker ...
    wrong = _config(tmp_path / "wrong.yaml", source, sasl, MYSQL_SECRET + "-wrong", None)
    # ... the right source password with SASL (data arrives, delivery fails) ...
    right = _config(tmp_path / "right.yaml", source, sasl, MYSQL_SECRET, None)
    # ... and TLS settings librdkafka refuses at once (a key file that is not there).
    broken_tls = _config(tmp_path / "tls.yaml", source, tls, MYSQL_SECRET, None)
    for name, config in (("wrong", wrong), ("right", right)):
        outputs.append(_failing_run(name, config, tmp_path, source, len(outputs)))
    log = tmp_path / "tls.log"
    process = _start(broken_tls, log, "run")
    process.wait(60)
    outputs.append(log.read_text())
    assert process.returncode != 0
    for config in (wrong, right, broken_tls):
        for command in ("check", "status", "validate"):
            done = subprocess.run(
                [sys.executable, "-m", "bridge.cli", command, "--config", str(config)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            outputs.append(done.stdout + done.stderr)
    joined = "\n".join(outputs)
    assert "access denied for cdc@" in joined
    assert "ssl.key.location failed" in outputs[2]
    _assert_clean(joined)
