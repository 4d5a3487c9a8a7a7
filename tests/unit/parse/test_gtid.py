"""GTID events and GTID sets (bridge.parse.binlog.gtid) against bytes and text MySQL produces.

The ``REAL_*`` bodies were cut from a MySQL 9.7.4 binlog (mysqlbinlog --raw); the expected
values are what ``mysqlbinlog -vv`` printed for them. Other bodies are built by hand from
the layouts documented in bridge/parse/binlog/gtid.py.
"""

from __future__ import annotations

import struct

import pytest

from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.gtid import (
    GNO_MAX,
    GtidEvent,
    GtidSet,
    decode_gtid_event,
    decode_varlen,
    encode_varlen,
    is_mariadb_gtid_set,
    parse_gtid_set,
)

SERVER_UUID = "1497ec2c-e896-11f1-acc8-02fc00000001"
UUID_BYTES = bytes.fromhex(SERVER_UUID.replace("-", ""))
A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"

# GTID 1497ec2c-...:253, last_committed=248 sequence_number=249, transaction_length=217,
# commit timestamp 1795587649629435, server version 90704 (9.7.4), FLAG_MAY_HAVE_SBR (a DDL).
REAL_GTID = bytes.fromhex(
    "01"  # flags
    " 1497ec2ce89611f1acc802fc00000001"  # uuid
    " fd00000000000000"  # gno
    " 02 f800000000000000 f900000000000000"  # logical clock type 2, the two clocks
    " fbec04d4136106"  # immediate_commit_timestamp, bit 55 clear: no original one follows
    " d9"  # transaction_length
    " 50620100"  # immediate_server_version, bit 31 clear
)
# GTID 1497ec2c-...:probe_tag:1, last_committed=250 sequence_number=251,
# transaction_length=301, commit timestamp 1795587649634553, server version 90704.
REAL_TAGGED = bytes.fromhex(
    "02 82 00"  # format 1, message size 65, no field that must not be skipped
    " 00 00"  # field 0, flags: 0
    " 02 28 5d02 b103 58 a103 5902 22 c503 b102 2103 04 f103 00 00 00 02"  # 1: uuid, per byte
    " 04 04"  # field 2, gno: 1 (signed)
    " 06 12 70726f62655f746167"  # field 3, tag: 9 characters, probe_tag
    " 08 d107"  # field 4, last_committed: 250
    " 0a d907"  # field 5, sequence_number: 251
    " 0c 7ff90005d4136106"  # field 6, immediate_commit_timestamp (field 7 left out: equal)
    " 10 b504"  # field 8, transaction_length: 301
    " 12 83120b"  # field 9, immediate_server_version: 90704 (field 10 left out: equal)
)


# ------------------------------------------------------------------ variable-length integers


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "02"),
        (127, "fe"),  # 7 bits still fit the first byte
        (128, "0102"),
        (65535, "fbff07"),  # the readme's example: 00000111 11111111 11111011, big-endian
        ((1 << 56) - 1, "7fffffffffffffff"),
        (1 << 56, "ff0000000000000001"),  # 57 bits and more: 0xff then all 8 bytes
        ((1 << 64) - 1, "ffffffffffffffffff"),
    ],
)
def test_varlen_matches_mysql_serialization(value: int, encoded: str) -> None:
    assert encode_varlen(value).hex() == encoded
    assert decode_varlen(bytes.fromhex(encoded) + b"\x99", 0) == (value, len(encoded) // 2)


def test_varlen_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        encode_varlen(-1)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        encode_varlen(1 << 64)
    with pytest.raises(ValueError, match="truncated"):
        decode_varlen(bytes.fromhex("fbff"))  # announces 3 bytes, has 2
    with pytest.raises(ValueError, match="missing"):
        decode_varlen(b"\x02", 1)


# ------------------------------------------------------------------ GTID_LOG_EVENT (33)


def untagged_body(
    gno: int = 7,
    *,
    flags: int = 0,
    clock: bytes = b"\x02" + struct.pack("<qq", 10, 11),
    timestamps: bytes = (1234567).to_bytes(7, "little"),
    length: bytes = b"\xfc\x2c\x01",  # 300 as a packed length: 0xfc, then 2 bytes
    versions: bytes = struct.pack("<I", 90704),
    ticket: bytes = b"",
) -> bytes:
    head = bytes([flags]) + UUID_BYTES + struct.pack("<q", gno)
    return head + clock + timestamps + length + versions + ticket


def test_real_gtid_event() -> None:
    assert decode_gtid_event(EventCode.GTID_LOG_EVENT, REAL_GTID) == GtidEvent(
        uuid=SERVER_UUID,
        gno=253,
        flags=1,
        last_committed=248,
        sequence_number=249,
        immediate_commit_timestamp=1795587649629435,
        original_commit_timestamp=1795587649629435,
        transaction_length=217,
        immediate_server_version=90704,
        original_server_version=90704,
    )


def test_gtid_event_with_every_optional_field() -> None:
    original_ts = (1 << 54) + 5
    event = decode_gtid_event(
        EventCode.GTID_LOG_EVENT,
        untagged_body(
            timestamps=((1 << 55) | 1234567).to_bytes(7, "little")
            + original_ts.to_bytes(7, "little"),
            versions=struct.pack("<II", (1 << 31) | 90704, 80036),
            ticket=struct.pack("<Q", 42),
        ),
    )
    assert event is not None
    assert (event.immediate_commit_timestamp, event.original_commit_timestamp) == (
        1234567,
        original_ts,
    )
    assert (event.immediate_server_version, event.original_server_version) == (90704, 80036)
    assert event.transaction_length == 300
    assert event.commit_group_ticket == 42
    assert (event.text, event.tag, event.may_have_statements) == (f"{SERVER_UUID}:7", "", False)


def test_bytes_after_the_last_known_field_are_ignored() -> None:
    # A newer server may append fields, as 8.0 did several times.
    body = untagged_body(ticket=struct.pack("<Q", 1)) + b"future"
    event = decode_gtid_event(EventCode.GTID_LOG_EVENT, body)
    assert event is not None and event.commit_group_ticket == 1


def test_older_bodies_decode_what_they_have() -> None:
    mysql56 = decode_gtid_event(EventCode.GTID_LOG_EVENT, untagged_body()[:25])
    assert mysql56 == GtidEvent(uuid=SERVER_UUID, gno=7)
    old_clock = untagged_body(clock=b"\x01" + bytes(16))  # 5.7.4's clock type: ignored
    assert decode_gtid_event(EventCode.GTID_LOG_EVENT, old_clock) == GtidEvent(
        uuid=SERVER_UUID, gno=7
    )


def test_every_cut_inside_a_field_of_a_gtid_event_raises() -> None:
    body = untagged_body(ticket=struct.pack("<Q", 9))
    # Field boundaries: flags+uuid+gno | clock | timestamp | length | version | ticket.
    ends = {25, 42, 49, 52, 56, 64}
    for size in range(len(body)):
        if size in ends:
            assert decode_gtid_event(EventCode.GTID_LOG_EVENT, body[:size]) is not None
        else:
            with pytest.raises(ValueError, match="GTID_LOG_EVENT: truncated"):
                decode_gtid_event(EventCode.GTID_LOG_EVENT, body[:size])


@pytest.mark.parametrize("gno", [0, -1, GNO_MAX + 1])
def test_gtid_event_with_an_impossible_gno_raises(gno: int) -> None:
    with pytest.raises(ValueError, match=f"invalid GNO {gno}"):
        decode_gtid_event(EventCode.GTID_LOG_EVENT, untagged_body(gno))


def test_invalid_packed_length_raises() -> None:
    with pytest.raises(ValueError, match="packed length prefix 0xfb"):
        decode_gtid_event(EventCode.GTID_LOG_EVENT, untagged_body(length=b"\xfb"))


def test_anonymous_event_is_a_gtid_event_without_gtid() -> None:
    body = bytes(1 + 16 + 8) + b"\x02" + struct.pack("<qq", 3, 4)
    event = decode_gtid_event(EventCode.ANONYMOUS_GTID_LOG_EVENT, body)
    assert event is not None
    assert (event.anonymous, event.text, event.gno) == (True, "ANONYMOUS", 0)
    assert (event.last_committed, event.sequence_number) == (3, 4)
    assert event not in parse_gtid_set(f"{'0' * 8}-0000-0000-0000-{'0' * 12}:1")
    with pytest.raises(ValueError, match="ANONYMOUS_GTID_LOG_EVENT: invalid GNO 5"):
        decode_gtid_event(EventCode.ANONYMOUS_GTID_LOG_EVENT, untagged_body(5))


def test_other_event_types_are_not_gtid_events() -> None:
    assert decode_gtid_event(EventCode.PREVIOUS_GTIDS_LOG_EVENT, REAL_GTID) is None
    assert decode_gtid_event(EventCode.HEARTBEAT_LOG_EVENT_V2, b"") is None


# ------------------------------------------------------------------ GTID_TAGGED_LOG_EVENT (42)


def test_real_tagged_event() -> None:
    assert decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, REAL_TAGGED) == GtidEvent(
        uuid=SERVER_UUID,
        gno=1,
        tag="probe_tag",
        last_committed=250,
        sequence_number=251,
        immediate_commit_timestamp=1795587649634553,
        original_commit_timestamp=1795587649634553,
        transaction_length=301,
        immediate_server_version=90704,
        original_server_version=90704,
    )
    event = decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, REAL_TAGGED)
    assert event is not None and event.text == f"{SERVER_UUID}:probe_tag:1"


def signed(value: int) -> bytes:
    return encode_varlen(value << 1 if value >= 0 else (~value << 1) | 1)


def message(fields: list[tuple[int, bytes]], last_non_ignorable: int = 0) -> bytes:
    """A serialization message: version 1, its size (counting itself), then the fields."""
    rest = encode_varlen(last_non_ignorable) + b"".join(
        encode_varlen(field_id) + value for field_id, value in fields
    )
    size = 1 + 1 + len(rest)
    while size != 1 + len(encode_varlen(size)) + len(rest):
        size = 1 + len(encode_varlen(size)) + len(rest)
    return encode_varlen(1) + encode_varlen(size) + rest


UUID_FIELD = b"".join(encode_varlen(byte) for byte in UUID_BYTES)


def test_tagged_event_with_optional_fields_and_negative_clock() -> None:
    body = message(
        [
            (0, encode_varlen(1)),
            (1, UUID_FIELD),
            (2, signed(GNO_MAX)),
            (3, encode_varlen(2) + b"t1"),
            (4, bytes.fromhex("ebff0f")),  # -65535, the readme's signed example
            (5, signed(65535)),
            (6, encode_varlen(1000)),
            (7, encode_varlen(900)),
            (8, encode_varlen(70000)),
            (9, encode_varlen(90704)),
            (10, encode_varlen(80400)),
            (11, encode_varlen(77)),
        ]
    )
    assert signed(65535).hex() == "f3ff0f"  # the readme's 00001111 11111111 11110011
    assert decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, body) == GtidEvent(
        uuid=SERVER_UUID,
        gno=GNO_MAX,
        tag="t1",
        flags=1,
        last_committed=-65535,
        sequence_number=65535,
        immediate_commit_timestamp=1000,
        original_commit_timestamp=900,
        transaction_length=70000,
        immediate_server_version=90704,
        original_server_version=80400,
        commit_group_ticket=77,
    )


def test_tagged_event_skips_ignorable_fields_of_newer_servers() -> None:
    base = [(1, UUID_FIELD), (2, signed(3)), (3, encode_varlen(1) + b"x")]
    newer = message([*base, (12, encode_varlen(5)), (13, encode_varlen(6))])
    event = decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, newer)
    assert event is not None and event.text == f"{SERVER_UUID}:x:3"
    with pytest.raises(ValueError, match="may not skip"):
        decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, message(base, last_non_ignorable=13))


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ([(1, UUID_FIELD)], "lacks the uuid or the gno"),
        ([(2, signed(3))], "lacks the uuid or the gno"),
        ([(2, signed(3)), (1, UUID_FIELD)], "field 1 after field 2"),
        ([(1, UUID_FIELD), (2, signed(0))], "invalid GNO 0"),
        ([(1, UUID_FIELD), (2, signed(1)), (3, encode_varlen(2) + b"A!")], "invalid tag"),
        ([(1, UUID_FIELD), (2, signed(1)), (3, encode_varlen(33) + b"a" * 33)], "at most 32"),
        ([(0, encode_varlen(256)), (1, UUID_FIELD), (2, signed(1))], "exceeds 8 bits"),
        ([(1, encode_varlen(256) * 16), (2, signed(1))], "exceeds 8 bits"),
    ],
)
def test_inconsistent_tagged_event_raises(fields: list[tuple[int, bytes]], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, message(fields))


def test_tagged_event_size_must_match_the_body() -> None:
    with pytest.raises(ValueError, match="checksum not cut"):
        decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, REAL_TAGGED + b"\x37\x33\xb9\xf1")
    with pytest.raises(ValueError, match="unknown serialization format 2"):
        decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, b"\x04" + REAL_TAGGED[1:])
    for size in range(len(REAL_TAGGED)):
        with pytest.raises(ValueError, match=r"GTID_TAGGED_LOG_EVENT: .*truncated"):
            decode_gtid_event(EventCode.GTID_TAGGED_LOG_EVENT, REAL_TAGGED[:size])


# ------------------------------------------------------------------ GTID sets: text


def test_add_merges_touching_and_overlapping_intervals() -> None:
    gtids = GtidSet()
    for gno in (5, 1, 3, 2, 9):
        gtids.add(A, "", gno)
    assert str(gtids) == f"{A}:1-3:5:9"
    gtids.add(A, "", 4)
    assert str(gtids) == f"{A}:1-5:9"
    gtids.add_interval(A, "", 7, 8)  # touches 9
    gtids.add_interval(A, "", 20, 30)
    gtids.add_interval(A, "", 6, 21)  # bridges everything
    assert str(gtids) == f"{A}:1-30"
    assert list(gtids.intervals()) == [(A, "", 1, 30)]


def test_text_is_mysqls_canonical_form() -> None:
    # What MySQL 9.7.4 answers for SELECT GTID_SUBTRACT(<the input>, '').
    text = f"{B}:5-7:1-3, {A.upper()}:Zeta:3:alpha:9:4 , {A}:1:2-3"
    expected = f"{A}:1-3:alpha:4:9:zeta:3,\n{B}:1-3:5-7"
    assert str(parse_gtid_set(text)) == expected
    assert str(parse_gtid_set(expected)) == expected


def test_text_tolerates_what_mysql_tolerates() -> None:
    assert str(parse_gtid_set(f"  {A} : 1 - 5 : x : 7\n")) == f"{A}:1-5:x:7"
    assert str(parse_gtid_set(f"{A}:t1:t2:5")) == f"{A}:t2:5"  # a tag without intervals
    assert str(parse_gtid_set(f"{A}:_:1:a_1:2")) == f"{A}:_:1:a_1:2"
    assert str(parse_gtid_set(f"{A},{B}:x")) == ""  # sources without intervals
    assert str(parse_gtid_set(f"{A}:1:{GNO_MAX}")) == f"{A}:1:{GNO_MAX}"
    assert str(parse_gtid_set(f"{A}:010")) == f"{A}:10"  # 9.7 reads decimal, as here
    for empty in ("", " ", ",,", "\n"):
        gtids = parse_gtid_set(empty)
        assert (str(gtids), bool(gtids)) == ("", False)


@pytest.mark.parametrize(
    "text",
    [
        f"{A}:",
        f"{A}:0",
        f"{A}:0-3",
        f"{A}:5-3",
        f"{A}:1-",
        f"{A}:0x10",
        f"{A}:1 2",
        f"{A}:{GNO_MAX + 1}",
        f"{A}:{'t' * 33}:1",
        f"+{A}:1",
        f"{A[:-1]}:1",
        "ANONYMOUS",
        "0-1-100",
    ],
)
def test_malformed_text_raises(text: str) -> None:
    with pytest.raises(ValueError):
        parse_gtid_set(text)


def test_set_operations() -> None:
    executed = parse_gtid_set(f"{A}:1-10:20:t:1-5,{B}:1-3")
    before = parse_gtid_set(f"{A}:1-4:t:2")
    grown = executed - before
    assert str(grown) == f"{A}:5-10:20:t:1:3-5,\n{B}:1-3"
    assert before.issubset(executed) and not executed.issubset(before)
    assert not (before - executed)
    assert GtidEvent(uuid=A, gno=20) in executed
    assert GtidEvent(uuid=A, gno=11) not in executed
    assert GtidEvent(uuid=A, tag="t", gno=2) not in grown
    merged = parse_gtid_set(f"{A}:21")
    merged.update(grown)
    assert str(merged) == f"{A}:5-10:20-21:t:1:3-5,\n{B}:1-3"
    assert parse_gtid_set(f"{A}:1-2") == parse_gtid_set(f"{A}:2,{A}:1")
    assert parse_gtid_set(f"{A}:1") != parse_gtid_set(f"{A}:x:1")


def test_add_refuses_invalid_gtids() -> None:
    gtids = GtidSet()
    for uuid, tag, gno in [(A, "", 0), ("nope", "", 1), (A, "9t", 1), (A, "", GNO_MAX + 1)]:
        with pytest.raises(ValueError):
            gtids.add(uuid, tag, gno)
    assert not gtids


# ------------------------------------------------------------------ GTID sets: encoding


def test_untagged_encoding_by_hand() -> None:
    # n_sids = 1; uuid; n_intervals = 2; [1, 6) and [7, 8), all little-endian.
    expected = (
        struct.pack("<Q", 1)
        + bytes.fromhex("aa" * 16)
        + struct.pack("<Q", 2)
        + struct.pack("<qq", 1, 6)
        + struct.pack("<qq", 7, 8)
    )
    gtids = parse_gtid_set(f"{A}:1-5:7")
    assert gtids.encode() == expected
    assert GtidSet.decode(expected) == gtids


def test_tagged_encoding_by_hand() -> None:
    # The count word: format 1 in the low and the high byte, n_sids = 3 in between.
    expected = (
        bytes.fromhex("0103000000000001")
        + bytes.fromhex("aa" * 16)
        + b"\x00"  # the untagged GTIDs of A: tag length 0
        + struct.pack("<Q", 1)
        + struct.pack("<qq", 1, 3)
        + bytes.fromhex("aa" * 16)
        + b"\x04ab"  # tag "ab": varlen length 2, then the characters
        + struct.pack("<Q", 1)
        + struct.pack("<qq", 3, 4)
        + bytes.fromhex("bb" * 16)
        + b"\x00"
        + struct.pack("<Q", 1)
        + struct.pack("<qq", 9, 10)
    )
    gtids = parse_gtid_set(f"{B}:9,{A}:ab:3,{A}:1-2")
    assert gtids.encode() == expected
    assert GtidSet.decode(expected) == gtids


def test_empty_set_encodes_as_zero_sources() -> None:
    assert GtidSet().encode() == bytes(8)
    assert GtidSet.decode(bytes(8)) == GtidSet()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (bytes.fromhex("0100000000000002"), "unknown GTID set format 2"),
        (struct.pack("<Q", 1) + bytes(16), "truncated"),
        (parse_gtid_set(f"{A}:1").encode() + b"\x00", "1 bytes after the last interval"),
        (
            struct.pack("<Q", 1) + bytes(16) + struct.pack("<Qqqqq", 2, 5, 6, 1, 2),
            "out of order",
        ),
        (struct.pack("<Q", 1) + bytes(16) + struct.pack("<Qqq", 1, 3, 3), "out of order"),
    ],
)
def test_malformed_encoding_raises(data: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        GtidSet.decode(data)


# ------------------------------------------------------------------ MariaDB


@pytest.mark.parametrize(
    ("text", "mariadb"),
    [
        ("0-1-100", True),
        ("0-1-100,1-2-3", True),
        (" 0-1-100 ,\n1-2-3", True),
        ("", False),
        ("0-1", False),
        ("0-1-100,", False),
        (f"{A}:1-5", False),
        (f"{A}:1-5,0-1-2", False),
    ],
)
def test_mariadb_gtid_lists_are_told_apart(text: str, mariadb: bool) -> None:
    assert is_mariadb_gtid_set(text) is mariadb
