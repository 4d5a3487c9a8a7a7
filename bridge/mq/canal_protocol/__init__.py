"""canal's protobuf wire format: the schema (``entry_protocol.proto``, ``canal_packet.proto``,
written from canal's published schema, with generated ``*_pb2`` modules), our model written
as canal's ``Entry`` (``convert``) and the ``Packet`` envelope of a Kafka record
(``envelope``). The encoder that batches and routes entries is ``bridge.mq.protobuf_encoder``.
"""

from bridge.mq.canal_protocol.convert import canal_entry, entry_with_rows, with_rows
from bridge.mq.canal_protocol.envelope import entry_cost, packet, packet_size

__all__ = [
    "canal_entry",
    "entry_cost",
    "entry_with_rows",
    "packet",
    "packet_size",
    "with_rows",
]
