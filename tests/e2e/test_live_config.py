"""``canal-bridge run`` applies an edited configuration file while it runs: one bridge process
with three destinations under steady writes sees bad files refused, then one edit that adds,
removes and changes a destination, then a SIGHUP, and every destination is checked after."""

from __future__ import annotations

import os
import re
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import load_config
from bridge.instance import mq_client
from bridge.meta import build_meta_manager
from bridge.mq.records import HEADER_FILE, HEADER_POSITION
from bridge.position import EntryPosition
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import (
    BridgeProcess,
    ReadRecord,
    create_topic,
    read_records_to_end,
    write_config,
)
from tests.ops.helpers import free_port, scrape, wait_until

UNCHANGED = "the running configuration is unchanged"


class Writer(threading.Thread):
    """Inserts ids 0, 1, 2, ... one transaction each until finished."""

    def __init__(self, mysql: MysqlEndpoint, schema: str) -> None:
        super().__init__(daemon=True)
        self._conn = connect_admin(mysql)
        self._schema = schema
        self._done = threading.Event()
        self.written = 0

    def run(self) -> None:
        with self._conn.cursor() as cur:
            while not self._done.wait(0.02):
                cur.execute(f"INSERT INTO `{self._schema}`.t VALUES ({self.written})")
                self.written += 1

    def finish(self) -> int:
        self._done.set()
        self.join(10)
        self._conn.close()
        return self.written


@dataclass
class Live:
    """A bridge process on a file of destinations u, r and c, each to its own topic."""

    bridge: BridgeProcess
    kafka: str
    config: dict[str, Any]
    topics: dict[str, str]

    def destination(self, name: str, topic: str) -> dict[str, Any]:
        base = self.config["destinations"][0]
        source = {**base["source"], "slave_id": base["source"]["slave_id"] + ord(name)}
        return {**base, "name": name, "source": source, "mq": {**base["mq"], "topic": topic}}

    def rewrite(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Save an edited file as editors do: a new file renamed over the old one."""
        edited = yaml.safe_load(yaml.safe_dump(self.config))
        change(edited)
        temporary = self.bridge.config.with_suffix(".new")
        temporary.write_text(yaml.safe_dump(edited))
        os.replace(temporary, self.bridge.config)

    def records(self, role: str) -> list[ReadRecord]:
        return [
            r for r in read_records_to_end(self.kafka, self.topics[role], timeout_s=20) if r.message
        ]

    def ids(self, *roles: str) -> list[int]:
        return [
            int(row["id"])
            for role in roles
            for r in self.records(role)
            if not r.message["isDdl"]
            for row in r.message["data"]
        ]


@pytest.fixture
def live(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> Iterator[Live]:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY)")
    conn.close()
    topics = {role: f"live-{role}-{uuid.uuid4().hex[:8]}" for role in ("u", "r", "c", "c2", "a")}
    for topic in topics.values():
        create_topic(kafka_bootstrap, topic, 1)
    path = write_config(
        tmp_path / "destinations.yaml", mysql, kafka_bootstrap, scratch_schema, topics["u"]
    )
    setup = Live(BridgeProcess(path), kafka_bootstrap, yaml.safe_load(path.read_text()), topics)
    setup.config["destinations"] = [setup.destination(n, topics[n]) for n in ("u", "r", "c")]
    setup.config["admin"]["listen"] = f"127.0.0.1:{free_port()}"
    path.write_text(yaml.safe_dump(setup.config))
    setup.bridge.start()
    yield setup
    setup.bridge.kill()


def test_a_running_bridge_applies_an_edited_file_and_refuses_bad_ones(
    live: Live, mysql: MysqlEndpoint, scratch_schema: str
) -> None:
    bridge = live.bridge
    for name in ("u", "r", "c"):
        bridge.wait_for_output(f"destination {name} reading", timeout_s=60)
    writer = Writer(mysql, scratch_schema)
    writer.start()
    try:
        for role in ("u", "r", "c"):
            wait_until(lambda r=role: live.records(r), 30, f"{role} produces")
        _refuse_bad_files(live)
        live.rewrite(
            lambda c: c.update(
                destinations=[
                    c["destinations"][0],
                    live.destination("c", live.topics["c2"]),
                    live.destination("a", live.topics["a"]),
                ]
            )
        )
        bridge.wait_for_output("configuration reloaded: added a; removed r; changed c", 20)
        bridge.wait_for_output("destination a reading", timeout_s=30)
        assert _metric_destinations(live) == {"u", "c", "a"}  # r's series are gone
        removed_at = len(live.records("r"))
        bridge.signal(signal.SIGHUP)
        bridge.wait_for_output("configuration reloaded: no change", timeout_s=10)
        wait_until(lambda: live.records("a") and live.records("c2"), 30, "a and c produce")
    finally:
        written = writer.finish()
    for roles in (("u",), ("c", "c2"), ("a",)):
        wait_until(lambda r=roles: written - 1 in live.ids(*r), 30, f"the last row in {roles}")
    log = bridge.output()
    bridge.signal(signal.SIGTERM)
    assert bridge.wait(30) == 0, bridge.output()

    everything = list(range(written))
    # u: never restarted, nothing lost or duplicated.
    assert log.count("destination u started") == 1, log
    assert "destination u stopped" not in log, log
    assert live.ids("u") == everything
    # r: stopped at the reload, its cursor flushed past everything it delivered.
    r_records = live.records("r")
    assert len(r_records) == removed_at and live.ids("r") != everything
    last = r_records[-1].headers
    cursor = _stored_cursor(bridge.config, "r")
    assert cursor.sort_key() > (last[HEADER_FILE].decode(), int(last[HEADER_POSITION])), cursor
    # c: restarted once, from its cursor: both topics together hold every row, and the new
    # topic starts where the old one stopped (at-least-once: a batch in flight may repeat).
    assert log.count("destination c started") == 2, log
    old, new = live.ids("c"), live.ids("c2")
    assert sorted(set(old + new)) == everything
    assert 0 < new[0] <= max(old) + 1, (max(old), new[:3])
    # a: started at the binlog end when it was added, and produced every row after.
    added = live.ids("a")
    assert added == list(range(added[0], written)) and added[0] > 0


def _metric_destinations(live: Live) -> set[str]:
    samples = scrape(f"http://{live.config['admin']['listen']}")
    return {
        dict(labels)["destination"]
        for name, labels in samples
        if name == "canal_bridge_destination_state"
    }


def _refuse_bad_files(live: Live) -> None:
    """NEGATIVE: a problem in one destination, then a changed kafka section: each is logged
    one line per problem, and no destination is stopped or started."""
    before = live.bridge.output()
    live.rewrite(lambda c: c["destinations"][2].update(batch_size=0))
    live.bridge.wait_for_output(UNCHANGED, timeout_s=10)
    live.rewrite(lambda c: c["kafka"]["producer"].update({"linger.ms": 6}))
    wait_until(lambda: live.bridge.output().count(UNCHANGED) == 2, 10, "the kafka change refused")
    refused = live.bridge.output()[len(before) :]
    assert re.search(r"ERROR .*destinations\[2\]\.batch_size: ", refused), refused
    assert re.search(r"ERROR .*kafka: changed; .*restart it", refused), refused
    assert not re.search(r"destination \w+ (started|stopped)|MQ worker", refused), refused


def _stored_cursor(path: Path, destination: str) -> EntryPosition:
    meta = build_meta_manager(load_config(path, {"CANAL_PASSWORD": "unused"}).meta)
    meta.start()
    try:
        stored = meta.get_cursor(mq_client(destination))
    finally:
        meta.stop()
    assert stored is not None, f"no cursor stored for {destination}"
    return stored.position
