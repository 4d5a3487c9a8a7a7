"""MySQL's partial JSON updates: the diffs of a PARTIAL_UPDATE_ROWS_EVENT, applied to a document.

With ``binlog_row_value_options=PARTIAL_JSON`` every UPDATE of the session is logged as a
PARTIAL_UPDATE_ROWS_EVENT (type 39, a v2 rows event), and a JSON column changed only through
``JSON_SET`` / ``JSON_REPLACE`` / ``JSON_REMOVE`` of itself may carry, in the after image, a
list of diffs instead of the new document (when the diffs are smaller). canal drops type 39;
we rebuild the full document from the before image, so the row reads like an ordinary UPDATE.

The layout, from MySQL's ``sql/rpl_record.cc`` (``pack_row`` / ``unpack_row`` /
``start_partial_bit_reader``), ``sql/json_diff.cc`` (``Json_diff_vector::write_binary`` /
``read_binary``) and ``sql-common/json_path.cc`` (``Json_path::to_string``)::

    per row: before image (plain), then the after image:
      value_options   packed integer (net_field_length: < 251 one byte, 252 + 2 bytes,
                      253 + 3, 254 + 8); bit 0 = PARTIAL_JSON, other bits invalid
      partial_bits    only with bit 0: ceil(J/8) bytes, J = the JSON columns of the whole
                      table (every TABLE_MAP column of type 245, in the image or not), one bit
                      per JSON column in column order, least significant first; 1 = partial
      null bitmap and values as in any image; a partial column's value is
        length        4 bytes little-endian, the bytes of the diffs that follow (0: no diff,
                      the document is unchanged)
        diff*         operation  1 byte: 0 REPLACE, 1 INSERT, 2 REMOVE
                      path       packed length + text: $, .name or ."quoted name" (JSON
                                 string escapes), [n], [last], [last-n]
                      value      unless REMOVE: packed length + a binary JSON document

The server has already resolved the functions into exact paths; ``apply_json_diffs`` in
json_diff.cc applies them in order, and so do we: REPLACE needs the path to exist; INSERT
needs the parent, a new object member or an array position (an index past the end
appends); REMOVE needs the path. A diff that does not fit raises ``JsonDiffNotApplicable``:
the before image is not the document the server changed, and no document is guessed.

What each ``binlog_row_image`` gives a partial update (seen on MySQL 9.7, tested in
tests/integration/test_partial_json.py):

- FULL: the before image holds every column; the document is rebuilt.
- NOBLOB: the changed JSON column is in the before image too; the document is rebuilt.
- MINIMAL: the before image is the primary key alone (every column if the table has none),
  so on a table with a key the document cannot be rebuilt: ``PartialJsonWithoutBase``
  names the table and column and says to set ``binlog_row_image=FULL``. As for any MINIMAL
  update, the after image holds the changed columns only.

Only the containers on a diff's path are decoded; everything else is carried as its binary
bytes. The result is written back as binary JSON (large containers, object keys sorted by
length then bytes as MySQL's ``Json_key_comparator`` stores them, so a new key lands where
a full image has it) and rendered by the column's own decoder: one renderer for full and
partial images.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeAlias

from bridge import native
from bridge.parse.binlog import packed
from bridge.parse.binlog.values import RowDecodeError, TruncatedRowImage, _jsonb_length

PARTIAL_JSON = 1  # value_options bit: the row has partial_bits

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_LARGE_HEADER = struct.Struct("<II")  # element count, container size
_LARGE_KEY = struct.Struct("<IH")  # key offset, key length
_LARGE_VALUE = struct.Struct("<BI")  # value type, offset
_WHITESPACE = " \t\n\v\f\r"  # my_isspace of utf8mb4
_INLINE_SIZE = {4: 1, 5: 2, 6: 2, 7: 4, 8: 4}  # literal, int16, uint16, int32, uint32
_FIXED_SIZE = {**_INLINE_SIZE, 9: 8, 10: 8, 11: 8}  # + int64, uint64, double
_STRING, _OPAQUE = 12, 15


class CorruptJsonDiff(TruncatedRowImage):
    """A partial JSON value (its diff list, a path or a binary JSON value) is malformed."""


class JsonDiffNotApplicable(RowDecodeError):
    """A diff does not fit the before image's document (MySQL's ER_COULD_NOT_APPLY_JSON_DIFF):
    the binlog does not hold the document the server changed."""


class PartialJsonWithoutBase(RowDecodeError):
    """A partial JSON column is missing from the before image, so its new document cannot be
    rebuilt: ``binlog_row_image=MINIMAL`` logs only the primary key before an update."""

    def __init__(self, table: str, column: str) -> None:
        self.table = table
        self.column = column
        super().__init__(
            f"table {table}: column `{column}` is logged as a partial JSON update "
            "(binlog_row_value_options=PARTIAL_JSON) but the before image does not hold the "
            "column (binlog_row_image=MINIMAL), so the new document cannot be rebuilt; "
            "set binlog_row_image=FULL on the source (or clear binlog_row_value_options)"
        )


class DiffOp(IntEnum):
    """``enum_json_diff_operation``."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


@dataclass(frozen=True, slots=True)
class Cell:
    """An array path leg, ``[index]`` or ``[last-index]`` (``from_end``)."""

    index: int
    from_end: bool = False

    def position(self, length: int) -> tuple[int, bool]:
        """MySQL's ``Json_array_index``: the position in an array of ``length`` elements
        (clamped to 0..length) and whether it names an existing element."""
        if self.from_end:
            at = length - self.index - 1 if self.index < length else 0
        else:
            at = min(self.index, length)
        return at, self.index < length


Leg: TypeAlias = "bytes | Cell"  # an object member (its UTF-8 name) or an array cell
Path: TypeAlias = tuple[Leg, ...]


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logged change: ``value`` is a binary JSON document (None for REMOVE)."""

    operation: DiffOp
    path: Path
    value: bytes | None = None


# ---------------------------------------------------------------------------------------------
# Reading the after image's prefix and a partial column's diffs


def read_packed_int(data: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """``bridge.parse.binlog.packed.read_packed_int``, failing as ``CorruptJsonDiff``."""
    try:
        return packed.read_packed_int(data, pos, end)
    except packed.BadPackedInteger as exc:
        raise CorruptJsonDiff(str(exc)) from exc


def partial_columns(
    data: bytes, pos: int, json_columns: Sequence[int]
) -> tuple[frozenset[int], int]:
    """The after image's ``value_options`` and ``partial_bits`` at ``pos`` -> (indexes of the
    columns logged as diffs, position of the after image's null bitmap). ``json_columns``
    are the indexes of the table's JSON columns in column order."""
    options, pos = read_packed_int(data, pos)
    if options & ~PARTIAL_JSON:
        raise CorruptJsonDiff(f"unknown binlog_row_value_options bits {options:#x}")
    if not options:
        return frozenset(), pos
    end = pos + (len(json_columns) + 7) // 8
    if end > len(data):
        raise CorruptJsonDiff(f"the partial_bits end at byte {end}, past the event")
    bits = int.from_bytes(data[pos:end], "little")
    return frozenset(c for i, c in enumerate(json_columns) if bits >> i & 1), end


def applied_document(before: bytes, data: bytes, pos: int) -> tuple[bytes, int]:
    """The binary document ``before`` after the partial column's value at ``pos`` (its diff
    list), and the position after the value. The compiled module applies what it can; what
    it declines (every error included) ``read_diffs`` and ``apply_diffs`` apply, or raise."""
    end = _diff_list_end(data, pos)
    if end == pos + 4:
        return before, end
    compiled = native.module
    if compiled is not None:
        document = compiled.apply_json_diffs(before, data, pos + 4, end)
        if document is not None:
            return document, end
    diffs, end = read_diffs(data, pos)
    return apply_diffs(before, diffs), end


def _diff_list_end(data: bytes, pos: int) -> int:
    """Where the diff list whose 4-byte length is at ``pos`` ends."""
    if pos + 4 > len(data):
        raise CorruptJsonDiff(f"a JSON diff list at byte {pos} runs past the event")
    end = pos + 4 + int(_U32.unpack_from(data, pos)[0])
    if end > len(data):
        raise CorruptJsonDiff(f"a JSON diff list ends at byte {end}, past the event")
    return end


def read_diffs(data: bytes, pos: int) -> tuple[tuple[JsonDiff, ...], int]:
    """A partial column's value at ``pos`` (``Json_diff_vector::read_binary``) -> (the
    diffs, position after the value)."""
    end = _diff_list_end(data, pos)
    pos += 4
    diffs = []
    while pos < end:
        try:
            operation = DiffOp(data[pos])
        except ValueError:
            raise CorruptJsonDiff(f"unknown JSON diff operation {data[pos]}") from None
        length, pos = read_packed_int(data, pos + 1, end)
        if pos + length > end:
            raise CorruptJsonDiff(f"a JSON diff path ends at byte {pos + length}, past {end}")
        path = parse_path(data[pos : pos + length])
        pos += length
        value = None
        if operation is not DiffOp.REMOVE:
            length, pos = read_packed_int(data, pos, end)
            if not 0 < length <= end - pos:
                raise CorruptJsonDiff(f"a JSON diff value of {length} bytes at byte {pos}")
            value = data[pos : pos + length]
            pos += length
        diffs.append(JsonDiff(operation, path, value))
    return tuple(diffs), end


def parse_path(raw: bytes) -> Path:
    """A path as the server writes it (``Json_path::to_string``; ``parse_path`` in
    json_path.cc accepts the same text with whitespace between tokens). Wildcards and ranges
    never name a single value, so they count as corrupt."""
    try:
        text = raw.decode("utf-8")
        legs: list[Leg] = []
        at = _skip_space(text, 0)
        if not text.startswith("$", at):
            raise ValueError("no leading $")
        at = _skip_space(text, at + 1)
        while at < len(text):
            leg: Leg
            if text[at] == ".":
                leg, at = _member(text, _skip_space(text, at + 1))
            elif text[at] == "[":
                leg, at = _cell(text, _skip_space(text, at + 1))
            else:
                raise ValueError(f"unexpected {text[at]!r}")
            legs.append(leg)
            at = _skip_space(text, at)
    except (ValueError, IndexError) as exc:  # json.JSONDecodeError and UnicodeError included
        raise CorruptJsonDiff(f"bad JSON diff path {raw!r}: {exc}") from None
    return tuple(legs)


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def _member(text: str, at: int) -> tuple[bytes, int]:
    """``.name`` (an ECMAScript identifier, escapes allowed) or ``."any name"``, after the
    dot; the name goes through a JSON string parser, as MySQL sends it through rapidjson."""
    if text[at] == '"':
        end = at + 1
        while text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        quoted = text[at : end + 1]
        end += 1
    else:
        end = at
        while end < len(text) and text[end] not in _WHITESPACE + "[.*":
            end += 1
        if end == at:
            raise ValueError("empty or wildcard member name")
        quoted = f'"{text[at:end]}"'
    name = json.loads(quoted)
    if not isinstance(name, str):
        raise ValueError("member name is not a string")
    return name.encode("utf-8"), end


def _cell(text: str, at: int) -> tuple[Cell, int]:
    """``[n]``, ``[last]`` or ``[last - n]``, after the bracket (``parse_array_index``)."""
    from_end = text.startswith("last", at)
    if from_end:
        at = _skip_space(text, at + 4)
        if text[at] != "-":
            return Cell(0, True), _close(text, at)
        at = _skip_space(text, at + 1)
    end = at
    while end < len(text) and text[end] in "0123456789":
        end += 1
    if end == at or end - at > 10 or int(text[at:end]) > 0xFFFFFFFF:
        raise ValueError("bad array index")
    return Cell(int(text[at:end]), from_end), _close(text, _skip_space(text, end))


def _close(text: str, at: int) -> int:
    if text[at] != "]":
        raise ValueError("array ranges and wildcards name no single value")
    return at + 1


# ---------------------------------------------------------------------------------------------
# Applying diffs to a binary document


class RawValue:
    """A value kept as binary JSON: its type and bytes (a container's offsets are relative to
    its first byte, so its bytes can be moved as they are)."""

    __slots__ = ("data", "kind")

    def __init__(self, kind: int, data: bytes) -> None:
        self.kind = kind
        self.data = data


Node: TypeAlias = "RawValue | dict[bytes, Node] | list[Node]"
Container: TypeAlias = "dict[bytes, Node] | list[Node]"


def apply_diffs(doc: bytes, diffs: Sequence[JsonDiff]) -> bytes:
    """The binary JSON document ``doc`` (type byte + value) after ``diffs``, as binary JSON.
    Raises ``JsonDiffNotApplicable`` or ``CorruptJsonDiff``."""
    if not doc:
        raise JsonDiffNotApplicable("a JSON diff cannot apply to an empty value")
    root: list[Node] = [RawValue(doc[0], doc[1:])]
    try:
        for diff in diffs:
            _apply(root, diff)
        kind, data = encode_node(root[0])
    except (struct.error, IndexError, KeyError) as exc:
        raise CorruptJsonDiff("corrupt binary JSON in a partial JSON update") from exc
    return bytes((kind,)) + data


def _apply(root: list[Node], diff: JsonDiff) -> None:
    """One diff, as ``apply_json_diffs`` applies it to a DOM."""
    if not diff.path:
        raise JsonDiffNotApplicable("a JSON diff cannot replace, insert or remove the root")
    parent = _walk(root, diff.path[:-1])
    last, op = diff.path[-1], diff.operation
    if (op is DiffOp.REMOVE) != (diff.value is None) or diff.value == b"":
        raise CorruptJsonDiff(f"a JSON diff {op.name} with a value of {diff.value!r}")
    value = None if diff.value is None else RawValue(diff.value[0], diff.value[1:])
    if isinstance(parent, dict) and isinstance(last, bytes):
        if (last in parent) != (op is not DiffOp.INSERT):
            raise _not_applicable(diff, "the member exists" if last in parent else "no member")
        if value is None:
            del parent[last]
        else:
            parent[last] = value
    elif isinstance(parent, list) and isinstance(last, Cell):
        at, within = last.position(len(parent))
        if value is None or op is DiffOp.REPLACE:
            if not within:
                raise _not_applicable(diff, f"no element in an array of {len(parent)}")
            if value is None:
                del parent[at]
            else:
                parent[at] = value
        else:
            parent.insert(at, value)
    else:
        raise _not_applicable(diff, "the last leg does not fit its parent")


def _not_applicable(diff: JsonDiff, reason: str) -> JsonDiffNotApplicable:
    return JsonDiffNotApplicable(
        f"JSON diff {diff.operation.name} {format_path(diff.path)} does not apply to the "
        f"before image's document ({reason})"
    )


def format_path(path: Path) -> str:
    """A path as text for messages (member names always quoted)."""
    legs = [
        f".{json.dumps(leg.decode('utf-8', 'replace'), ensure_ascii=False)}"
        if isinstance(leg, bytes)
        else f"[last-{leg.index}]"
        if leg.from_end
        else f"[{leg.index}]"
        for leg in path
    ]
    return "$" + "".join(legs)


def _walk(root: list[Node], legs: Path) -> Container:
    """The container at ``legs`` (``seek_exact_path``: no auto-wrapping), decoding the
    containers on the way in place."""
    node = _open(root, 0)
    for leg in legs:
        if isinstance(node, dict) and isinstance(leg, bytes) and leg in node:
            node = _open(node, leg)
        elif isinstance(node, list) and isinstance(leg, Cell) and leg.position(len(node))[1]:
            node = _open(node, leg.position(len(node))[0])
        else:
            raise JsonDiffNotApplicable(
                f"the JSON diff path {format_path(legs)} is not in the before image's document"
            )
    return node


def _open(holder: Any, slot: Any) -> Container:
    """``holder[slot]`` as a decoded container, stored back decoded."""
    child: Node = holder[slot]
    if isinstance(child, RawValue):
        if child.kind > 3:
            raise JsonDiffNotApplicable("a JSON diff path goes into a scalar")
        child = _decode_container(child.kind, child.data)
        holder[slot] = child
    return child


def _decode_container(kind: int, data: bytes) -> Container:
    """One level of a binary object (kind 0 small / 1 large) or array (2 / 3); its elements
    stay binary."""
    large, is_object = kind & 1, kind < 2
    offset = _U32 if large else _U16
    osize = offset.size
    inline = (4, 5, 6, 7, 8) if large else (4, 5, 6)
    count = offset.unpack_from(data, 0)[0]
    values_at = 2 * osize + (count * (osize + 2) if is_object else 0)
    elements: list[Node] = []
    for i in range(count):
        entry = values_at + i * (1 + osize)
        element_kind = data[entry]
        if element_kind in inline:
            at, size = entry + 1, _INLINE_SIZE[element_kind]
        else:
            at = offset.unpack_from(data, entry + 1)[0]
            size = _value_size(element_kind, data, at)
        if at + size > len(data):
            raise IndexError(at + size)
        elements.append(RawValue(element_kind, data[at : at + size]))
    if not is_object:
        return elements
    keys = []
    for i in range(count):
        entry = 2 * osize + i * (osize + 2)
        key_at, key_length = (
            offset.unpack_from(data, entry)[0],
            _U16.unpack_from(data, entry + osize)[0],
        )
        keys.append(data[key_at : key_at + key_length])
    return dict(zip(keys, elements, strict=True))


def _value_size(kind: int, data: bytes, at: int) -> int:
    """The bytes of the (not inlined) value of type ``kind`` stored at ``at``."""
    if kind <= 3:
        return int((_U32 if kind & 1 else _U16).unpack_from(data, at + (4 if kind & 1 else 2))[0])
    if kind in _FIXED_SIZE:
        return _FIXED_SIZE[kind]
    if kind == _STRING:
        length, start = _jsonb_length(data, at)
        return start - at + length
    if kind == _OPAQUE:
        length, start = _jsonb_length(data, at + 1)
        return start - at + length
    raise KeyError(kind)


def encode_node(node: Node) -> tuple[int, bytes]:
    """``node`` as (type, bytes): binary values as they are, decoded containers as large
    ones (the renderer reads either size), object keys in MySQL's stored order."""
    if isinstance(node, RawValue):
        return node.kind, node.data
    if isinstance(node, dict):
        items = sorted(node.items(), key=lambda item: (len(item[0]), item[0]))
        keys, values = [key for key, _ in items], [value for _, value in items]
    else:
        keys, values = [], node
    count = len(values)
    offset = 8 + len(keys) * _LARGE_KEY.size + count * _LARGE_VALUE.size
    entries, tail = bytearray(), bytearray()
    for key in keys:
        entries += _LARGE_KEY.pack(offset + len(tail), len(key))
        tail += key
    for value in values:
        kind, data = encode_node(value)
        if kind in _INLINE_SIZE:
            entries += bytes((kind,)) + data.ljust(4, b"\0")
        else:
            entries += _LARGE_VALUE.pack(kind, offset + len(tail))
            tail += data
    header = _LARGE_HEADER.pack(count, offset + len(tail))
    return (1 if isinstance(node, dict) else 3), header + bytes(entries) + bytes(tail)
