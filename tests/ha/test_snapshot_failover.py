"""A snapshot in HA mode: the cursor, with the snapshot's progress, lives in
ZooKeeper. The active process is killed -9 mid-snapshot while a writer changes the tables;
the standby takes over and resumes each table after its last acknowledged chunk, never from
scratch, and the topic's final state equals the source's."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.ha import HEADER_NODE
from bridge.mq.records import HEADER_SNAPSHOT
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import create_topic, write_config
from tests.e2e.snapshot_load import Writer, fill, source_state
from tests.e2e.test_snapshot_paths import read_until_converged
from tests.ha.cluster import address_of, ha_cluster
from tests.ha.conftest import eventually

pytestmark = [pytest.mark.services, pytest.mark.timeout(420)]

SESSION_S = 4.0
INTEGER_KEYED = ("items", "notes")  # tests/e2e/snapshot_load.py's tables keyed by id


def resumed_rows(log: str, table: str) -> int:
    """The rows sent before, as the line saying where ``table``'s snapshot resumed names them."""
    marker = f"snapshot of {table} resumes after its last acknowledged chunk ("
    line = next((line for line in log.splitlines() if marker in line), None)
    assert line is not None, f"no line saying where {table} resumed: {log[-3000:]}"
    return int(line.split(marker)[1].split(" rows")[0])


def test_standby_resumes_the_snapshot_at_the_last_acknowledged_chunk(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    zookeeper_hosts: str,
) -> None:
    fill(mysql, scratch_schema)
    topic = f"ha-snapshot-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(
        tmp_path / "destinations.yaml", mysql, kafka_bootstrap, scratch_schema, topic
    )
    settings = yaml.safe_load(path.read_text())
    settings["destinations"][0]["snapshot"] = {
        "mode": "initial",
        "chunk_size": 2000,
        "parallelism": 2,
        "max_rows_per_second": 6000,
    }
    path.write_text(yaml.safe_dump(settings))
    cluster = ha_cluster(path, zookeeper_hosts, SESSION_S)
    cursor_path = f"{cluster.root}/destinations/{cluster.destination}/1001/cursor"

    def acked() -> dict[str, Any]:
        """The snapshot progress in the ZooKeeper cursor, per table."""
        if not cluster.zk.exists(cursor_path):
            return {}
        cursor = json.loads(cluster.zk.get(cursor_path)[0])
        return {t["table"].split(".")[1]: t for t in cursor.get("snapshot", {}).get("tables", [])}

    writer = Writer(mysql, scratch_schema)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        a = cluster.start()
        a.wait_for_output("snapshot of", 60)
        b = cluster.start()
        assert cluster.runs(a)
        thread.start()
        eventually(
            lambda: all(acked().get(t, {}).get("rows", 0) >= 4000 for t in INTEGER_KEYED),
            60,
            "4,000 rows of items and notes acknowledged in ZooKeeper",
        )
        before_kill = acked()
        assert "snapshot done" not in a.output(), "the snapshot ended before the kill"
        a.kill()
        eventually(lambda: cluster.runs(b), SESSION_S + 10, "b owns the running node")
        b.wait_for_output("snapshot done", 180)
        time.sleep(2)
    finally:
        writer.stop.set()
        if thread.is_alive():
            thread.join(30)
    try:
        assert writer.error is None, writer.error
        records, diff = read_until_converged(
            kafka_bootstrap, topic, source_state(mysql, scratch_schema)
        )
        b_log = b.output()
    finally:
        cluster.close()
    assert not diff, f"{len(diff)} keys differ, e.g. {diff[:5]}"
    assert "Traceback" not in b_log, b_log[-3000:]
    # The standby says where it resumed: at least the progress seen acknowledged before the
    # kill (the cursor may have moved on in the last flush before it).
    for table in INTEGER_KEYED:
        resumed = resumed_rows(b_log, f"{scratch_schema}.{table}")
        assert resumed >= before_kill[table]["rows"], (table, resumed, before_kill[table])
    # And it did: every snapshot row b sent of these tables is after the last key acked in
    # ZooKeeper before the kill (a chunk read from scratch would start at id 0).
    b_node = address_of(b).encode()
    for table in INTEGER_KEYED:
        last_acked = int(before_kill[table]["lastKey"][0][1])
        b_ids = [
            int(row["id"])
            for r in records
            if r.headers.get(HEADER_NODE) == b_node
            and HEADER_SNAPSHOT in r.headers
            and r.message["table"] == table
            for row in r.message["data"]
        ]
        assert b_ids, f"b sent no snapshot row of {table}"
        assert min(b_ids) > last_acked, (table, min(b_ids), last_acked)
