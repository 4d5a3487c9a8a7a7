"""JSON shapes of positions and meta files, the same as canal's (fastjson) ones.

A cursor written by canal's ZooKeeper or file meta manager reads back here and vice versa, so
a destination can move between canal and canal-bridge without losing its place::

    {"@type": "com.alibaba.otter.canal.protocol.position.LogPosition",
     "identity": {"slaveId": 1234, "sourceAddress": {"address": "10.0.0.1", "port": 3306}},
     "postion": {"journalName": "mysql-bin.000003", "position": 4, "serverId": 1,
                 "gtid": "", "timestamp": 1507704547000, "included": false}}

(``postion`` is canal's spelling; ``position`` is accepted too.) ``None`` fields are left out,
as fastjson does. Decoding checks every type and raises ``MetaCodecError`` with a JSON path.

A cursor with snapshot progress (docs/snapshots.md) has one more key, which canal's fastjson
reader ignores::

    "snapshot": {"tables": [{"table": "shop.orders", "lastKey": [1042], "rows": 1042,
                             "done": false}, ...],
                 "filter": {"regex": "shop\\\\..*", "blackRegex": ""}}

``filter`` is the table filter the destination covers (``FilterCoverage``); a cursor without it
(written before it was recorded) decodes with ``covers`` None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bridge.meta.base import ClientCursor, ClientIdentity
from bridge.meta.exceptions import MetaCodecError
from bridge.position import (
    EntryPosition,
    FilterCoverage,
    LogIdentity,
    LogPosition,
    SnapshotProgress,
    TableProgress,
)

LOG_POSITION_TYPE = "com.alibaba.otter.canal.protocol.position.LogPosition"

JsonObject = dict[str, Any]


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MetaCodecError(where, f"expected an object, got {type(value).__name__}")
    return value


def _optional(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    # bool is an int in Python, but not in JSON
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MetaCodecError(f"{where}.{key}", f"expected {kind.__name__}, got {value!r}")
    return value


def _required(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj or obj[key] is None:
        raise MetaCodecError(f"{where}.{key}", "missing")
    return _optional(obj, key, kind, where)


# -- EntryPosition / LogIdentity / LogPosition -----------------------------------------------


def encode_entry_position(position: EntryPosition) -> JsonObject:
    fields = {
        "journalName": position.journal_name,
        "position": position.position,
        "serverId": position.server_id,
        "gtid": position.gtid,
        "timestamp": position.timestamp,
    }
    encoded: JsonObject = {k: v for k, v in fields.items() if v is not None}
    encoded["included"] = position.included
    return encoded


def decode_entry_position(value: object, where: str = "$") -> EntryPosition:
    obj = _object(value, where)
    position = _optional(obj, "position", int, where)
    if position is not None and position < 0:
        # Never written by canal or by us; left in, the dump request cannot even be encoded.
        raise MetaCodecError(f"{where}.position", f"a binlog offset is never negative: {position}")
    return EntryPosition(
        journal_name=_optional(obj, "journalName", str, where),
        position=position,
        server_id=_optional(obj, "serverId", int, where),
        gtid=_optional(obj, "gtid", str, where) or None,
        timestamp=_optional(obj, "timestamp", int, where),
        included=bool(_optional(obj, "included", bool, where)),
    )


def _encode_address(source_address: str) -> JsonObject:
    """``host:port`` as canal's InetSocketAddress; anything else kept whole in ``address``."""
    host, sep, port = source_address.rpartition(":")
    if sep and host and port.isdigit() and str(int(port)) == port:
        return {"address": host, "port": int(port)}
    return {"address": source_address}


def _decode_address(value: object, where: str) -> str:
    obj = _object(value, where)
    address: str = _required(obj, "address", str, where)
    port = _optional(obj, "port", int, where)
    if port is None:
        return address
    if ":" in address and not address.startswith("["):  # a bare IPv6 address from Java
        address = f"[{address}]"
    return f"{address}:{port}"


def encode_log_position(position: LogPosition) -> JsonObject:
    encoded: JsonObject = {
        "@type": LOG_POSITION_TYPE,
        "identity": {
            "slaveId": position.identity.slave_id,
            "sourceAddress": _encode_address(position.identity.source_address),
        },
        "postion": encode_entry_position(position.position),
    }
    if position.snapshot is not None:
        encoded["snapshot"] = encode_snapshot_progress(position.snapshot)
    return encoded


def encode_snapshot_progress(progress: SnapshotProgress) -> JsonObject:
    encoded: JsonObject = {
        "tables": [
            {"table": t.table, "lastKey": t.last_key, "rows": t.rows, "done": t.done}
            for t in progress.tables
        ]
    }
    if progress.covers is not None:
        covers = progress.covers
        encoded["filter"] = {"regex": covers.regex, "blackRegex": covers.black_regex}
    return encoded


def _decode_coverage(value: object, where: str) -> FilterCoverage | None:
    if value is None:
        return None
    obj = _object(value, where)
    return FilterCoverage(
        regex=_required(obj, "regex", str, where),
        black_regex=_optional(obj, "blackRegex", str, where) or "",
    )


def decode_snapshot_progress(value: object, where: str) -> SnapshotProgress:
    obj = _object(value, where)
    tables = obj.get("tables")
    if not isinstance(tables, list):
        raise MetaCodecError(f"{where}.tables", "expected a list")
    decoded = []
    for i, item in enumerate(tables):
        at = f"{where}.tables[{i}]"
        table = _object(item, at)
        rows = _optional(table, "rows", int, at) or 0
        if rows < 0:
            raise MetaCodecError(f"{at}.rows", f"a row count is never negative: {rows}")
        decoded.append(
            TableProgress(
                table=_required(table, "table", str, at),
                last_key=table.get("lastKey"),
                rows=rows,
                done=bool(_optional(table, "done", bool, at)),
            )
        )
    return SnapshotProgress(tuple(decoded), _decode_coverage(obj.get("filter"), f"{where}.filter"))


def decode_log_position(value: object, where: str = "$") -> LogPosition:
    obj = _object(value, where)
    identity = _object(obj.get("identity"), f"{where}.identity")
    key = "postion" if "postion" in obj else "position"
    return LogPosition(
        identity=LogIdentity(
            source_address=_decode_address(
                identity.get("sourceAddress"), f"{where}.identity.sourceAddress"
            ),
            slave_id=_required(identity, "slaveId", int, f"{where}.identity"),
        ),
        position=decode_entry_position(obj.get(key), f"{where}.{key}"),
        snapshot=None
        if obj.get("snapshot") is None
        else decode_snapshot_progress(obj["snapshot"], f"{where}.snapshot"),
    )


def dumps_log_position(position: LogPosition) -> bytes:
    return json.dumps(encode_log_position(position), separators=(",", ":")).encode()


def loads_log_position(data: bytes | str) -> LogPosition:
    return decode_log_position(_parse(data))


# -- meta.dat (canal's FileMetaInstanceData) -------------------------------------------------


def encode_client_identity(client: ClientIdentity) -> JsonObject:
    return {
        "clientId": client.client_id,
        "destination": client.destination,
        "filter": client.filter,
    }


def decode_client_identity(value: object, where: str = "$") -> ClientIdentity:
    obj = _object(value, where)
    return ClientIdentity(
        destination=_required(obj, "destination", str, where),
        client_id=_required(obj, "clientId", int, where),
        filter=_optional(obj, "filter", str, where) or "",
    )


def dumps_meta_file(destination: str, clients: Sequence[ClientCursor]) -> bytes:
    datas = []
    for client, cursor in clients:
        data: JsonObject = {"clientIdentity": encode_client_identity(client)}
        if cursor is not None:
            data["cursor"] = encode_log_position(cursor)
        datas.append(data)
    document = {"destination": destination, "clientDatas": datas}
    return json.dumps(document, indent=1, sort_keys=True).encode() + b"\n"


def loads_meta_file(data: bytes | str) -> tuple[str, list[ClientCursor]]:
    obj = _object(_parse(data), "$")
    destination: str = _required(obj, "destination", str, "$")
    datas = obj.get("clientDatas", [])
    if not isinstance(datas, list):
        raise MetaCodecError("$.clientDatas", "expected a list")
    clients: list[ClientCursor] = []
    for i, item in enumerate(datas):
        where = f"$.clientDatas[{i}]"
        entry = _object(item, where)
        client = decode_client_identity(entry.get("clientIdentity"), f"{where}.clientIdentity")
        if client.destination != destination:
            raise MetaCodecError(
                f"{where}.clientIdentity.destination",
                f"{client.destination!r} differs from the file's {destination!r}",
            )
        cursor = entry.get("cursor")
        position = None if cursor is None else decode_log_position(cursor, f"{where}.cursor")
        clients.append((client, position))
    return destination, clients


def _parse(data: bytes | str) -> object:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MetaCodecError("$", f"not JSON ({exc})") from exc
