"""The one place a destination's meta manager is built from the config (``meta.store``), for
the plain runner and for HA alike.

``memory`` (``MEMORY``) is the memory manager alone; every other kind is a ``CursorStore``
wrapped by ``PersistentMetaManager`` (memory + store + ``meta.flush_period_ms``).
``CURSOR_STORES`` maps each kind to the store's constructor: registering a store is one entry
there (see ``bridge.meta.base.CursorStore``) and one name in ``MetaConfig.store``'s
``Literal``, which a test pins to ``MEMORY`` and this registry's keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.config import MetaConfig
from bridge.meta.base import CursorStore, MetaManager
from bridge.meta.exceptions import MetaError
from bridge.meta.file_store import FileCursorStore
from bridge.meta.memory import MemoryMetaManager
from bridge.meta.persistent import PersistentMetaManager
from bridge.meta.zookeeper_store import DEFAULT_ROOT, ZooKeeperCursorStore


@dataclass(frozen=True, slots=True)
class StoreContext:
    """What a store may need beyond ``MetaConfig``: in HA mode (``bridge.ha.HaNode``) the
    process's ZooKeeper session and root, and the fence's write guard."""

    zookeeper: Any = None  # a started kazoo KazooClient
    zookeeper_root: str = DEFAULT_ROOT
    may_write: Callable[[str], bool] | None = None


StoreConstructor = Callable[[MetaConfig, StoreContext], CursorStore]


def _file_store(config: MetaConfig, _context: StoreContext) -> CursorStore:
    return FileCursorStore(config.dir)


def _zookeeper_store(_config: MetaConfig, context: StoreContext) -> CursorStore:
    if context.zookeeper is None:
        raise MetaError("meta.store zookeeper needs the HA node (a zookeeper section)")
    return ZooKeeperCursorStore(context.zookeeper, context.zookeeper_root, context.may_write)


# The meta.store kind without a cursor store: acked cursors live as long as the process.
MEMORY = "memory"

# meta.store kind -> the constructor of its cursor store
CURSOR_STORES: dict[str, StoreConstructor] = {
    "file": _file_store,
    "zookeeper": _zookeeper_store,
}


def build_meta_manager(config: MetaConfig, context: StoreContext | None = None) -> MetaManager:
    """A new, unstarted meta manager for one destination's instance."""
    if config.store == MEMORY:
        return MemoryMetaManager()
    make = CURSOR_STORES.get(config.store)
    if make is None:
        raise MetaError(
            f"meta.store {config.store!r} has no cursor store; registered: "
            f"{', '.join(sorted([MEMORY, *CURSOR_STORES]))}"
        )
    store = make(config, context or StoreContext())
    return PersistentMetaManager(MemoryMetaManager(), store, config.flush_period_ms)
