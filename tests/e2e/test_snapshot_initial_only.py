"""``snapshot.mode: initial_only`` end to end: the bridge snapshots the tables, then
exits 0 once every snapshot row is acked; run again on its cursor, it has nothing left and
exits at once without sending anything. The negative case: ``mode: initial`` on the same
tables keeps running and streams a change made after the snapshot."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end, write_config

pytestmark = pytest.mark.services

ROWS = 250


def _fill(mysql: MysqlEndpoint, schema: str) -> None:
    """``items``: ROWS rows in 3 chunks of 100; ``empty``: none; ``zlog``, planned last: no
    key, so it is skipped with one line and puts no row (its end never reaches the cursor
    through a row of its own)."""
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE `{schema}`.items (id INT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"CREATE TABLE `{schema}`.empty (id INT PRIMARY KEY)")
            cur.execute(f"CREATE TABLE `{schema}`.zlog (line VARCHAR(20))")
            cur.executemany(
                f"INSERT INTO `{schema}`.items VALUES (%s, %s)",
                [(i, f"v{i}") for i in range(ROWS)],
            )
            cur.execute(f"INSERT INTO `{schema}`.zlog VALUES ('kept out')")
    finally:
        conn.close()


def _config(tmp_path: Path, mysql: MysqlEndpoint, kafka: str, schema: str, mode: str) -> Path:
    topic = f"snapshot-only-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, 1)
    path = write_config(tmp_path / "destinations.yaml", mysql, kafka, schema, topic)
    config = yaml.safe_load(path.read_text())
    config["destinations"][0]["snapshot"] = {"mode": mode, "chunk_size": 100}
    path.write_text(yaml.safe_dump(config))
    return path


def _topic(path: Path) -> str:
    return str(yaml.safe_load(path.read_text())["destinations"][0]["mq"]["topic"])


def _inserted_ids(kafka: str, topic: str) -> list[int]:
    ids = []
    for _, _, _, message in read_to_end(kafka, topic, timeout_s=60):
        assert message["table"] == "items" and message["type"] == "INSERT", message
        ids.extend(int(row["id"]) for row in message["data"])
    return ids


def test_initial_only_exits_0_once_the_snapshot_is_acked_and_again_at_once_on_its_cursor(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    _fill(mysql, scratch_schema)
    path = _config(tmp_path, mysql, kafka_bootstrap, scratch_schema, "initial_only")
    bridge = BridgeProcess(path).start()
    try:
        assert bridge.wait(120) == 0, bridge.output()[-3000:]
    finally:
        bridge.kill()
    log = bridge.output()
    assert "snapshot delivered; stopping it (snapshot.mode initial_only)" in log, log[-3000:]
    assert f"not snapshotting {scratch_schema}.zlog" in log
    assert "Traceback" not in log
    topic = _topic(path)
    assert sorted(_inserted_ids(kafka_bootstrap, topic)) == list(range(ROWS))

    again = BridgeProcess(path).start()  # the same meta directory: the cursor holds the plan
    try:
        assert again.wait(120) == 0, again.output()[-3000:]
    finally:
        again.kill()
    assert "snapshot delivered" in again.output()
    assert len(_inserted_ids(kafka_bootstrap, topic)) == ROWS  # nothing sent again


def test_initial_keeps_streaming_after_the_snapshot(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    """The negative case: ``initial`` does not stop after the same snapshot; a row inserted
    afterwards is streamed, and only SIGTERM ends the process."""
    _fill(mysql, scratch_schema)
    path = _config(tmp_path, mysql, kafka_bootstrap, scratch_schema, "initial")
    topic = _topic(path)
    bridge = BridgeProcess(path).start()
    try:
        bridge.wait_for_output("snapshot done", timeout_s=120)
        conn = connect_admin(mysql)
        try:
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO `{scratch_schema}`.items VALUES (%s, 'after')", (ROWS,))
        finally:
            conn.close()
        ids: list[int] = []
        deadline = time.monotonic() + 60
        while ROWS not in ids:  # the streamed row
            assert bridge.process is not None and bridge.process.poll() is None, bridge.output()
            assert time.monotonic() < deadline, f"row {ROWS} not streamed: {bridge.output()}"
            ids = _inserted_ids(kafka_bootstrap, topic)
        assert sorted(ids) == list(range(ROWS + 1))
        assert "snapshot delivered" not in bridge.output()
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0
    finally:
        bridge.kill()
