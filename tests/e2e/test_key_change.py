"""Primary-key changes through the real bridge and broker: 3 partitions hashed by ``$pk$``,
read as a consumer group member does, one partition at a time, each in offset order.

``mq.key_change: split`` keeps every key's events on that key's partition, in order, so any
order of reading the partitions rebuilds the source table. ``update`` (canal's way) puts the
key-changing UPDATE on the new key's partition, and the test shows the anomaly really happens:
some partition order leaves a stale row under an old key."""

from __future__ import annotations

import itertools
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.mq.routing import java_string_hash
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, read_to_end
from tests.e2e.workload import PARTITIONS, keyed_run

pytestmark = pytest.mark.services

Record = tuple[int, int, bytes | None, dict[str, Any]]
CHAINS = 6
# Each chain's row takes these ids in turn (id = 100 * chain + step).
STEPS = 4
MARKER_ID = 999_999


def canal_partition(schema: str, key: str) -> int:
    return abs(java_string_hash(schema) ^ java_string_hash(key)) % PARTITIONS


def key_changing_workload(mysql: MysqlEndpoint, schema: str) -> dict[str, int]:
    """Per chain: insert a row, change its key STEPS - 1 times (the last change of even chains
    in one two-row statement with the next chain), then delete the even chains' rows; a
    marker row last. Returns the source's final ``{id: version}``."""
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{schema}`.moves (id INT PRIMARY KEY, version INT NOT NULL)")
        for chain in range(CHAINS):
            cur.execute(f"INSERT INTO `{schema}`.moves VALUES (%s, 0)", (100 * chain,))
        for step in range(1, STEPS - 1):
            for chain in range(CHAINS):
                cur.execute(
                    f"UPDATE `{schema}`.moves SET id = %s, version = %s WHERE id = %s",
                    (100 * chain + step, step, 100 * chain + step - 1),
                )
        last = STEPS - 1
        for chain in range(0, CHAINS, 2):  # one statement, two rows changing their keys
            cur.execute(
                f"UPDATE `{schema}`.moves SET id = id + 1, version = {last} WHERE id IN (%s, %s)",
                (100 * chain + last - 1, 100 * (chain + 1) + last - 1),
            )
        for chain in range(0, CHAINS, 2):
            cur.execute(f"DELETE FROM `{schema}`.moves WHERE id = %s", (100 * chain + last,))
        cur.execute(f"INSERT INTO `{schema}`.moves VALUES ({MARKER_ID}, 0)")
        cur.execute(f"SELECT id, version FROM `{schema}`.moves WHERE id <> {MARKER_ID}")
        final = {str(key): version for key, version in cur.fetchall()}
    conn.close()
    return final


def run_bridge(
    config: Path, mysql: MysqlEndpoint, schema: str, topic: str, bootstrap: str
) -> tuple[list[Record], dict[str, int]]:
    """The workload through a bridge; every record of the topic once the bridge stopped."""
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading")
        final = key_changing_workload(mysql, schema)
        deadline = time.monotonic() + 90
        while not any(
            row.get("id") == str(MARKER_ID)
            for *_, message in read_to_end(bootstrap, topic)
            for row in message.get("data") or ()
        ):
            assert time.monotonic() < deadline, f"the marker never arrived:\n{bridge.output()}"
            time.sleep(0.5)
        bridge.signal(signal.SIGTERM)  # everything acked is in Kafka once it exits
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    records = [
        r
        for r in read_to_end(bootstrap, topic)
        if r[3].get("table") == "moves"
        and not r[3].get("isDdl")
        and all(row.get("id") != str(MARKER_ID) for row in r[3]["data"])
    ]
    return records, final


def replay(records: list[Record], partition_order: tuple[int, ...]) -> dict[str, int]:
    """A consumer's table: partitions read one after another, each in offset order. An UPDATE
    whose ``old`` names another id moves the row (the old key goes): the best a consumer of
    canal's UPDATE can do."""
    table: dict[str, int] = {}
    by_partition = {p: [r for r in records if r[0] == p] for p in partition_order}
    for partition in partition_order:
        for _, _, _, message in sorted(by_partition[partition], key=lambda r: r[1]):
            olds = message.get("old") or [{}] * len(message["data"])
            for row, old in zip(message["data"], olds, strict=True):
                if message["type"] == "DELETE":
                    table.pop(row["id"], None)
                    continue
                if old.get("id") is not None:
                    table.pop(old["id"], None)
                table[row["id"]] = int(row["version"])
    return table


def events_per_key(records: list[Record]) -> dict[str, list[tuple[int, str, int]]]:
    """Per id, in offset order per partition: (partition, type, version) of every event that
    touches it, an UPDATE's old id included (as "UPDATE-from")."""
    events: dict[str, list[tuple[int, str, int]]] = {}
    for partition, _, _, message in sorted(records, key=lambda r: (r[0], r[1])):
        olds = message.get("old") or [{}] * len(message["data"])
        for row, old in zip(message["data"], olds, strict=True):
            version = int(row["version"])
            events.setdefault(row["id"], []).append((partition, message["type"], version))
            if old.get("id") is not None:
                events.setdefault(old["id"], []).append((partition, "UPDATE-from", version))
    return events


def expected_events(key: str) -> list[tuple[str, int]]:
    """What the source did to an id, in order: inserted (or moved in) at a version, deleted
    (or moved away) at the next version; the even chains' last ids deleted at the end."""
    chain, step = divmod(int(key), 100)
    events = [("INSERT", step)]
    if step < STEPS - 1 or chain % 2 == 0:
        events.append(("DELETE", step))
    return events


def test_split_keeps_every_keys_events_on_its_partition_in_order(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    topic, config = keyed_run(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, "keysplit", key_change="split"
    )
    records, final = run_bridge(config, mysql, scratch_schema, topic, kafka_bootstrap)
    assert {m["type"] for *_, m in records} == {"INSERT", "DELETE"}  # no UPDATE left
    events = events_per_key(records)
    assert set(events) == {str(100 * c + s) for c in range(CHAINS) for s in range(STEPS)}
    for key, seen in events.items():
        assert {p for p, _, _ in seen} == {canal_partition(scratch_schema, key)}, key
        assert [(kind, version) for _, kind, version in seen] == expected_events(key), key
    # Keys really changed partition, so reading partitions in another order could hurt ...
    moved = [
        c
        for c in range(CHAINS)
        if len({canal_partition(scratch_schema, str(100 * c + s)) for s in range(STEPS)}) > 1
    ]
    assert moved
    # ... and yet every order of reading them rebuilds the source table.
    for order in itertools.permutations(range(PARTITIONS)):
        assert replay(records, order) == final, order


def test_update_mode_lets_a_partition_at_a_time_consumer_keep_a_stale_row(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    """The negative case: canal's UPDATE, hashed by its new key, is read before the old key's
    INSERT when the new key's partition is read first."""
    topic, config = keyed_run(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, "keyupdate", key_change="update"
    )
    records, final = run_bridge(config, mysql, scratch_schema, topic, kafka_bootstrap)
    assert "UPDATE" in {m["type"] for *_, m in records}
    split_keys = [
        k for k, seen in events_per_key(records).items() if len({p for p, _, _ in seen}) > 1
    ]
    assert split_keys, "no key's events were spread over partitions"
    stale = {
        order: sorted(set(replay(records, order)) - set(final))
        for order in itertools.permutations(range(PARTITIONS))
    }
    assert any(stale.values()), stale
