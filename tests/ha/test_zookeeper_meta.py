"""The ZooKeeper cursor store under the persistent meta manager: canal's layout and JSON in
ZooKeeper, flushes only when changed, reading back on takeover, and the write guard. (The
MetaManager contract runs against it in tests/unit/meta/test_contract.py.)"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from bridge.ha import ZkSession
from bridge.meta import (
    ClientIdentity,
    CorruptCursor,
    MemoryMetaManager,
    PersistentMetaManager,
    ZooKeeperCursorStore,
)
from tests.unit.meta.helpers import pos

A = ClientIdentity("example")
FLUSH_MS = 50


@pytest.fixture
def client(new_session: Callable[..., ZkSession]) -> KazooClient:
    return new_session().client


@pytest.fixture
def build(client: KazooClient, zk_root: str) -> Iterator[Callable[..., PersistentMetaManager]]:
    managers: list[PersistentMetaManager] = []

    def make(**kw: Any) -> PersistentMetaManager:
        store = ZooKeeperCursorStore(client, zk_root, **kw)
        manager = PersistentMetaManager(MemoryMetaManager(), store, flush_period_ms=FLUSH_MS)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.stop()


def test_cursor_lands_at_canals_path_in_canals_json(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    manager = build()
    manager.start()
    manager.subscribe(A)
    assert client.exists(f"{zk_root}/destinations/example/1001")
    manager.update_cursor(A, pos(1234))
    path = f"{zk_root}/destinations/example/1001/cursor"
    deadline = time.monotonic() + 5
    while not client.exists(path):
        assert time.monotonic() < deadline, "cursor not flushed"
        time.sleep(0.02)
    document = json.loads(client.get(path)[0])
    assert document["@type"] == "com.alibaba.otter.canal.protocol.position.LogPosition"
    assert document["identity"] == {
        "slaveId": 1234,
        "sourceAddress": {"address": "127.0.0.1", "port": 3306},
    }
    assert document["postion"]["journalName"] == "mysql-bin.000001"
    assert document["postion"]["position"] == 1234


def test_flushes_only_when_changed(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    manager = build()
    manager.start()
    manager.subscribe(A)
    manager.update_cursor(A, pos(10))
    manager.flush()
    path = f"{zk_root}/destinations/example/1001/cursor"
    version = client.get(path)[1].version
    time.sleep(FLUSH_MS * 5 / 1000)
    assert client.get(path)[1].version == version, "rewritten without a change"
    manager.update_cursor(A, pos(20))
    time.sleep(FLUSH_MS * 5 / 1000)
    assert client.get(path)[1].version == version + 1


def test_a_new_owner_reads_subscriptions_cursors_and_filters_back(
    build: Callable[..., PersistentMetaManager],
) -> None:
    first = build()
    first.start()
    filtered = ClientIdentity("example", 1002, r"shop\..*")
    first.subscribe(A)
    first.subscribe(filtered)
    first.update_cursor(A, pos(77))
    first.stop()  # the final flush
    second = build()
    second.start()
    assert second.has_subscribe(A)
    assert second.get_cursor(A) == pos(77)
    assert second.get_cursor(filtered) is None
    [_, again] = second.list_subscriptions("example")
    assert again.filter == r"shop\..*"


def test_reads_a_cursor_canal_wrote(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    canal_json = (
        b'{"@type":"com.alibaba.otter.canal.protocol.position.LogPosition","identity":'
        b'{"slaveId":-1,"sourceAddress":{"address":"10.0.0.1","port":3306}},"postion":'
        b'{"gtid":"","included":false,"journalName":"mysql-bin.000003","position":4,'
        b'"serverId":1,"timestamp":1507704547000}}'
    )
    client.create(f"{zk_root}/destinations/example/1001/cursor", canal_json, makepath=True)
    manager = build()
    manager.start()
    cursor = manager.get_cursor(A)
    assert cursor is not None
    assert cursor.identity.source_address == "10.0.0.1:3306"
    assert (cursor.position.journal_name, cursor.position.position) == ("mysql-bin.000003", 4)


def test_a_corrupt_cursor_is_reported_not_reset(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    client.create(f"{zk_root}/destinations/example/1001/cursor", b"{oops", makepath=True)
    manager = build()
    manager.start()
    with pytest.raises(CorruptCursor, match="1001/cursor"):
        manager.get_cursor(A)


def test_nothing_is_written_without_the_right_to(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    allowed = {"example": True}
    manager = build(may_write=lambda d: allowed[d])
    manager.start()
    manager.subscribe(A)
    manager.update_cursor(A, pos(10))
    manager.flush()
    path = f"{zk_root}/destinations/example/1001/cursor"
    assert manager.get_cursor(A) == pos(10)
    allowed["example"] = False
    manager.update_cursor(A, pos(20))
    manager.stop()  # the final flush is refused quietly, not raised
    written = json.loads(client.get(path)[0])
    assert written["postion"]["position"] == 10


def test_subscription_nodes_follow_subscribe_filter_and_unsubscribe(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    manager = build()
    manager.start()
    node = f"{zk_root}/destinations/example/1002"
    manager.subscribe(ClientIdentity("example", 1002, r"shop\..*"))
    assert client.get(f"{node}/filter")[0] == rb"shop\..*"
    manager.subscribe(ClientIdentity("example", 1002))
    assert client.exists(node) and not client.exists(f"{node}/filter")
    manager.update_cursor(ClientIdentity("example", 1002), pos(5))
    manager.flush()
    assert client.exists(f"{node}/cursor")
    manager.unsubscribe(ClientIdentity("example", 1002))
    assert not client.exists(node)


def test_only_the_changed_cursor_of_a_destination_is_rewritten(
    build: Callable[..., PersistentMetaManager], client: KazooClient, zk_root: str
) -> None:
    manager = build()
    manager.start()
    other = ClientIdentity("example", 1002)
    manager.subscribe(A)
    manager.subscribe(other)
    manager.update_cursor(A, pos(1))
    manager.update_cursor(other, pos(1))
    manager.flush()
    path = f"{zk_root}/destinations/example/1002/cursor"
    version = client.get(path)[1].version
    manager.update_cursor(A, pos(2))
    manager.update_cursor(other, pos(1))  # the same cursor again
    manager.flush()
    assert client.get(path)[1].version == version
    assert (
        json.loads(client.get(f"{zk_root}/destinations/example/1001/cursor")[0])["postion"][
            "position"
        ]
        == 2
    )
