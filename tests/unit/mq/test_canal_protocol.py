"""canal's protobuf schema as we ship it: the committed generated modules are what our .proto
files make, field numbers are canal's, and the envelope's size arithmetic is exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.mq.canal_protocol import canal_packet_pb2 as packets
from bridge.mq.canal_protocol import entry_cost, packet, packet_size
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.canal_protocol.generate import HERE, generate


def test_committed_modules_are_what_the_proto_files_generate(tmp_path: Path) -> None:
    written = generate(tmp_path)
    assert len(written) == 4
    for path in written:
        committed = HERE / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed.name} is stale: "
            "run var/venv/bin/python -m bridge.mq.canal_protocol.generate"
        )


# canal 1.1.8's EntryProtocol.proto / CanalProtocol.proto: message -> {field: (number, type)}.
# Types as descriptor type codes: 3 int64, 5 int32, 8 bool, 9 string, 11 message, 12 bytes,
# 14 enum.
CANAL_FIELDS = {
    pb.Entry: {"header": (1, 11), "entryType": (2, 14), "storeValue": (3, 12)},
    pb.Header: {
        "version": (1, 5),
        "logfileName": (2, 9),
        "logfileOffset": (3, 3),
        "serverId": (4, 3),
        "serverenCode": (5, 9),
        "executeTime": (6, 3),
        "sourceType": (7, 14),
        "schemaName": (8, 9),
        "tableName": (9, 9),
        "eventLength": (10, 3),
        "eventType": (11, 14),
        "props": (12, 11),
        "gtid": (13, 9),
    },
    pb.Column: {
        "index": (1, 5),
        "sqlType": (2, 5),
        "name": (3, 9),
        "isKey": (4, 8),
        "updated": (5, 8),
        "isNull": (6, 8),
        "props": (7, 11),
        "value": (8, 9),
        "length": (9, 5),
        "mysqlType": (10, 9),
    },
    pb.RowData: {"beforeColumns": (1, 11), "afterColumns": (2, 11), "props": (3, 11)},
    pb.RowChange: {
        "tableId": (1, 3),
        "eventType": (2, 14),
        "isDdl": (10, 8),
        "sql": (11, 9),
        "rowDatas": (12, 11),
        "props": (13, 11),
        "ddlSchemaName": (14, 9),
    },
    pb.TransactionBegin: {
        "executeTime": (1, 3),
        "transactionId": (2, 9),
        "props": (3, 11),
        "threadId": (4, 3),
    },
    pb.TransactionEnd: {"executeTime": (1, 3), "transactionId": (2, 9), "props": (3, 11)},
    pb.Pair: {"key": (1, 9), "value": (2, 9)},
    packets.Packet: {
        "magic_number": (1, 5),
        "version": (2, 5),
        "type": (3, 14),
        "compression": (4, 14),
        "body": (5, 12),
    },
    packets.Messages: {"batch_id": (1, 3), "messages": (2, 12)},
}


@pytest.mark.parametrize("message", list(CANAL_FIELDS), ids=lambda m: m.DESCRIPTOR.name)
def test_field_numbers_and_types_are_canals(message: type) -> None:
    fields = {f.name: (f.number, f.type) for f in message.DESCRIPTOR.fields}  # type: ignore[attr-defined]
    assert fields == CANAL_FIELDS[message]


def test_enum_numbers_are_canals() -> None:
    assert pb.EntryType.Value("TRANSACTIONEND") == 3
    assert pb.EntryType.Value("GTIDLOG") == 5
    assert [pb.EventType.Value(n) for n in ("INSERT", "DELETE", "CINDEX", "MHEARTBEAT")] == [
        1,
        3,
        10,
        15,
    ]
    assert pb.Type.Value("MYSQL") == 2
    assert packets.PacketType.Value("MESSAGES") == 7
    assert packets.Compression.Value("NONE") == 1


def test_a_false_is_null_is_on_the_wire_as_canal_writes_it() -> None:
    assert pb.Column(isNull=False).SerializeToString() == b"\x30\x00"
    assert pb.Column().SerializeToString() == b""


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("sizes", [[], [1], [5, 127, 128], [20_000, 3], [300] * 600])
@pytest.mark.parametrize("batch_id", [1, 300, 2**40])
def test_packet_size_is_exact(raw: bool, sizes: list[int], batch_id: int) -> None:
    entries = [b"x" * n for n in sizes]
    value = packet(entries, batch_id, raw=raw)
    assert packet_size(sum(entry_cost(n) for n in sizes), batch_id, raw=raw) == len(value)


def test_raw_and_routed_envelopes_are_canals_two_spellings() -> None:
    entry = pb.Entry(entryType=pb.ROWDATA).SerializeToString()
    raw = packet([entry], 9, raw=True)
    # canal's raw branch: type, then the body holding the batch id and the entries.
    assert raw == b"\x18\x07\x2a\x06\x08\x09\x12\x02" + entry
    routed = packet([entry], 9, raw=False)
    # canal's rebuilt-message branch: version 1, type, a body without the batch id.
    assert routed == b"\x10\x01\x18\x07\x2a\x04\x12\x02" + entry
    decoded = packets.Messages.FromString(packets.Packet.FromString(routed).body)
    assert decoded.batch_id == 0
    assert list(decoded.messages) == [entry]
