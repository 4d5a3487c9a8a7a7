"""On-demand snapshot end to end: a streaming-only destination (``snapshot.mode:
never``) whose table already holds rows; ``canal-bridge snapshot --tables`` sent to its admin
endpoint makes those rows arrive as snapshot records (header ``canal-bridge-snapshot``) while
changes keep streaming. The negative case: before the request none of those rows is in the
topic; a request naming a missing table is refused (exit 1) and sends nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import MysqlEndpoint, execute_admin
from tests.e2e.bridge_process import (
    BridgeProcess,
    ReadRecord,
    create_topic,
    read_records_to_end,
    write_config,
)
from tests.ops.helpers import free_port

pytestmark = pytest.mark.services

ROWS = 150
SNAPSHOT_HEADER = "canal-bridge-snapshot"


def _config(tmp_path: Path, mysql: MysqlEndpoint, kafka: str, schema: str) -> tuple[Path, str]:
    topic = f"on-demand-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, 1)
    path = write_config(tmp_path / "destinations.yaml", mysql, kafka, schema, topic)
    token = tmp_path / "admin-token"
    token.write_text(f"t-{uuid.uuid4().hex}\n")
    config = yaml.safe_load(path.read_text())
    config["admin"] = {"listen": f"127.0.0.1:{free_port()}", "token_file": str(token)}
    config["destinations"][0]["snapshot"] = {"mode": "never", "chunk_size": 40}
    path.write_text(yaml.safe_dump(config))
    return path, topic


def _ids(records: list[ReadRecord], *, snapshot: bool) -> list[int]:
    return [
        int(row["id"])
        for record in records
        if (SNAPSHOT_HEADER in record.headers) == snapshot and record.message.get("data")
        for row in record.message["data"]
    ]


def _wait_for(kafka: str, topic: str, check: object, bridge: BridgeProcess) -> list[ReadRecord]:
    deadline = time.monotonic() + 90
    while True:
        records = read_records_to_end(kafka, topic)
        if check(records):  # type: ignore[operator]
            return records
        assert bridge.process is not None and bridge.process.poll() is None, bridge.output()
        assert time.monotonic() < deadline, bridge.output()[-4000:]
        time.sleep(0.5)


def _snapshot_command(
    path: Path, destination: str, tables: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "snapshot",
            "--config",
            str(path),
            "--destination",
            destination,
            "--tables",
            tables,
            "--timeout-s",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        # The config names ${CANAL_PASSWORD}, as the bridge's (BridgeProcess) does.
        env={
            **os.environ,
            "CANAL_PASSWORD": os.environ.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal"),
        },
    )


def test_a_requested_table_arrives_as_snapshot_rows_while_streaming_goes_on(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    table = f"`{scratch_schema}`.items"
    execute_admin(
        mysql,
        f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(20))",
        f"INSERT INTO {table} VALUES " + ",".join(f"({i}, 'old{i}')" for i in range(ROWS)),
    )
    path, topic = _config(tmp_path, mysql, kafka_bootstrap, scratch_schema)
    destination = yaml.safe_load(path.read_text())["destinations"][0]["name"]
    bridge = BridgeProcess(path).start()
    try:
        bridge.wait_for_output(f"destination {destination} reading", timeout_s=60)
        execute_admin(mysql, f"INSERT INTO {table} VALUES (1000, 'streamed before')")
        before = _wait_for(
            kafka_bootstrap, topic, lambda r: 1000 in _ids(r, snapshot=False), bridge
        )
        # The negative case: streaming alone never sends the rows the table already held.
        assert _ids(before, snapshot=True) == []
        assert not set(range(ROWS)) & set(_ids(before, snapshot=False))

        refused = _snapshot_command(
            path, destination, f"{scratch_schema}.items,{scratch_schema}.nope"
        )
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        assert f"no such base table on the source: {scratch_schema}.nope" in refused.stderr
        assert refused.stderr.count("\n") == 1

        done = _snapshot_command(path, destination, f"{scratch_schema}.items")
        assert done.returncode == 0, (done.stdout, done.stderr, bridge.output()[-3000:])
        assert done.stdout == (
            f"destination {destination}: snapshot of {scratch_schema}.items started; "
            "its cursor carries the plan\n"
        )
        execute_admin(mysql, f"INSERT INTO {table} VALUES (1001, 'streamed after')")
        records = _wait_for(
            kafka_bootstrap,
            topic,
            lambda r: (
                set(range(ROWS)) <= set(_ids(r, snapshot=True)) and 1001 in _ids(r, snapshot=False)
            ),
            bridge,
        )
    finally:
        bridge.kill()
    snapshot_rows = _ids(records, snapshot=True)
    # Every row the table held came as a snapshot row, each once; 1000 was in the table too.
    assert sorted(snapshot_rows) in ([*range(ROWS), 1000], [*range(ROWS), 1000, 1001])
    headers = {r.headers[SNAPSHOT_HEADER].decode() for r in records if SNAPSHOT_HEADER in r.headers}
    assert {h.split(";")[0] for h in headers} == {f"{scratch_schema}.items"}
    assert len(headers) >= ROWS // 40  # several chunks
    assert all(r.message["type"] == "INSERT" for r in records if SNAPSHOT_HEADER in r.headers)
    log = bridge.output()
    assert f"snapshot requested of {scratch_schema}.items" in log
    assert "Traceback" not in log
