"""EventReader: packets cut into events, and whether a read would wait for the source."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from bridge.parse.framing import EventReader


@dataclass
class _Connection:
    """The three things EventReader takes from a pymysql connection."""

    _sock: socket.socket
    _rfile: Any
    encoding: str = "utf8"


def _packet(event: bytes, sequence: int = 1) -> bytes:
    payload = b"\x00" + event  # OK marker, then the event
    return len(payload).to_bytes(3, "little") + bytes([sequence]) + payload


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
