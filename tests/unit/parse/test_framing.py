"""EventReader: packets cut into events, and whether a read would wait for the source, on both
framing paths (the compiled ``binlog_events`` and the Python loop)."""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pymysql
import pytest

from bridge import native
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.events import HEADER
from bridge.parse.binlog.framing import MAX_PACKET, EventReader, read_end
from tests.native_paths import compiled_module


@dataclass
class _Connection:
    """The three things EventReader takes from a pymysql connection."""

    _sock: socket.socket
    _rfile: Any
    encoding: str = "utf8"


@pytest.fixture(autouse=True, params=["python", "compiled"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    compiled = compiled_module() if request.param == "compiled" else None
    monkeypatch.setattr(native, "module", compiled)
    return str(request.param)


def _raw_packet(payload: bytes, sequence: int = 1) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([sequence % 256]) + payload


def _packet(event: bytes, sequence: int = 1) -> bytes:
    """One event's packet: OK marker, then the event; split into continuation packets as a
    server splits a payload of 16 MiB or more."""
    payload = b"\x00" + event
    chunks = [payload[at : at + MAX_PACKET] for at in range(0, len(payload), MAX_PACKET)]
    if len(chunks[-1]) == MAX_PACKET:
        chunks.append(b"")  # a payload of exactly n x 16 MiB - 1 ends with an empty packet
    return b"".join(_raw_packet(chunk, sequence + i) for i, chunk in enumerate(chunks))


def _reader_of(ours: socket.socket) -> tuple[EventReader, list[bool]]:
    """A reader of ``ours``, and the list its ``before_read`` calls fill."""
    waits: list[bool] = []
    return EventReader(_Connection(ours, ours.makefile("rb")), waits.append), waits


@pytest.fixture
def ends() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, source = socket.socketpair()
    yield ours, source
    ours.close()
    source.close()


def test_before_read_says_whether_the_source_has_more(
    ends: tuple[socket.socket, socket.socket],
) -> None:
    ours, source = ends
    reader, waits = _reader_of(ours)
    source.sendall(_packet(b"first"))
    assert reader.next_event() == b"first"
    assert waits == [False], "bytes were on the socket: the read does not wait"

    later = threading.Timer(0.05, source.sendall, args=(_packet(b"second", 2),))
    later.start()
    assert reader.next_event() == b"second"
    later.join(5)
    assert waits == [False, True], "nothing on the socket: the read waits for the source"


def test_an_event_split_across_reads_is_joined(
    ends: tuple[socket.socket, socket.socket],
) -> None:
    ours, source = ends
    reader, waits = _reader_of(ours)
    packet = _packet(b"x" * 1000)
    source.sendall(packet[:10])
    later = threading.Timer(0.05, source.sendall, args=(packet[10:],))
    later.start()
    assert reader.next_event() == b"x" * 1000
    later.join(5)
    assert waits == [False, True]


def _send_in_pieces(source: socket.socket, data: bytes, seed: int) -> threading.Thread:
    """Sends ``data`` in pieces of random sizes, so packets straddle the reader's reads."""
    pieces = random.Random(seed)

    def send() -> None:
        at = 0
        while at < len(data):
            size = pieces.choice((1, 7, 300, 5000, 70_000, 1 << 20))
            source.sendall(data[at : at + size])
            at += size

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    return sender


def test_every_event_comes_out_whole_and_in_order(
    ends: tuple[socket.socket, socket.socket],
) -> None:
    ours, source = ends
    reader, _ = _reader_of(ours)
    sizes = random.Random(5)
    events = [bytes([i % 251]) * sizes.choice((0, 1, 19, 200, 70_000)) for i in range(2000)]
    events[700] = b"\x01" * MAX_PACKET  # its payload (marker + event) takes two packets
    events[701] = b"\x02" * (MAX_PACKET - 1)  # exactly one full packet and an empty one
    sender = _send_in_pieces(source, b"".join(_packet(event) for event in events), seed=9)
    got = [reader.next_event() for _ in events]
    sender.join(30)
    assert [(len(e), e[:1]) for e in got] == [(len(e), e[:1]) for e in events]
    assert got == events


def test_the_end_of_the_stream_and_an_error_after_events_are_read_in_turn(
    ends: tuple[socket.socket, socket.socket],
) -> None:
    ours, source = ends
    reader, _ = _reader_of(ours)
    eof = _raw_packet(b"\xfe\x00\x00\x02\x00")
    source.sendall(_packet(b"one") + _packet(b"two") + eof)
    assert [reader.next_event(), reader.next_event(), reader.next_event()] == [b"one", b"two", None]

    error = b"\xff" + (1236).to_bytes(2, "little") + b"#HY000" + b"Could not find first log"
    source.sendall(_packet(b"three") + _raw_packet(error) + _packet(b"never"))
    assert reader.next_event() == b"three"
    with pytest.raises(pymysql.err.OperationalError, match="Could not find first log"):
        reader.next_event()


def test_the_compiled_path_cuts_a_read_in_one_call(
    ends: tuple[socket.socket, socket.socket], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the compiled framing is for: one call per read, not one per packet."""
    if path != "compiled":
        pytest.skip("the compiled path only")
    calls: list[int] = []
    compiled = native.module
    assert compiled is not None

    class Counting:
        def binlog_events(self, buffer: bytes, at: int, events: list[bytes]) -> int:
            calls.append(at)
            return compiled.binlog_events(buffer, at, events)

    monkeypatch.setattr(native, "module", Counting())
    ours, source = ends
    reader, _ = _reader_of(ours)
    source.sendall(b"".join(_packet(b"e%d" % i) for i in range(100)))
    assert [reader.next_event() for _ in range(100)] == [b"e%d" % i for i in range(100)]
    assert len(calls) == 1


def test_next_events_hands_out_what_one_read_holds_after_what_next_event_left(
    ends: tuple[socket.socket, socket.socket], path: str
) -> None:
    ours, source = ends
    reader, _ = _reader_of(ours)
    source.sendall(b"".join(_packet(b"e%d" % i) for i in range(5)))
    assert reader.next_event() == b"e0"
    handed = [reader.next_events() for _ in range(4 if path == "python" else 1)]
    # the compiled framing cuts the whole read at once, the Python loop one packet a call
    assert [event for events in handed for event in events or []] == [b"e1", b"e2", b"e3", b"e4"]
    source.sendall(_raw_packet(b"\xfe\x00\x00\x02\x00"))
    assert reader.next_events() is None


def _event(code: int, log_pos: int, body: bytes = b"", checksum: bool = False) -> bytes:
    tail = b"\1\2\3\4" if checksum else b""
    return HEADER.pack(1_700_000_000, code, 1, 19 + len(body) + len(tail), log_pos, 0) + body + tail


def _rotate(position: int, name: bytes, checksum: bool = False) -> bytes:
    return _event(EventCode.ROTATE_EVENT, 0, position.to_bytes(8, "little") + name, checksum)


@pytest.mark.parametrize("checksum", [False, True])
def test_a_read_ends_at_the_last_log_pos_after_its_last_rotate(checksum: bool) -> None:
    beat = _event(EventCode.HEARTBEAT_LOG_EVENT, 0, checksum=checksum)  # no log_pos
    events = [
        _event(EventCode.XID_EVENT, 500, b"\0" * 8, checksum),
        beat,
        _rotate(4, b"mariadb-bin.000002", checksum),
        _event(EventCode.FORMAT_DESCRIPTION_EVENT, 0, b"\0" * 10, checksum),
        _event(EventCode.MARIADB_GTID_EVENT, 300, b"\0" * 13, checksum),
        beat,
    ]
    before = ("mariadb-bin.000001", 120)
    assert read_end([], checksum, *before) == before
    assert read_end(events[:2], checksum, *before) == ("mariadb-bin.000001", 500)
    assert read_end(events[:4], checksum, *before) == ("mariadb-bin.000002", 4)
    assert read_end(events, checksum, *before) == ("mariadb-bin.000002", 300)


def test_a_read_with_an_event_shorter_than_a_header_is_a_broken_stream() -> None:
    with pytest.raises(ValueError, match="shorter than its 19-byte header"):
        read_end([_event(EventCode.XID_EVENT, 500), b"\0" * 18], False, "mariadb-bin.000001", 4)


def test_a_rotate_to_a_file_name_that_is_not_utf8_raises_as_python_decodes_it() -> None:
    with pytest.raises(UnicodeDecodeError):
        read_end([_rotate(4, b"bin.\xff")], False, "mariadb-bin.000001", 4)
