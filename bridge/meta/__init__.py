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
    CorruptMetaFile,
    MetaAlreadyStarted,
    MetaCodecError,
    MetaError,
    MetaNotRunning,
    MetaWriteFailed,
    NotSubscribed,
    UnknownBatch,
)
from bridge.meta.file_mixed import FileMixedMetaManager
from bridge.meta.memory import MemoryMetaManager

__all__ = [
    "BatchOutOfOrder",
    "ClientIdentity",
    "CorruptMetaFile",
    "FileMixedMetaManager",
    "MemoryMetaManager",
    "MetaAlreadyStarted",
    "MetaCodecError",
    "MetaError",
    "MetaManager",
    "MetaNotRunning",
    "MetaWriteFailed",
    "NotSubscribed",
    "UnknownBatch",
    "decode_entry_position",
    "decode_log_position",
    "dumps_log_position",
    "encode_entry_position",
    "encode_log_position",
    "loads_log_position",
]
