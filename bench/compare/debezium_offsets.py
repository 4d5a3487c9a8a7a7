"""Debezium Server's offset file, pre-seeded so that it starts at the workload's first position.

Debezium Server keeps its source offsets with Kafka Connect's ``FileOffsetBackingStore``: one
Java-serialized ``java.util.HashMap<byte[], byte[]>`` whose keys and values are the JSON the
offset converter wrote (``JsonConverter``, schemas off). The key names the engine (Debezium
Server names it after its sink type, ``kafka``) and the source partition (``{"server":
topic.prefix}`` for the MySQL and MariaDB connectors); the value is the binlog position
(``{"file": ..., "pos": ...}``). With ``snapshot.mode=recovery`` the connector rebuilds its schema
history from the tables as they are now, then streams from this position.

Only the Java serialization stream grammar needed for that one map is written here (Java Object
Serialization Specification, chapter 6), so the file is made without a JVM.
"""

from __future__ import annotations

import json
import struct

MAGIC = b"\xac\xed\x00\x05"
TC_NULL, TC_REFERENCE, TC_CLASSDESC, TC_OBJECT = 0x70, 0x71, 0x72, 0x73
TC_ARRAY, TC_BLOCKDATA, TC_ENDBLOCKDATA = 0x75, 0x77, 0x78
SC_WRITE_METHOD, SC_SERIALIZABLE = 0x01, 0x02
BASE_HANDLE = 0x7E0000
HASHMAP_UID = 0x0507DAC1C31660D1  # java.util.HashMap's serialVersionUID
BYTE_ARRAY_UID = -0x530CE807F9F7AB20  # byte[]'s serialVersionUID (0xACF317F8060854E0)
ENGINE_NAME = "kafka"  # Debezium Server names its engine after the sink type


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def java_serialized_byte_map(entries: list[tuple[bytes, bytes]]) -> bytes:
    """``entries`` as the bytes of ``ObjectOutputStream.writeObject(HashMap<byte[], byte[]>)``.

    Handles are numbered in the order objects appear: 0 the HashMap class descriptor, 1 the
    map, 2 the ``[B`` class descriptor, then one per array."""
    out = bytearray(MAGIC)
    out += bytes([TC_OBJECT, TC_CLASSDESC]) + _utf("java.util.HashMap")
    out += struct.pack(">qB", HASHMAP_UID, SC_SERIALIZABLE | SC_WRITE_METHOD)
    out += struct.pack(">H", 2)  # fields, primitives by name: loadFactor, threshold
    out += b"F" + _utf("loadFactor") + b"I" + _utf("threshold")
    out += bytes([TC_ENDBLOCKDATA, TC_NULL])  # no annotations, no serializable superclass
    capacity = 16
    while len(entries) > capacity * 0.75:
        capacity *= 2
    out += struct.pack(">fi", 0.75, int(capacity * 0.75))  # defaultWriteObject's fields
    out += bytes([TC_BLOCKDATA, 8]) + struct.pack(">ii", capacity, len(entries))
    array_class: int | None = None
    for item in (part for entry in entries for part in entry):
        out.append(TC_ARRAY)
        if array_class is None:
            out += bytes([TC_CLASSDESC]) + _utf("[B")
            out += struct.pack(">qBH", BYTE_ARRAY_UID, SC_SERIALIZABLE, 0)
            out += bytes([TC_ENDBLOCKDATA, TC_NULL])
            array_class = BASE_HANDLE + 2
        else:
            out += bytes([TC_REFERENCE]) + struct.pack(">I", array_class)
        out += struct.pack(">i", len(item)) + item
    out.append(TC_ENDBLOCKDATA)
    return bytes(out)


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def binlog_offset_entry(
    topic_prefix: str, file: str, pos: int, gtids: str | None
) -> tuple[bytes, bytes]:
    """The (key, value) Debezium's MySQL/MariaDB connector stores for a binlog position.

    ``gtids``: the GTID state there: MariaDB's ``@@gtid_binlog_pos`` (the MariaDB connector of
    3.0 fails without one: a null GTID set when it registers with the server), or MySQL's
    executed GTID set (the MySQL connector then asks the server for every transaction outside
    it, as a replica does). Either resumes after those GTIDs, that is at ``file``/``pos`` when
    no transaction lies between."""
    key = _json([ENGINE_NAME, {"server": topic_prefix}])
    value: dict[str, object] = {"file": file, "pos": pos}
    if gtids:
        value["gtids"] = gtids
    return key, _json(value)


def offset_file(topic_prefix: str, file: str, pos: int, gtids: str | None) -> bytes:
    return java_serialized_byte_map([binlog_offset_entry(topic_prefix, file, pos, gtids)])
