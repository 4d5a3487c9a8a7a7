"""The server's text of a MySQL JSON document -> MySQL's binary JSON, as the binlog holds it.

The snapshot reads a JSON column as text and the stream's JSON decoder renders binary JSON,
so the text is parsed the way MySQL's parser (rapidjson) types it -- an integer token is an
int64 (a uint64 above its range, a double beyond that), a token with a fraction or exponent
a double, strings, literals, arrays and objects -- and the tree is written with the binary
writer the partial-JSON rebuilder already has (``bridge.parse.binlog.json_diff``: large
containers, object keys in MySQL's stored order). The decoder renders a value from its type
and value only, not from its container size or integer width, so this renders exactly as
the server's own document for every document the server could have parsed from text.

What text cannot carry: scalars of SQL types stored by JSON functions (``JSON_OBJECT('d',
NOW())``, ``CAST(1.50 AS JSON)``, ``JSON_ARRAYAGG`` of a DECIMAL column) are "opaque" values in
the binary document. Their text is a string or a number, and they come out as such: a DATETIME
or TIME renders the same; a DATE (the decoder renders it with a time), a DECIMAL whose double
spelling differs (``1.50``, ``1E+2``), and BIT/BLOB values (``base64:type15:...``) do not.
"""

from __future__ import annotations

import json
import struct
from typing import Any

# The partial-JSON rebuilder's node tree and writer: one binary JSON writer in the project.
from bridge.parse.binlog.json_diff import Node, RawValue, encode_node

_INT16, _INT32, _INT64, _UINT64, _DOUBLE, _STRING, _LITERAL = 5, 7, 9, 10, 11, 12, 4
_LITERALS = {None: b"\x00", True: b"\x01", False: b"\x02"}
_INT_FORMATS = (
    (-(1 << 15), 1 << 15, _INT16, struct.Struct("<h")),
    (-(1 << 31), 1 << 31, _INT32, struct.Struct("<i")),
    (-(1 << 63), 1 << 63, _INT64, struct.Struct("<q")),
    (0, 1 << 64, _UINT64, struct.Struct("<Q")),
)
_F64 = struct.Struct("<d")


def binary_json(text: str) -> bytes:
    """The binary document (type byte + value) of the JSON ``text`` the server printed."""
    tree = json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant)
    kind, data = encode_node(_node(tree))
    return bytes((kind,)) + data


def _object(pairs: list[tuple[str, Any]]) -> dict[bytes, Node]:
    return {key.encode("utf-8"): _node(value) for key, value in pairs}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _node(value: Any) -> Node:
    """A parsed value as the writer's node: containers as dict/list, scalars as binary."""
    if isinstance(value, dict):  # already converted by _object
        return value
    if isinstance(value, list):
        return [_node(item) for item in value]
    if value is None or isinstance(value, bool):
        return RawValue(_LITERAL, _LITERALS[value])
    if isinstance(value, int):
        for low, high, kind, fmt in _INT_FORMATS:
            if low <= value < high:
                return RawValue(kind, fmt.pack(value))
        return RawValue(_DOUBLE, _F64.pack(float(value)))  # rapidjson: past uint64, a double
    if isinstance(value, float):
        return RawValue(_DOUBLE, _F64.pack(value))
    if isinstance(value, str):
        data = value.encode("utf-8")
        return RawValue(_STRING, _length(len(data)) + data)
    raise TypeError(f"unexpected JSON value {value!r}")  # pragma: no cover - json.loads types


def _length(size: int) -> bytes:
    """A string's length: 7 bits per byte, least significant first, high bit = more."""
    out = bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(out)
