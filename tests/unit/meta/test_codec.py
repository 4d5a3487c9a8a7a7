"""JSON codec of positions and meta files (canal's shapes)."""

from __future__ import annotations

import json

import pytest

from bridge.meta import (
    ClientIdentity,
    MetaCodecError,
    decode_entry_position,
    decode_log_position,
    dumps_log_position,
    encode_entry_position,
    encode_log_position,
    loads_log_position,
)
from bridge.meta.codec import dumps_meta_file, loads_meta_file
from bridge.position import EntryPosition, LogIdentity, LogPosition
from tests.unit.meta.helpers import pos

CANAL_ZK_CURSOR = (
    '{"@type":"com.alibaba.otter.canal.protocol.position.LogPosition",'
    '"identity":{"slaveId":-1,"sourceAddress":{"address":"localhost","port":3306}},'
    '"postion":{"gtid":"","included":false,"journalName":"mysql-bin.000003",'
    '"position":1234,"serverId":1,"timestamp":1507704547000}}'
)


@pytest.mark.parametrize(
    "position",
    [
        pos(4),
        pos(4, gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", included=True),
        LogPosition(LogIdentity("db.example.com:3307", 7), EntryPosition(timestamp=5)),
        LogPosition(LogIdentity("[::1]:3306", 7), EntryPosition("f", 1)),
        LogPosition(LogIdentity("unix-socket", 0), EntryPosition()),
    ],
)
def test_log_position_round_trip(position: LogPosition) -> None:
    assert loads_log_position(dumps_log_position(position)) == position
    assert decode_log_position(encode_log_position(position)) == position


def test_reads_canal_zookeeper_cursor() -> None:
    position = loads_log_position(CANAL_ZK_CURSOR)
    assert position == LogPosition(
        LogIdentity("localhost:3306", -1),
        EntryPosition("mysql-bin.000003", 1234, 1, None, 1507704547000, False),
    )


def test_writes_canal_shape() -> None:
    encoded = json.loads(dumps_log_position(pos(4)))
    assert encoded["@type"] == "com.alibaba.otter.canal.protocol.position.LogPosition"
    assert encoded["identity"] == {
        "slaveId": 1234,
        "sourceAddress": {"address": "127.0.0.1", "port": 3306},
    }
    assert encoded["postion"] == {
        "journalName": "mysql-bin.000001",
        "position": 4,
        "serverId": 1,
        "timestamp": 1_700_000_000_004,
        "included": False,
    }


def test_accepts_correct_spelling_of_position() -> None:
    encoded = encode_log_position(pos(9))
    encoded["position"] = encoded.pop("postion")
    assert decode_log_position(encoded) == pos(9)


def test_java_ipv6_address_gets_brackets() -> None:
    data = {"identity": {"slaveId": 1, "sourceAddress": {"address": "0:0:0:0:0:0:0:1", "port": 1}}}
    data["postion"] = {"journalName": "f", "position": 4}
    assert decode_log_position(data).identity.source_address == "[0:0:0:0:0:0:0:1]:1"


def test_entry_position_omits_none() -> None:
    assert encode_entry_position(EntryPosition()) == {"included": False}
    assert decode_entry_position({}) == EntryPosition()


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d["postion"].__setitem__("position", "4"), "$.postion.position"),
        (lambda d: d["postion"].__setitem__("position", True), "$.postion.position"),
        (lambda d: d["postion"].__setitem__("position", -4), "$.postion.position"),
        (lambda d: d["postion"].__setitem__("included", "no"), "$.postion.included"),
        (lambda d: d["identity"].pop("slaveId"), "$.identity.slaveId"),
        (lambda d: d.__setitem__("identity", []), "$.identity"),
        (lambda d: d["identity"]["sourceAddress"].pop("address"), "address"),
        (lambda d: d.__setitem__("postion", 5), "$.postion"),
    ],
)
def test_decode_errors_name_the_field(mutate: object, where: str) -> None:
    data = encode_log_position(pos(4))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(MetaCodecError) as info:
        decode_log_position(data)
    assert where in str(info.value)


def test_not_json() -> None:
    with pytest.raises(MetaCodecError, match="not JSON"):
        loads_log_position(b'{"identity": {')
    with pytest.raises(MetaCodecError, match="not JSON"):
        loads_log_position(b"\xff\xfe\x00garbage")


def test_meta_file_round_trip() -> None:
    clients = [
        (ClientIdentity("example", 1001, r"shop\..*"), pos(4)),
        (ClientIdentity("example", 1002), None),
    ]
    destination, decoded = loads_meta_file(dumps_meta_file("example", clients))
    assert destination == "example"
    assert decoded == clients
    assert decoded[0][0].filter == r"shop\..*"


def test_meta_file_shape() -> None:
    document = json.loads(dumps_meta_file("example", [(ClientIdentity("example"), pos(4))]))
    assert document["destination"] == "example"
    (data,) = document["clientDatas"]
    assert data["clientIdentity"] == {"clientId": 1001, "destination": "example", "filter": ""}
    assert data["cursor"]["postion"]["journalName"] == "mysql-bin.000001"


def test_meta_file_client_of_another_destination_is_an_error() -> None:
    data = dumps_meta_file("example", [(ClientIdentity("other"), None)])
    with pytest.raises(MetaCodecError, match="differs"):
        loads_meta_file(data)


@pytest.mark.parametrize(
    "document",
    ['{"clientDatas": []}', '{"destination": "d", "clientDatas": {}}', "[]", '"x"'],
)
def test_meta_file_shape_errors(document: str) -> None:
    with pytest.raises(MetaCodecError):
        loads_meta_file(document)
