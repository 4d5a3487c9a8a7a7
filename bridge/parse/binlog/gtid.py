"""MySQL GTIDs: the binlog's GTID events and the GTID sets of COM_BINLOG_DUMP_GTID.

Pure functions and values, no I/O. Malformed input raises ``ValueError`` saying what is wrong
and where; the caller that knows the binlog position turns it into a ``ParseError``.

Formats, as MySQL 9.x writes them (mysql/mysql-server):

- GTID_LOG_EVENT (33) and ANONYMOUS_GTID_LOG_EVENT (34), fixed little-endian layout
  (libs/mysql/binlog/event/control_events.cpp, ``Gtid_event::Gtid_event``): flags u8,
  uuid 16 bytes, gno i64, then each group only if the body goes on: logical clock type u8
  (2: last_committed i64, sequence_number i64; any other type ends what can be read),
  immediate_commit_timestamp 7 bytes (bit 55 set: original_commit_timestamp 7 bytes follows),
  transaction_length as a packed length (1, 3, 4 or 9 bytes), immediate_server_version u32
  (bit 31 set: original_server_version u32 follows), commit_group_ticket u64.
- GTID_TAGGED_LOG_EVENT (42), MySQL 8.3+, a mysql::serialization message
  (libs/mysql/serialization/readme.md, serializer_impl.hpp, serializer_default_impl.hpp):
  varlen format version (1), varlen message size counted from the version byte, varlen
  "last non-ignorable field id + 1" (0: every field may be skipped), then ``varlen id, value``
  pairs in increasing id order, optional fields left out. The ids are the order of
  ``Gtid_event::define_fields()`` (control_events.h): 0 flags, 1 uuid (16 *separately*
  varlen-encoded bytes: a byte >= 0x80 takes two), 2 gno (signed), 3 tag (varlen length +
  ASCII, at most 32), 4 last_committed (signed), 5 sequence_number (signed),
  6 immediate_commit_timestamp, 7 original_commit_timestamp (absent: equal to 6),
  8 transaction_length, 9 immediate_server_version, 10 original_server_version (absent:
  equal to 9), 11 commit_group_ticket.
- Varlen integers (libs/mysql/serialization/variable_length_integers.h): 1 to 9 bytes; the
  number of trailing one bits of the first byte plus one is the byte count, the value follows
  those bits little-endian (9 bytes: the first byte is 0xff and 8 bytes hold all 64 bits).
  Signed values are zigzag-like: ``x >= 0`` is ``x << 1``, ``x < 0`` is ``(~x << 1) | 1``.
- Encoded GTID sets (sql/rpl_gtid_set.cc, ``Gtid_set::encode``, ``encode_nsids_format``):
  untagged, u64 number of uuids, then per uuid 16 bytes, u64 number of intervals and
  [start, end + 1) as i64 pairs. Tagged (8.3+, when any tag is present): the first u64 is
  ``format << 56 | n_sids << 8 | format`` with format 1, and every uuid is followed by its tag
  as a varlen length and ASCII bytes (length 0 for the untagged GTIDs of that uuid).
- GTID set text (``Gtid_set::to_string``, ``add_gtid_text``): ``uuid:1-5:7:tag:1-3``,
  one line per uuid joined by ``",\\n"``, uuids sorted, the untagged intervals first, then each
  tag in byte order; the parser accepts whitespace around every token and upper case.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.packed import extra_bytes

GNO_MAX = (1 << 63) - 2
"""The largest GNO: MySQL's GNO_END (INT64_MAX) is one past it."""

TAG_MAX_LENGTH = 32
_TAG = re.compile(r"[a-z_][a-z0-9_]{0,31}")
_TAG_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_INTERVAL_TEXT = re.compile(r"([0-9]+)(?:\s*-\s*([0-9]+))?")
_MARIADB_GTID = re.compile(r"\s*[0-9]+-[0-9]+-[0-9]+\s*")

_LOGICAL_CLOCK_TYPE = 2
_HAS_ORIGINAL_TIMESTAMP = 1 << 55
_HAS_ORIGINAL_VERSION = 1 << 31
_SERIALIZATION_FORMAT = 1
_TAGGED_FORMAT = 1


@dataclass(frozen=True, slots=True)
class GtidEvent:
    """What a GTID event says about the transaction that follows it.

    Fields other than ``uuid``/``tag``/``gno`` are ``None`` when the event does not carry
    them (older servers wrote shorter bodies). An anonymous event (type 34, gtid_mode OFF or
    changing) has ``gno == 0``: its transaction has no GTID, but its logical clock and
    transaction length still bound and schedule the transaction.
    """

    uuid: str
    gno: int
    tag: str = ""
    flags: int = 0
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    @property
    def anonymous(self) -> bool:
        return self.gno == 0

    @property
    def may_have_statements(self) -> bool:
        """MySQL's FLAG_MAY_HAVE_SBR: the transaction may hold statement-based events."""
        return bool(self.flags & 1)

    @property
    def text(self) -> str:
        """The GTID as MySQL prints it (``uuid:gno``, ``uuid:tag:gno``; ``ANONYMOUS``)."""
        if self.anonymous:
            return "ANONYMOUS"
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


def decode_gtid_event(type_code: int, body: bytes) -> GtidEvent | None:
    """Decode the body (after the common header, checksum excluded) of a GTID event.

    Returns ``None`` for any other event type, so that a reader can offer it every event.
    ANONYMOUS_GTID_LOG_EVENT returns a ``GtidEvent`` with ``gno == 0`` rather than ``None``:
    it has no GTID, but the same layout carries the transaction's logical clock and length.
    Raises ``ValueError`` for a truncated or inconsistent body.
    """
    if type_code in (EventCode.GTID_LOG_EVENT, EventCode.ANONYMOUS_GTID_LOG_EVENT):
        return _decode_untagged(type_code, body)
    if type_code == EventCode.GTID_TAGGED_LOG_EVENT:
        return _decode_tagged(body)
    return None


class _Reader:
    """Bytes read front to back; reading past the end raises ValueError naming the input."""

    __slots__ = ("_data", "_what", "pos")

    def __init__(self, data: bytes, what: str) -> None:
        self._data = data
        self._what = what
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self.pos

    def fail(self, problem: str) -> ValueError:
        return ValueError(f"{self._what}: {problem} (at byte {self.pos} of {len(self._data)})")

    def take(self, size: int) -> bytes:
        if size > self.remaining:
            raise self.fail(f"truncated, {size} more bytes needed, {self.remaining} left")
        chunk = self._data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def uint(self, size: int) -> int:
        return int.from_bytes(self.take(size), "little")

    def int64(self) -> int:
        return int.from_bytes(self.take(8), "little", signed=True)

    def packed_length(self) -> int:
        """MySQL's net_field_length_ll: < 251 itself, 252/253/254 then 2/3/8 bytes."""
        first = self.uint(1)
        size = extra_bytes(first)
        if size is None:
            raise self.fail(f"invalid packed length prefix {first:#x}")
        return self.uint(size) if size else first

    def varlen(self, bits: int = 64) -> int:
        if not self.remaining:
            raise self.fail("truncated, a variable-length integer is missing")
        first = self._data[self.pos]
        size = ((first + 1) & ~first).bit_length()  # trailing one bits + 1
        chunk = self.take(size)
        rest = int.from_bytes(chunk[1:], "little")
        value = (first >> size) | (rest << (8 - size if size < 9 else 0))
        if value >= 1 << bits:
            raise self.fail(f"variable-length integer {value} exceeds {bits} bits")
        return value

    def varlen_signed(self) -> int:
        value = self.varlen()
        return (value >> 1) ^ -(value & 1)


def encode_varlen(value: int) -> bytes:
    """``value`` (0 <= value < 2**64) as a mysql::serialization variable-length integer."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{value} is not an unsigned 64-bit integer")
    bits = value.bit_length()
    size = 9 if bits > 56 else max(1, -(-bits // 7))
    first = ((1 << (size - 1)) - 1) | ((value << size) & 0xFF)
    rest = value >> (8 - size if size < 9 else 0)
    return bytes([first]) + rest.to_bytes(size - 1, "little")


def decode_varlen(data: bytes, offset: int = 0) -> tuple[int, int]:
    """The unsigned variable-length integer at ``offset``, and the offset after it."""
    reader = _Reader(data, "variable-length integer")
    reader.pos = offset
    return reader.varlen(), reader.pos


def _uuid_text(raw: bytes) -> str:
    """The 16 bytes of a server UUID as 8-4-4-4-12 lowercase hexadecimal digits (what
    ``str(uuid.UUID(bytes=raw))`` writes, without importing ``uuid`` into the binlog reader's
    process, whose start it slowed by 2 ms)."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _check_gno(reader: _Reader, gno: int, anonymous: bool) -> None:
    valid = gno == 0 if anonymous else 1 <= gno <= GNO_MAX
    if not valid:
        raise reader.fail(f"invalid GNO {gno}")


def _decode_untagged(type_code: int, body: bytes) -> GtidEvent:
    anonymous = type_code == EventCode.ANONYMOUS_GTID_LOG_EVENT
    reader = _Reader(body, "ANONYMOUS_GTID_LOG_EVENT" if anonymous else "GTID_LOG_EVENT")
    flags = reader.uint(1)
    uuid = _uuid_text(reader.take(16))
    gno = reader.int64()
    _check_gno(reader, gno, anonymous)
    values = _untagged_tail(reader)
    return _event(uuid, "", gno, flags, values)


def _untagged_tail(reader: _Reader) -> dict[str, int]:
    """The optional groups after the GNO: each is read only if the body goes on, as MySQL
    does for bodies written by older servers; a group cut short raises ValueError."""
    values: dict[str, int] = {}
    if not reader.remaining or reader.uint(1) != _LOGICAL_CLOCK_TYPE:
        return values  # 5.6 wrote no clock; 5.7.4 and older another one, which MySQL ignores
    values["last_committed"] = reader.int64()
    values["sequence_number"] = reader.int64()
    if not reader.remaining:
        return values
    immediate = reader.uint(7)
    if immediate & _HAS_ORIGINAL_TIMESTAMP:
        immediate &= ~_HAS_ORIGINAL_TIMESTAMP
        values["original_commit_timestamp"] = reader.uint(7)
    values["immediate_commit_timestamp"] = immediate
    if not reader.remaining:
        return values
    values["transaction_length"] = reader.packed_length()
    if not reader.remaining:
        return values
    version = reader.uint(4)
    if version & _HAS_ORIGINAL_VERSION:
        version &= ~_HAS_ORIGINAL_VERSION
        values["original_server_version"] = reader.uint(4)
    values["immediate_server_version"] = version
    if reader.remaining:
        values["commit_group_ticket"] = reader.uint(8)
    return values  # anything after the ticket was added by a newer server: ignored


# Field ids of GTID_TAGGED_LOG_EVENT with integer values, and how each is read; ids 1 (uuid)
# and 3 (tag) are read by _decode_tagged itself.
_TAGGED_INTEGERS: Mapping[int, tuple[str, Callable[[_Reader], int]]] = {
    0: ("flags", lambda reader: reader.varlen(8)),
    2: ("gno", _Reader.varlen_signed),
    4: ("last_committed", _Reader.varlen_signed),
    5: ("sequence_number", _Reader.varlen_signed),
    6: ("immediate_commit_timestamp", _Reader.varlen),
    7: ("original_commit_timestamp", _Reader.varlen),
    8: ("transaction_length", _Reader.varlen),
    9: ("immediate_server_version", lambda reader: reader.varlen(32)),
    10: ("original_server_version", lambda reader: reader.varlen(32)),
    11: ("commit_group_ticket", _Reader.varlen),
}
_UUID_FIELD = 1
_TAG_FIELD = 3
_KNOWN_FIELDS = 12


def _decode_tagged(body: bytes) -> GtidEvent:
    reader = _Reader(body, "GTID_TAGGED_LOG_EVENT")
    version = reader.varlen()
    if version != _SERIALIZATION_FORMAT:
        raise reader.fail(f"unknown serialization format {version}")
    size = reader.varlen()
    if size != len(body):
        problem = "truncated" if size > len(body) else "followed by bytes (checksum not cut?)"
        raise reader.fail(f"message of {size} bytes {problem}, body has {len(body)}")
    if reader.varlen() > _KNOWN_FIELDS:
        raise reader.fail("has fields this decoder does not know and may not skip")
    uuid, tag, values = _tagged_fields(reader)
    if uuid is None or "gno" not in values:
        raise reader.fail("lacks the uuid or the gno field")
    gno = values.pop("gno")
    _check_gno(reader, gno, anonymous=False)
    return _event(uuid, tag, gno, values.pop("flags", 0), values)


def _tagged_fields(reader: _Reader) -> tuple[str | None, str, dict[str, int]]:
    uuid: str | None = None
    tag = ""
    values: dict[str, int] = {}
    last_id = -1
    while reader.remaining:
        field_id = reader.varlen()
        if field_id <= last_id:
            raise reader.fail(f"field {field_id} after field {last_id}")
        if field_id >= _KNOWN_FIELDS:
            break  # added by a newer server and ignorable (checked above): the size skips it
        last_id = field_id
        if field_id == _UUID_FIELD:
            uuid = _uuid_text(bytes(reader.varlen(8) for _ in range(16)))
        elif field_id == _TAG_FIELD:
            tag = _tag_field(reader)
        else:
            name, read = _TAGGED_INTEGERS[field_id]
            values[name] = read(reader)
    return uuid, tag, values


def _tag_field(reader: _Reader) -> str:
    length = reader.varlen()
    if length > TAG_MAX_LENGTH:
        raise reader.fail(f"tag of {length} characters, at most {TAG_MAX_LENGTH} allowed")
    tag = reader.take(length).decode("ascii", errors="replace")
    if tag and not _TAG.fullmatch(tag):
        raise reader.fail(f"invalid tag {tag!r}")
    return tag


def _event(uuid: str, tag: str, gno: int, flags: int, values: Mapping[str, int]) -> GtidEvent:
    immediate_ts = values.get("immediate_commit_timestamp")
    immediate_version = values.get("immediate_server_version")
    return GtidEvent(
        uuid=uuid,
        gno=gno,
        tag=tag,
        flags=flags,
        last_committed=values.get("last_committed"),
        sequence_number=values.get("sequence_number"),
        immediate_commit_timestamp=immediate_ts,
        # Absent when equal to the immediate values (the transaction originated here).
        original_commit_timestamp=values.get("original_commit_timestamp", immediate_ts),
        transaction_length=values.get("transaction_length"),
        immediate_server_version=immediate_version,
        original_server_version=values.get("original_server_version", immediate_version),
        commit_group_ticket=values.get("commit_group_ticket"),
    )


_Tsid = tuple[str, str]
"""A GTID source as MySQL names it: (uuid, tag), the tag "" when untagged."""


class GtidSet:
    """A set of GTIDs: per (uuid, tag), sorted disjoint intervals of GNOs.

    Mutable (``add`` is called per transaction while reading), so not hashable. ``str()`` is
    MySQL's canonical text and ``encode()`` the bytes COM_BINLOG_DUMP_GTID expects.
    """

    __slots__ = ("_intervals",)

    def __init__(self) -> None:
        # Half-open [start, end) intervals, sorted, neither overlapping nor touching.
        self._intervals: dict[_Tsid, list[tuple[int, int]]] = {}

    def add(self, uuid: str, tag: str, gno: int) -> None:
        """Add one GTID, merging it into the intervals it touches."""
        self.add_interval(uuid, tag, gno, gno)

    def add_interval(self, uuid: str, tag: str, first: int, last: int) -> None:
        """Add the GNOs ``first`` to ``last`` (inclusive) of ``uuid``/``tag``."""
        if not 1 <= first <= last <= GNO_MAX:
            raise ValueError(f"invalid GNO interval {first}-{last} (1 <= first <= last)")
        self._merge(_tsid(uuid, tag), first, last + 1)

    def _merge(self, tsid: _Tsid, start: int, end: int) -> None:
        intervals = self._intervals.setdefault(tsid, [])
        low = bisect_left(intervals, (start, start))
        if low > 0 and intervals[low - 1][1] >= start:
            low -= 1
        high = low
        while high < len(intervals) and intervals[high][0] <= end:
            start = min(start, intervals[high][0])
            end = max(end, intervals[high][1])
            high += 1
        intervals[low:high] = [(start, end)]

    def update(self, other: GtidSet) -> None:
        """Add every GTID of ``other``."""
        for tsid, intervals in other._intervals.items():
            for start, end in intervals:
                self._merge(tsid, start, end)

    def __sub__(self, other: GtidSet) -> GtidSet:
        result = GtidSet()
        for tsid, intervals in self._intervals.items():
            left = _subtract(intervals, other._intervals.get(tsid, []))
            if left:
                result._intervals[tsid] = left
        return result

    def __contains__(self, gtid: object) -> bool:
        """Whether a ``GtidEvent``'s GTID is in the set (anonymous ones never are)."""
        if not isinstance(gtid, GtidEvent):
            return False
        intervals = self._intervals.get((gtid.uuid, gtid.tag), [])
        index = bisect_left(intervals, (gtid.gno + 1, 0)) - 1
        return index >= 0 and intervals[index][0] <= gtid.gno < intervals[index][1]

    def issubset(self, other: GtidSet) -> bool:
        return not self - other

    def __bool__(self) -> bool:
        return bool(self._intervals)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._intervals == other._intervals

    __hash__ = None  # type: ignore[assignment]

    def intervals(self) -> Iterator[tuple[str, str, int, int]]:
        """``(uuid, tag, first, last)`` per interval, ``last`` inclusive, in MySQL's order."""
        for uuid, tag in sorted(self._intervals):
            for start, end in self._intervals[uuid, tag]:
                yield uuid, tag, start, end - 1

    @property
    def has_tags(self) -> bool:
        return any(tag for _, tag in self._intervals)

    def __str__(self) -> str:
        lines: list[str] = []
        current = ""
        for uuid, tag in sorted(self._intervals):
            if uuid != current:
                lines.append(uuid)
                current = uuid
            if tag:
                lines[-1] += f":{tag}"
            for start, end in self._intervals[uuid, tag]:
                lines[-1] += f":{start}" if end == start + 1 else f":{start}-{end - 1}"
        return ",\n".join(lines)

    def __repr__(self) -> str:
        return f"GtidSet({str(self)!r})"

    def encode(self) -> bytes:
        """The set as COM_BINLOG_DUMP_GTID and PREVIOUS_GTIDS_LOG_EVENT carry it: MySQL's
        untagged format when no tag is present (any server reads it), else 8.3+'s tagged."""
        tagged = self.has_tags
        count = len(self._intervals)
        header = (_TAGGED_FORMAT << 56) | (count << 8) | _TAGGED_FORMAT if tagged else count
        out = bytearray(header.to_bytes(8, "little"))
        for uuid, tag in sorted(self._intervals):
            out += bytes.fromhex(uuid.replace("-", ""))  # a _tsid: checked 8-4-4-4-12
            if tagged:
                out += encode_varlen(len(tag)) + tag.encode("ascii")
            intervals = self._intervals[uuid, tag]
            out += len(intervals).to_bytes(8, "little")
            for start, end in intervals:
                out += start.to_bytes(8, "little") + end.to_bytes(8, "little")
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> GtidSet:
        """The inverse of ``encode`` (also the body of PREVIOUS_GTIDS_LOG_EVENT, 35), strict
        as MySQL's Gtid_set::add_gtid_encoding: every byte used, intervals ascending."""
        reader = _Reader(data, "encoded GTID set")
        header = reader.uint(8)
        form = header >> 56
        if form not in (0, _TAGGED_FORMAT):
            raise reader.fail(f"unknown GTID set format {form}")
        count = (header >> 8) & ((1 << 48) - 1) if form else header
        result = cls()
        for _ in range(count):
            uuid = _uuid_text(reader.take(16))
            tag = _tag_field(reader) if form else ""
            last = 0
            for _ in range(reader.uint(8)):
                start, end = reader.int64(), reader.int64()
                if not last < start < end <= GNO_MAX + 1:
                    raise reader.fail(f"interval [{start}, {end}) out of order after {last}")
                result._merge((uuid, tag), start, end)
                last = end
        if reader.remaining:
            raise reader.fail(f"{reader.remaining} bytes after the last interval")
        return result


def _tsid(uuid: str, tag: str) -> _Tsid:
    if not _UUID_TEXT.fullmatch(uuid):
        raise ValueError(f"{uuid!r} is not a UUID (8-4-4-4-12 hexadecimal digits)")
    if tag and not _TAG_TEXT.fullmatch(tag):
        raise ValueError(f"{tag!r} is not a GTID tag ([a-z_][a-z0-9_]*, at most 32)")
    return uuid.lower(), tag.lower()


def _subtract(left: list[tuple[int, int]], right: list[tuple[int, int]]) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for start, end in left:
        low = start
        for cut_start, cut_end in right:
            if cut_end <= low or cut_start >= end:
                continue
            if cut_start > low:
                result.append((low, cut_start))
            low = cut_end
            if low >= end:
                break
        if low < end:
            result.append((low, end))
    return result


def parse_gtid_set(text: str) -> GtidSet:
    """MySQL's GTID set text, as @@gtid_executed and SHOW BINARY LOG STATUS print it.

    ``uuid[:interval|:tag]...`` separated by commas; intervals ``N`` or ``N-M``, and a tag
    applying to the intervals after it. Whitespace between tokens, upper case and empty
    items (``",,"``) are accepted as MySQL accepts them. Stricter than MySQL: a reversed
    interval (``5-3``, which MySQL reads as empty) raises ``ValueError``, like any other
    malformed text.
    """
    result = GtidSet()
    for item in text.split(","):
        if not item.strip():
            continue
        uuid, *parts = (part.strip() for part in item.split(":"))
        _tsid(uuid, "")  # checked even when no interval follows, as MySQL does
        tag = ""
        for part in parts:
            if _TAG_TEXT.fullmatch(part):
                tag = part
                continue
            match = _INTERVAL_TEXT.fullmatch(part)
            if match is None:
                raise ValueError(f"malformed GTID set {text!r}: {part!r} is no tag or interval")
            first = int(match[1])
            last = int(match[2]) if match[2] is not None else first
            try:
                result.add_interval(uuid, tag, first, last)
            except ValueError as exc:
                raise ValueError(f"malformed GTID set {text!r}: {exc}") from None
    return result


def is_mariadb_gtid_set(text: str) -> bool:
    """Whether ``text`` is a MariaDB GTID list (``domain-server-sequence``, comma separated)
    rather than a MySQL GTID set. Empty text names no GTID of either kind: False."""
    items = text.split(",")
    return bool(text.strip()) and all(_MARIADB_GTID.fullmatch(item) for item in items)
