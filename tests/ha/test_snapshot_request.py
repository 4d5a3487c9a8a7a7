"""An on-demand snapshot request through ZooKeeper (HA mode): ``canal-bridge snapshot`` writes
the request node; of two processes, the one running the destination performs it (the rows the
table held arrive as snapshot records) and deletes the node; the standby does nothing. A request
written while no process runs the destination waits in ZooKeeper and is performed by the
process that takes it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml
from kazoo.client import KazooClient

from bridge.ha.paths import ZkLayout
from bridge.ha.snapshot_requests import write_request
from tests.conftest import MysqlEndpoint, execute_admin
from tests.e2e.bridge_process import create_topic, read_records_to_end, write_config
from tests.e2e.test_snapshot_on_demand import _ids, _snapshot_command
from tests.ha.cluster import ha_cluster
from tests.ha.conftest import eventually

pytestmark = pytest.mark.services

ROWS = 60


def _snapshot_ids(kafka: str, topic: str) -> list[int]:
    return _ids(read_records_to_end(kafka, topic), snapshot=True)


def test_the_request_reaches_the_process_running_the_destination(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    zookeeper_hosts: str,
) -> None:
    table = f"`{scratch_schema}`.items"
    execute_admin(
        mysql,
        f"CREATE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(20))",
        f"INSERT INTO {table} VALUES " + ",".join(f"({i}, 'old{i}')" for i in range(ROWS)),
    )
    topic = f"ha-on-demand-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(
        tmp_path / "destinations.yaml", mysql, kafka_bootstrap, scratch_schema, topic
    )
    settings = yaml.safe_load(path.read_text())
    settings["destinations"][0]["snapshot"] = {"mode": "never", "chunk_size": 25}
    path.write_text(yaml.safe_dump(settings))
    cluster = ha_cluster(path, zookeeper_hosts, 4.0)
    layout = ZkLayout(cluster.root)
    destination = cluster.destination
    zk = KazooClient(zookeeper_hosts)
    zk.start(10)
    try:
        # Written before any process runs the destination: it waits in ZooKeeper.
        early = write_request(zk, layout, destination, [f"{scratch_schema}.items"])
        first = cluster.start()
        second = cluster.start()
        eventually(cluster.running, 30, "a process running the destination")
        active, standby = (first, second) if cluster.runs(first) else (second, first)
        eventually(lambda: not zk.exists(early), 60, "the early request performed")
        eventually(
            lambda: sorted(_snapshot_ids(kafka_bootstrap, topic)) == list(range(ROWS)),
            60,
            "the rows as snapshot records",
        )
        # Now through the command, with both processes up.
        done = _snapshot_command(path, destination, f"{scratch_schema}.items")
        assert done.returncode == 0, (done.stdout, done.stderr, active.output()[-3000:])
        assert "started by the process running it" in done.stdout
        eventually(
            lambda: len(_snapshot_ids(kafka_bootstrap, topic)) >= 2 * ROWS, 60, "the second pass"
        )
        refused = _snapshot_command(path, destination, f"{scratch_schema}.nope")
        assert refused.returncode == 1
        assert f"no such base table on the source: {scratch_schema}.nope" in refused.stderr
        assert zk.get_children(layout.snapshot_requests(destination)) == []  # all cleaned up
    finally:
        zk.stop()
        zk.close()
        cluster.close()
    ids = _snapshot_ids(kafka_bootstrap, topic)
    assert sorted(ids) == sorted(list(range(ROWS)) * 2)  # each request: every row once
    assert active.output().count("snapshot request req-") >= 2
    assert "snapshot request req-" not in standby.output()
    assert "Traceback" not in active.output() + standby.output()
