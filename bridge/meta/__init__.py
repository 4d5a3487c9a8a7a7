"""Subscriptions, cursors and outstanding batches of clients (canal's meta module)."""

from bridge.meta.base import ClientCursor, ClientIdentity, CursorStore, MetaManager
from bridge.meta.codec import (
    decode_entry_position,
    decode_log_position,
    dumps_log_position,
    encode_entry_position,
    encode_log_position,
    loads_log_position,
)
from bridge.meta.exceptions import (
    BatchOutOfOrder,
    CorruptCursor,
    CorruptMetaFile,
    MetaAlreadyStarted,
    MetaCodecError,
    MetaError,
    MetaNotRunning,
    MetaStoreUnavailable,
    MetaWriteFailed,
    NotSubscribed,
    UnknownBatch,
)
from bridge.meta.factory import CURSOR_STORES, StoreContext, build_meta_manager
from bridge.meta.file_store import FileCursorStore
from bridge.meta.memory import MemoryMetaManager
from bridge.meta.persistent import PersistentMetaManager
from bridge.meta.zookeeper_store import ZooKeeperCursorStore

__all__ = [
    "CURSOR_STORES",
    "BatchOutOfOrder",
    "ClientCursor",
    "ClientIdentity",
    "CorruptCursor",
    "CorruptMetaFile",
    "CursorStore",
    "FileCursorStore",
    "MemoryMetaManager",
    "MetaAlreadyStarted",
    "MetaCodecError",
    "MetaError",
    "MetaManager",
    "MetaNotRunning",
    "MetaStoreUnavailable",
    "MetaWriteFailed",
    "NotSubscribed",
    "PersistentMetaManager",
    "StoreContext",
    "UnknownBatch",
    "ZooKeeperCursorStore",
    "build_meta_manager",
    "decode_entry_position",
    "decode_log_position",
    "dumps_log_position",
    "encode_entry_position",
    "encode_log_position",
    "loads_log_position",
]
