"""The seeded offset file read back by an independent reader of Java's serialization stream
(the subset ObjectOutputStream writes for a HashMap<byte[], byte[]>), so that a wrong handle,
length or descriptor fails here rather than as Debezium starting from the wrong place."""

from __future__ import annotations

import json
import struct

import pytest

from bench.compare.debezium_offsets import (
    binlog_offset_entry,
    java_serialized_byte_map,
    offset_file,
)

# From the JDK (serialver java.util.HashMap / [B): independent of the writer's constants.
HASHMAP_UID = 362498820763181265
BYTE_ARRAY_UID = -5984413125824719648


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.handles = data, 0, []

    def take(self, n: int) -> bytes:
        chunk = self.data[self.at : self.at + n]
        assert len(chunk) == n, "stream ends early"
        self.at += n
        return chunk

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def utf(self) -> str:
        (length,) = self.unpack(">H")
        return self.take(length).decode()

    def class_desc(self) -> tuple[str, int, list[tuple[str, str]]]:
        tag = self.take(1)[0]
        if tag == 0x71:  # TC_REFERENCE
            (handle,) = self.unpack(">I")
            desc = self.handles[handle - 0x7E0000]
            assert isinstance(desc, tuple), "a reference to something not a class descriptor"
            return desc
        assert tag == 0x72, f"expected a class descriptor, got {tag:#x}"
        name = self.utf()
        uid, _flags, count = self.unpack(">qBH")
        fields = []
        for _ in range(count):
            code = chr(self.take(1)[0])
            fields.append((code, self.utf()))
        assert self.take(2) == b"\x78\x70"  # end of annotations, no superclass
        desc = (name, uid, fields)
        self.handles.append(desc)
        return desc

    def byte_array(self) -> bytes:
        assert self.take(1)[0] == 0x75  # TC_ARRAY
        name, uid, _ = self.class_desc()
        assert (name, uid) == ("[B", BYTE_ARRAY_UID)
        self.handles.append(None)
        (length,) = self.unpack(">i")
        return self.take(length)

    def hash_map(self) -> dict[bytes, bytes]:
        assert self.take(4) == b"\xac\xed\x00\x05"
        assert self.take(1)[0] == 0x73  # TC_OBJECT
        name, uid, fields = self.class_desc()
        assert (name, uid) == ("java.util.HashMap", HASHMAP_UID)
        assert fields == [("F", "loadFactor"), ("I", "threshold")]
        self.handles.append(None)  # the map itself
        load_factor, threshold = self.unpack(">fi")
        assert load_factor == pytest.approx(0.75)
        assert self.take(2) == b"\x77\x08"  # block data: capacity, size
        capacity, size = self.unpack(">ii")
        assert size <= threshold <= capacity
        entries = {}
        for _ in range(size):
            key = self.byte_array()
            entries[key] = self.byte_array()
        assert self.take(1) == b"\x78"
        assert self.at == len(self.data), "bytes after the map"
        return entries


def test_the_offset_file_holds_one_entry_keyed_by_engine_and_server() -> None:
    data = offset_file("cmpx", "mariadb-bin.000012", 389, "0-1-4711")

    entries = Reader(data).hash_map()

    ((key, value),) = entries.items()
    assert json.loads(key) == ["kafka", {"server": "cmpx"}]
    assert json.loads(value) == {"file": "mariadb-bin.000012", "pos": 389, "gtids": "0-1-4711"}
    assert b" " not in key  # the JSON converter's compact form: the store matches on bytes


def test_without_gtids_the_value_has_file_and_position_only() -> None:
    _, value = binlog_offset_entry("p", "bin.000001", 4, None)
    assert json.loads(value) == {"file": "bin.000001", "pos": 4}


@pytest.mark.parametrize("count", [0, 1, 2, 13, 40])
def test_maps_of_any_size_read_back_entry_for_entry(count: int) -> None:
    entries = [(f"key{i}".encode(), bytes(range(i % 256)) * 3) for i in range(count)]

    read = Reader(java_serialized_byte_map(entries)).hash_map()

    assert read == dict(entries)


def test_the_reader_refuses_a_truncated_stream() -> None:
    """The check above can fail: a stream cut short is refused."""
    data = offset_file("cmpx", "mariadb-bin.000012", 389, None)
    with pytest.raises(AssertionError):
        Reader(data[:-3]).hash_map()
