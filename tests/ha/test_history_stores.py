"""One contract for every schema history store (file, memory, ZooKeeper): what was replaced
and appended reads back the same, a later base hides the records it already holds, and the
ZooKeeper store writes only while its process runs the destination and survives a base
larger than a node."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.ha import ZkSession
from bridge.schema import zookeeper_store
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition
from bridge.schema.store import FileHistoryStore, HistoryStore, MemoryHistoryStore, StoredHistory
from bridge.schema.zookeeper_store import ZooKeeperHistoryStore

JOURNAL = "binlog.000003"
MakeStore = Callable[[], HistoryStore]


def _schemas(tables: int = 1) -> Schemas:
    """``tables`` tables of 21 columns, named at random (a base that does not compress away)."""
    schemas = Schemas(Dialect(display_widths=True, mariadb=True), {"shop": "utf8mb4"}, {})
    for n in range(tables):
        columns = tuple(
            ColumnDefinition(f"c{secrets.token_hex(6)}", "varchar(64)", True, "utf8mb4")
            for _ in range(20)
        )
        schemas.tables[("shop", f"t{n}")] = TableDefinition(
            "shop", f"t{n}", (ColumnDefinition("id", "int(11)", False), *columns), ("id",)
        )
    return schemas


def _record(offset: int) -> DdlRecord:
    return DdlRecord(Mark(JOURNAL, offset, "0-1-7"), "shop", f"ALTER TABLE t0 ADD c{offset} INT")


@pytest.fixture(params=["file", "memory", "zookeeper"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """A factory of stores over the same place (a second one reads what the first wrote)."""
    if request.param == "file":
        return lambda: FileHistoryStore(tmp_path / "d")
    if request.param == "memory":
        memory = MemoryHistoryStore()
        return lambda: memory
    session: ZkSession = request.getfixturevalue("new_session")()
    root: str = request.getfixturevalue("zk_root")
    return lambda: ZooKeeperHistoryStore(session.client, f"{root}/destinations/d/schema")


def test_an_empty_store_has_no_history(make_store: MakeStore) -> None:
    assert make_store().load() is None


def test_what_is_replaced_and_appended_reads_back(make_store: MakeStore) -> None:
    store = make_store()
    base = StoredHistory(Mark(JOURNAL, 4), _schemas(3), (_record(100),))
    store.replace(base)
    store.append(_record(200))
    store.append(_record(300))
    loaded = make_store().load()
    assert loaded is not None
    assert loaded.mark == base.mark
    assert loaded.schemas.tables == base.schemas.tables
    assert loaded.schemas.dialect == base.schemas.dialect
    assert [r.mark.offset for r in loaded.records] == [100, 200, 300]
    assert loaded.records[1] == _record(200)


def test_a_new_base_replaces_the_records_before_it(make_store: MakeStore) -> None:
    store = make_store()
    store.replace(StoredHistory(Mark(JOURNAL, 4), _schemas(), ()))
    store.append(_record(200))
    store.replace(StoredHistory(Mark(JOURNAL, 250), _schemas(), ()))
    store.append(_record(300))
    loaded = make_store().load()
    assert loaded is not None and loaded.mark.offset == 250
    assert [r.mark.offset for r in loaded.records] == [300]


def test_zookeeper_keeps_a_base_larger_than_a_node(
    new_session: Callable[..., ZkSession], zk_root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zookeeper_store, "CHUNK_BYTES", 64 * 1024)  # ZooKeeper's limit: 1 MB
    store = ZooKeeperHistoryStore(new_session().client, f"{zk_root}/destinations/d/schema")
    big = _schemas(2000)
    store.replace(StoredHistory(Mark(JOURNAL, 4), big, ()))
    client = new_session().client
    generation = client.get(f"{zk_root}/destinations/d/schema/current")[0].decode()
    chunks = client.get_children(f"{zk_root}/destinations/d/schema/{generation}/base")
    assert len(chunks) > 1, "a base of 2,000 tables should not fit one chunk"
    loaded = ZooKeeperHistoryStore(client, f"{zk_root}/destinations/d/schema").load()
    assert loaded is not None and loaded.schemas.tables == big.tables


def test_zookeeper_writes_nothing_once_the_destination_is_lost(
    new_session: Callable[..., ZkSession], zk_root: str
) -> None:
    path = f"{zk_root}/destinations/d/schema"
    owner = ZooKeeperHistoryStore(new_session().client, path)
    owner.replace(StoredHistory(Mark(JOURNAL, 4), _schemas(), ()))
    lost = ZooKeeperHistoryStore(new_session().client, path, may_write=lambda: False)
    lost.load()
    lost.append(_record(200))
    lost.replace(StoredHistory(Mark(JOURNAL, 900), _schemas(), ()))
    loaded = owner.load()
    assert loaded is not None and loaded.mark.offset == 4 and loaded.records == ()
