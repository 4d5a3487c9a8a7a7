"""Binlog events straight from the dump connection, framed by us into one large buffer.

Once ``bridge.parse.binlog.dump`` has sent the dump command, the connection carries binlog events
only. ``EventReader`` reads the socket in large chunks, cuts them into MySQL packets and binlog
events, and hands out each event's bytes; ``RawEvent`` gives its 19-byte header fields. Building
an object per network packet (as a client library would) costs more than decoding the rows.

Where the compiled module is loaded (``bridge.native``), its ``binlog_events`` cuts every whole
event packet of a read in one call; anything else (an error or EOF packet, a packet not whole
yet) is read by the Python loop, which is also the twin.

Failures: an error packet from the server is raised as pymysql raises it (so
``BinlogPurged`` and friends are recognised as before); a short read (the server or ``stop()``
closed the connection) raises ``ConnectionError``.
"""

from __future__ import annotations

import select
import ssl
from collections.abc import Callable
from typing import Any

from pymysql.protocol import MysqlPacket

from bridge import native
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.events import (
    CHECKSUM_SIZE,
    HEADER,
    HEADER_SIZE,
    LOG_POS,
    LOG_POS_AT,
    TYPE_CODE_AT,
    rotation,
)

MAX_PACKET = 0xFFFFFF
# The most one read of the socket asks for (more only for an event larger than that). Below
# glibc's mmap threshold (128 KiB), a read's buffer comes from the heap: a 1 MiB buffer was
# mapped, shrunk and unmapped on every read (reads return what the socket holds, a few tens of
# KiB), three system calls and page faults per read, half a microsecond per row of one-row
# transactions (bench/results/history.md).
READ_SIZE = 1 << 16


_ROTATE = EventCode.ROTATE_EVENT
_SHORT_EVENT = f"a binlog event shorter than its {HEADER_SIZE}-byte header"


def read_end(events: list[bytes], checksum: bool, journal: str, position: int) -> tuple[str, int]:
    """Where a read of ``events`` leaves the binlog, the read before having left it at
    ``journal``, ``position``: the file the last ROTATE among them names, and the log_pos
    of the last event after it that has one (a reconnect resumes there). Raises ValueError
    for an event shorter than its header: a broken stream.

    Where the compiled module is loaded, its ``read_end`` (the same, in one call: a Python
    loop over every event of a read cost half a microsecond per one-row transaction)."""
    compiled = native.module
    if compiled is not None:
        return compiled.read_end(events, checksum, journal, position)
    for data in events:
        if len(data) < HEADER_SIZE:
            raise ValueError(_SHORT_EVENT)
        if data[TYPE_CODE_AT] == _ROTATE:
            position, journal = rotation(data, len(data) - CHECKSUM_SIZE * checksum)
        elif log_pos := LOG_POS.unpack_from(data, LOG_POS_AT)[0]:
            position = log_pos
    return journal, position


class RawEvent:
    """One binlog event: its header fields and bytes (``data``: header + body + checksum).

    ``body_end`` excludes the checksum. Events unpacked from a TRANSACTION_PAYLOAD take the
    payload event's ``log_pos`` and ``event_size`` (``bridge.parse.binlog.payload``): they have no
    position of their own in the binlog file.
    """

    __slots__ = (
        "body_end",
        "data",
        "event_size",
        "flags",
        "log_pos",
        "server_id",
        "timestamp",
        "type_code",
    )

    def __init__(self, data: bytes, checksum: bool) -> None:
        (
            self.timestamp,
            self.type_code,
            self.server_id,
            self.event_size,
            self.log_pos,
            self.flags,
        ) = HEADER.unpack_from(data, 0)
        self.data = data
        self.body_end = len(data) - (CHECKSUM_SIZE if checksum else 0)

    @property
    def start(self) -> int:
        """Where the event starts in its binlog file."""
        return int(self.log_pos - self.event_size)


class EventReader:
    """Cuts the dump connection's byte stream into binlog events.

    Bytes already buffered by pymysql's reader are taken first, so nothing is lost at the hand
    over. The reader owns the connection's input from then on.
    """

    def __init__(self, connection: Any, before_read: Callable[[bool], None] | None = None) -> None:
        """``before_read(waits)`` runs before each read of the socket; ``waits`` says the
        socket has nothing to read yet, so the read waits for the source: everything the
        source has written so far has been handed out (the moment to hand it on, and to say
        so: ``bridge.parse.child``)."""
        self._file = connection._rfile
        self._socket = connection._sock
        self._encoding = connection.encoding
        self._before_read = before_read
        self._readable = select.poll()
        self._readable.register(self._socket, select.POLLIN)
        self._buffer = b""
        self._pos = 0
        # Events ``next_events`` gave ``next_event``, handed out from ``_taken`` on.
        self._ready: list[bytes] = []
        self._taken = 0

    def _source_waits(self) -> bool:
        """Whether a read now would wait for the source: nothing on the socket, nothing
        decrypted and held by TLS."""
        sock = self._socket
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return False
        return not self._readable.poll(0)

    def _fill(self, need: int) -> None:
        """Makes ``need`` bytes available from ``_pos`` (reads in chunks of ``READ_SIZE``)."""
        chunks = [self._buffer[self._pos :]]
        have = len(chunks[0])
        while have < need:
            if self._before_read is not None:
                self._before_read(self._source_waits())
            chunk = self._file.read1(max(READ_SIZE, need - have))
            if not chunk:
                raise ConnectionError("the source closed the binlog stream")
            chunks.append(chunk)
            have += len(chunk)
        self._buffer = b"".join(chunks)
        self._pos = 0

    def _whole_packet(self) -> int:
        """Makes the packet at ``_pos`` whole in the buffer (not its continuations); returns
        its payload length."""
        if len(self._buffer) - self._pos < 4:
            self._fill(4)
        buffer, pos = self._buffer, self._pos
        length = buffer[pos] | buffer[pos + 1] << 8 | buffer[pos + 2] << 16
        if len(buffer) - pos < 4 + length:
            self._fill(4 + length)
        return length

    def _payload(self) -> bytes:
        """The next MySQL packet's payload (continuation packets joined)."""
        parts: list[bytes] = []
        while True:
            length = self._whole_packet()
            buffer, pos = self._buffer, self._pos
            start = pos + 4
            self._pos = start + length
            if length < MAX_PACKET and not parts:
                return buffer[start : self._pos]
            parts.append(buffer[start : self._pos])
            if length < MAX_PACKET:
                return b"".join(parts)

    def next_event(self) -> bytes | None:
        """The next event's bytes, or None when the server ends the stream (EOF packet)."""
        if self._taken >= len(self._ready):
            events = self.next_events()
            if events is None:
                return None
            self._ready, self._taken = events, 0
        data = self._ready[self._taken]
        self._taken += 1
        return data

    def next_events(self) -> list[bytes] | None:
        """The next events' bytes (at least one: as many as the compiled framing cut from what
        was read, and those ``next_event`` left), or None when the server ends the stream."""
        if self._taken < len(self._ready):
            events = self._ready[self._taken :]
            self._ready, self._taken = [], 0
            return events
        compiled = native.module
        if compiled is not None:
            self._whole_packet()
            events = []
            self._pos = compiled.binlog_events(self._buffer, self._pos, events)
            if events:
                return events
            # No event packet, or one continued past what was read: the Python loop reads it.
        payload = self._payload()
        marker = payload[0] if payload else 0xFE
        if marker == 0:
            return [payload[1:]]
        if marker == 0xFE and len(payload) < 9:
            return None
        if marker == 0xFF:
            MysqlPacket(payload, self._encoding).raise_for_error()
        raise ConnectionError(f"unexpected packet type {marker:#x} in the binlog stream")
