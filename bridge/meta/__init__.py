"""Subscriptions, cursors and outstanding batches of clients (canal's meta module)."""

from bridge.meta.base import ClientIdentity, MetaManager
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
from bridge.meta.file_mixed import FileMixedMetaManager
from bridge.meta.memory import MemoryMetaManager
from bridge.meta.zookeeper_mixed import ZooKeeperMixedMetaManager

__all__ = [
    "BatchOutOfOrder",
    "ClientIdentity",
    "CorruptCursor",
    "CorruptMetaFile",
    "FileMixedMetaManager",
    "MemoryMetaManager",
    "MetaAlreadyStarted",
    "MetaCodecError",
    "MetaError",
    "MetaManager",
    "MetaNotRunning",
    "MetaStoreUnavailable",
    "MetaWriteFailed",
    "NotSubscribed",
    "UnknownBatch",
    "ZooKeeperMixedMetaManager",
    "decode_entry_position",
    "decode_log_position",
    "dumps_log_position",
    "encode_entry_position",
    "encode_log_position",
    "loads_log_position",
]
