"""Two HA processes on one file: an edit adding destinations spreads them over both, an edit
removing some gives them up on whichever process ran them (real ZooKeeper, Kafka, MariaDB)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kazoo.exceptions import NoNodeError

from bridge.ha import RunningInfo
from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import create_topic, write_config
from tests.ha.cluster import Cluster, address_of, ha_cluster
from tests.ha.conftest import eventually


@pytest.fixture
def cluster(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    zookeeper_hosts: str,
    scratch_schema: str,
) -> Iterator[Cluster]:
    topic = f"ha-live-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(
        tmp_path / "destinations.yaml", mysql, kafka_bootstrap, scratch_schema, topic
    )
    made = ha_cluster(path, zookeeper_hosts, session_s=4)
    yield made
    made.close()


def _set_destinations(cluster: Cluster, names: list[str]) -> None:
    settings = yaml.safe_load(cluster.config.read_text())
    base = settings["destinations"][0]
    settings["destinations"] = [_named(base, name) for name in names]
    temporary = cluster.config.with_suffix(".new")
    temporary.write_text(yaml.safe_dump(settings))
    os.replace(temporary, cluster.config)


def _named(base: dict[str, Any], name: str) -> dict[str, Any]:
    source = {**base["source"], "slave_id": base["source"]["slave_id"] + int(name[1:])}
    return {**base, "name": name, "source": source}


def _owners(cluster: Cluster, names: list[str]) -> dict[str, str | None]:
    owners: dict[str, str | None] = {}
    for name in names:
        try:
            data, _ = cluster.zk.get(f"{cluster.root}/destinations/{name}/running")
            owners[name] = RunningInfo.loads(data).address
        except NoNodeError:
            owners[name] = None
    return owners


def test_every_process_applies_the_edit_and_the_balance_follows_the_count(
    cluster: Cluster,
) -> None:
    _set_destinations(cluster, ["d1", "d2"])
    a, b = cluster.start(), cluster.start()
    both = {address_of(a), address_of(b)}

    def spread(names: list[str], each: int) -> bool:
        owners = list(_owners(cluster, names).values())
        return all(owners.count(address) == each for address in both)

    eventually(lambda: spread(["d1", "d2"], 1), 30, "one destination each")
    _set_destinations(cluster, ["d1", "d2", "d3", "d4"])
    eventually(lambda: spread(["d1", "d2", "d3", "d4"], 2), 30, "two each of four")
    for process in (a, b):
        process.wait_for_output("configuration reloaded: added d3, d4", 10)
    _set_destinations(cluster, ["d3", "d4"])
    for process in (a, b):
        process.wait_for_output("configuration reloaded: removed d1, d2", 10)
    eventually(lambda: spread(["d3", "d4"], 1), 30, "one each of the two left")
    assert _owners(cluster, ["d1", "d2"]) == {"d1": None, "d2": None}
    for removed in ("d1", "d2"):
        members = cluster.zk.get_children(f"{cluster.root}/destinations/{removed}/cluster")
        assert members == [], f"{removed} is still registered by {members}"
    for process in (a, b):
        assert process.process is not None and process.process.poll() is None, process.output()
