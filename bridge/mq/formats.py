"""The output formats a destination can write, by name, and the one place that picks its
encoder: once, when the destination is built (``rows_encoder``).

A format is registered as a factory of its ``RowsEncoder`` (see that protocol for an example);
the configuration names the format, ``mq.format``: one of ``ENCODERS``' keys
(``flat_message``: canal's ``canal-json``; ``protobuf``: canal's protobuf ``Message``; canal's
boolean ``mq.flat_message`` is an alias).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from bridge import native
from bridge.config import DEFAULT_MAX_RECORD_BYTES, MqConfig
from bridge.mq.flat_encoder import CompiledFlatMessageEncoder, FlatMessageEncoder
from bridge.mq.key_change import with_key_change
from bridge.mq.records import Placement, RecordBuilder, RowsEncoder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from bridge.mq.tombstones import with_tombstones

# A format's encoder, from the destination's mq settings, its placement and the compiled
# module (None: pure Python).
EncoderFactory = Callable[[MqConfig, Placement, native.Compiled | None], RowsEncoder]


def flat_message_encoder(
    mq: MqConfig, placement: Placement, compiled: native.Compiled | None
) -> RowsEncoder:
    if compiled is None:
        return FlatMessageEncoder(placement, mq.ddl, mq.oversize)
    return CompiledFlatMessageEncoder(placement, mq.ddl, mq.oversize, compiled=compiled)


def protobuf_encoder(
    mq: MqConfig, placement: Placement, compiled: native.Compiled | None
) -> RowsEncoder:
    """canal's protobuf messages (``mq.format: protobuf``): pure Python, per batch.
    Imported here, when a destination asks for it: protobuf's runtime and canal's message
    classes cost a process 8 MB that flat-message destinations need not pay."""
    from bridge.mq.protobuf_encoder import ProtobufMessageEncoder

    return ProtobufMessageEncoder(
        placement, mq.ddl, mq.oversize, dynamic_topic=bool(mq.dynamic_topic)
    )


ENCODERS: dict[str, EncoderFactory] = {
    "flat_message": flat_message_encoder,
    "protobuf": protobuf_encoder,
}


class Loaded(Enum):
    """``compiled=Loaded.MODULE``: whatever ``bridge.native`` loaded, read at the call."""

    MODULE = "module"


def format_name(mq: MqConfig) -> str:
    """The registered format a destination's settings ask for (``mq.format``)."""
    return mq.format


def placement_of(mq: MqConfig, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Placement:
    """canal's routing of a destination's settings, with the producer's record size limit."""
    return Placement(
        CanalTopicRouter(mq.topic, mq.dynamic_topic),
        CanalPartitionRouter(
            mq.partition_hash, database_hash=mq.database_hash, fixed_partition=mq.partition
        ),
        TopicPartitions(mq.partitions, mq.dynamic_topic_partitions),
        max_record_bytes,
    )


def rows_encoder(
    mq: MqConfig,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    compiled: native.Compiled | Loaded | None = Loaded.MODULE,
) -> RowsEncoder:
    """The encoder of a destination: its format's, compiled where the module is loaded (or
    as ``compiled`` says: None for pure Python), with ``mq.tombstones`` after it and
    ``mq.key_change`` applied before both (so every format gets them, once:
    ``bridge.mq.tombstones``, ``bridge.mq.key_change``)."""
    module = native.module if compiled is Loaded.MODULE else compiled
    placement = placement_of(mq, max_record_bytes)
    encoder = ENCODERS[format_name(mq)](mq, placement, module)
    encoder = with_tombstones(mq.tombstones, encoder, placement)
    return with_key_change(mq.key_change, encoder, placement)


def record_builder(
    mq: MqConfig,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    compiled: native.Compiled | Loaded | None = Loaded.MODULE,
) -> RecordBuilder:
    """Everything a destination's MQ worker needs to turn batches into records."""
    return RecordBuilder(rows_encoder(mq, max_record_bytes, compiled))
