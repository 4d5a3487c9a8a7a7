"""The MetaManager contract, run against the memory manager and every registered cursor store
(built by the factory, as the runner and HA build them). The ZooKeeper case needs the real
ZooKeeper (``services`` marker)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.config import MetaConfig
from bridge.meta import (
    CURSOR_STORES,
    BatchOutOfOrder,
    ClientCursor,
    ClientIdentity,
    MemoryMetaManager,
    MetaAlreadyStarted,
    MetaManager,
    MetaNotRunning,
    NotSubscribed,
    PersistentMetaManager,
    StoreContext,
    UnknownBatch,
    build_meta_manager,
)
from bridge.position import FilterCoverage, SnapshotProgress, TableProgress
from tests.unit.meta.helpers import pos, scratch_zookeeper, span

A = ClientIdentity("example")
B = ClientIdentity("example", 1002)
OTHER = ClientIdentity("other")


class DictCursorStore:
    """The example of ``CursorStore``'s docstring: implemented and registered, nothing else."""

    def __init__(self) -> None:
        self.saved: dict[str, list[ClientCursor]] = {}

    def open(self) -> list[str]:
        return sorted(self.saved)

    def load(self, destination: str) -> list[ClientCursor]:
        return list(self.saved.get(destination, []))

    def save(self, destination: str, cursors: Sequence[ClientCursor]) -> None:
        self.saved[destination] = list(cursors)


KINDS = [
    pytest.param(kind, marks=[pytest.mark.services] if kind == "zookeeper" else [])
    for kind in ["memory", *CURSOR_STORES, "dict"]
]


@pytest.fixture(params=KINDS)
def make_meta(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[], MetaManager]]:
    """Builds unstarted managers of one kind through ``build_meta_manager``."""
    kind: str = request.param
    with ExitStack() as stack:
        context = StoreContext()
        if kind == "zookeeper":
            client, root = stack.enter_context(
                scratch_zookeeper(request.getfixturevalue("zookeeper_hosts"))
            )
            context = StoreContext(client, root)
        if kind == "dict":
            monkeypatch.setitem(CURSOR_STORES, "dict", lambda config, context: DictCursorStore())
        config = MetaConfig.model_construct(store=kind, dir=tmp_path / "meta", flush_period_ms=50)
        managers: list[MetaManager] = []

        def make() -> MetaManager:
            manager = build_meta_manager(config, context)
            assert isinstance(
                manager, MemoryMetaManager if kind == "memory" else PersistentMetaManager
            )
            managers.append(manager)
            return manager

        yield make
        for manager in managers:
            manager.stop()


@pytest.fixture
def meta(make_meta: Callable[[], MetaManager]) -> MetaManager:
    manager = make_meta()
    manager.start()
    return manager


# -- lifecycle -----------------------------------------------------------------------------


def test_double_start_raises(meta: MetaManager) -> None:
    assert meta.running
    with pytest.raises(MetaAlreadyStarted):
        meta.start()


def test_operations_refused_when_not_running(make_meta: Callable[[], MetaManager]) -> None:
    manager = make_meta()
    assert not manager.running
    with pytest.raises(MetaNotRunning):
        manager.subscribe(A)
    with pytest.raises(MetaNotRunning):
        manager.get_cursor(A)
    manager.start()
    manager.subscribe(A)
    manager.stop()
    assert not manager.running
    with pytest.raises(MetaNotRunning):
        manager.add_batch(A, span(0, 1))
    manager.stop()  # stopping twice is harmless


# -- subscriptions -------------------------------------------------------------------------


def test_subscribe_and_list(meta: MetaManager) -> None:
    assert not meta.has_subscribe(A)
    meta.subscribe(A)
    meta.subscribe(B)
    meta.subscribe(OTHER)
    assert meta.has_subscribe(A) and meta.has_subscribe(B)
    assert meta.list_subscriptions("example") == [A, B]
    assert meta.list_subscriptions("other") == [OTHER]
    assert meta.list_subscriptions("nobody") == []


def test_resubscribe_replaces_the_filter(meta: MetaManager) -> None:
    meta.subscribe(ClientIdentity("example", 1001, r"shop\..*"))
    meta.subscribe(ClientIdentity("example", 1001, r"crm\..*"))
    (only,) = meta.list_subscriptions("example")
    assert only.filter == r"crm\..*"
    assert meta.has_subscribe(ClientIdentity("example", 1001))


def test_identity_equality_ignores_filter() -> None:
    assert ClientIdentity("d", 1, "x") == ClientIdentity("d", 1, "y")
    assert hash(ClientIdentity("d", 1, "x")) == hash(ClientIdentity("d", 1))
    assert ClientIdentity("d", 1) != ClientIdentity("d", 2)
    assert ClientIdentity("d").client_id == 1001


def test_unsubscribe_forgets_cursor_and_batches(meta: MetaManager) -> None:
    meta.subscribe(A)
    meta.subscribe(B)
    meta.update_cursor(A, pos(10))
    meta.add_batch(A, span(10, 20))
    meta.unsubscribe(A)
    assert not meta.has_subscribe(A)
    assert meta.list_subscriptions("example") == [B]
    assert meta.get_cursor(A) is None
    assert meta.list_all_batch_ids(A) == []
    meta.unsubscribe(A)  # idempotent


# -- cursors -------------------------------------------------------------------------------


def test_cursor(meta: MetaManager) -> None:
    meta.subscribe(A)
    assert meta.get_cursor(A) is None
    meta.update_cursor(A, pos(100))
    meta.update_cursor(A, pos(200))
    assert meta.get_cursor(A) == pos(200)
    assert meta.get_cursor(B) is None


def test_a_cursor_keeps_its_snapshot_plan_and_covered_filter_across_a_restart(
    make_meta: Callable[[], MetaManager],
) -> None:
    plan = SnapshotProgress(
        (TableProgress("db.a", [["int", "7"]], 7),), FilterCoverage("db\\.a,db\\.b", "db\\.tmp")
    )
    cursor = replace(pos(100), snapshot=plan)
    first = make_meta()
    first.start()
    first.subscribe(A)
    first.update_cursor(A, cursor)
    assert first.get_cursor(A) == cursor
    if isinstance(first, MemoryMetaManager):
        return  # nothing survives a memory manager's stop
    first.stop()
    first.start()  # loaded again from its store
    assert first.get_cursor(A) == cursor


def test_cursor_needs_subscription(meta: MetaManager) -> None:
    with pytest.raises(NotSubscribed, match="1001"):
        meta.update_cursor(A, pos(1))


# -- batches -------------------------------------------------------------------------------


def test_batch_ids_start_at_one_per_client(meta: MetaManager) -> None:
    meta.subscribe(A)
    meta.subscribe(B)
    assert [meta.add_batch(A, span(i, i + 1)) for i in range(3)] == [1, 2, 3]
    assert meta.add_batch(B, span(0, 1)) == 1
    assert meta.list_all_batch_ids(A) == [1, 2, 3]
    assert meta.get_batch(A, 2) == span(1, 2)
    assert meta.get_batch(A, 9) is None
    assert meta.get_batch(OTHER, 1) is None


def test_first_and_last_batch(meta: MetaManager) -> None:
    meta.subscribe(A)
    assert meta.get_first_batch(A) is None and meta.get_last_batch(A) is None
    for i in range(3):
        meta.add_batch(A, span(i * 10, i * 10 + 9))
    assert meta.get_first_batch(A) == span(0, 9)
    assert meta.get_last_batch(A) == span(20, 29)


def test_remove_batches_in_order(meta: MetaManager) -> None:
    meta.subscribe(A)
    for i in range(3):
        meta.add_batch(A, span(i, i, ack=i))
    assert meta.remove_batch(A, 1) == span(0, 0, ack=0)
    assert meta.remove_batch(A, 2) == span(1, 1, ack=1)
    assert meta.list_all_batch_ids(A) == [3]


def test_remove_not_first_batch_raises_canal_message(meta: MetaManager) -> None:
    meta.subscribe(A)
    for i in range(3):
        meta.add_batch(A, span(i, i))
    with pytest.raises(BatchOutOfOrder, match=r"^batchId:2 is not the firstly:1$") as info:
        meta.remove_batch(A, 2)
    assert (info.value.batch_id, info.value.first_batch_id) == (2, 1)
    assert meta.list_all_batch_ids(A) == [1, 2, 3], "nothing removed"


@pytest.mark.parametrize("batch_id", [0, 4, -1])
def test_remove_unknown_batch_raises_naming_it(meta: MetaManager, batch_id: int) -> None:
    meta.subscribe(A)
    for i in range(3):
        meta.add_batch(A, span(i, i))
    with pytest.raises(UnknownBatch, match=f"batchId:{batch_id} ") as info:
        meta.remove_batch(A, batch_id)
    assert info.value.batch_id == batch_id


def test_remove_twice_raises(meta: MetaManager) -> None:
    meta.subscribe(A)
    meta.add_batch(A, span(0, 1))
    meta.remove_batch(A, 1)
    with pytest.raises(UnknownBatch):
        meta.remove_batch(A, 1)


def test_remove_for_client_without_batches_raises(meta: MetaManager) -> None:
    with pytest.raises(UnknownBatch):
        meta.remove_batch(B, 1)


def test_clear_all_batches_keeps_ids_increasing(meta: MetaManager) -> None:
    meta.subscribe(A)
    meta.add_batch(A, span(0, 1))
    meta.add_batch(A, span(1, 2))
    meta.clear_all_batches(A)
    assert meta.list_all_batch_ids(A) == []
    assert meta.get_first_batch(A) is None
    assert meta.add_batch(A, span(2, 3)) == 3
    meta.clear_all_batches(B)  # no batches: fine


def test_add_batch_needs_subscription(meta: MetaManager) -> None:
    with pytest.raises(NotSubscribed):
        meta.add_batch(A, span(0, 1))


def test_concurrent_add_batch_gives_unique_ids(meta: MetaManager) -> None:
    meta.subscribe(A)
    ids: list[int] = []
    lock = threading.Lock()

    def add() -> None:
        for i in range(200):
            batch_id = meta.add_batch(A, span(i, i))
            with lock:
                ids.append(batch_id)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2)
    assert sorted(ids) == list(range(1, 801))
    assert meta.list_all_batch_ids(A) == list(range(1, 801))


def test_stop_then_start_is_empty_for_memory() -> None:
    manager = MemoryMetaManager()
    manager.start()
    manager.subscribe(A)
    manager.update_cursor(A, pos(1))
    manager.stop()
    manager.start()
    assert not manager.has_subscribe(A)
    assert manager.get_cursor(A) is None
