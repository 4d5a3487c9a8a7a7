"""The value of a Kafka record in canal's protobuf format: a ``Packet`` of type MESSAGES whose
body is a ``Messages`` listing serialized ``Entry``s, as canal's
``CanalMessageSerializerUtil.serializer`` writes it. canal has two spellings and uses both in
MQ mode; we follow it:

* ``raw`` (no dynamic topic and no partition hash: canal sends its store's raw entries):
  ``Packet{type=MESSAGES, body=Messages{batch_id, messages}}``, no version;
* routed (either is set: canal rebuilds the message per topic / partition):
  ``Packet{version=1, type=MESSAGES, body=Messages{messages}}``, *without* the batch id, so a
  consumer reads batch id 0 (canal's serializer never sets it on that path).

Both read the same with canal's ``CanalMessageDeserializer`` (no compression).
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.mq.canal_protocol import canal_packet_pb2 as packets

PACKET_VERSION = 1
# Packet: type (tag + MESSAGES), the body's tag; routed: version (tag + 1) too.
_TYPE = 2
_BODY_TAG = 1
_VERSION = 2
_MESSAGES_TAG = 1  # field 2 of Messages, length-delimited: one byte


def packet(entries: Sequence[bytes], batch_id: int, *, raw: bool) -> bytes:
    """The record value carrying serialized entries ``entries`` of batch ``batch_id``."""
    if raw:
        body = packets.Messages(batch_id=batch_id, messages=entries)
        envelope = packets.Packet(type=packets.MESSAGES, body=body.SerializeToString())
    else:
        body = packets.Messages(messages=entries)
        envelope = packets.Packet(
            version=PACKET_VERSION, type=packets.MESSAGES, body=body.SerializeToString()
        )
    return envelope.SerializeToString()


def entry_cost(entry_size: int) -> int:
    """Bytes one serialized entry of ``entry_size`` bytes adds to a packet's body."""
    return _MESSAGES_TAG + varint_size(entry_size) + entry_size


def packet_size(body_entries: int, batch_id: int, *, raw: bool) -> int:
    """The exact size of ``packet(...)`` whose entries' ``entry_cost``s add up to
    ``body_entries``: what the oversize policy measures a record by before writing it."""
    body = body_entries
    if raw and batch_id:
        body += 1 + varint_size(batch_id)
    envelope = _TYPE if raw else _VERSION + _TYPE
    return envelope + (_BODY_TAG + varint_size(body) + body if body else 0)


def varint_size(value: int) -> int:
    """Bytes of a protobuf varint (negative int64s take ten, as two's complement)."""
    if value < 0:
        return 10
    return max(1, (value.bit_length() + 6) // 7)
