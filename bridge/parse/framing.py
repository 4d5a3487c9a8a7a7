"""Binlog events straight from the dump connection, framed by us into one large buffer.

mysql-replication connects, registers as a replica and sends the dump command; from then on
it would read every network packet into a ``MysqlPacket``, wrap it in a
``BinLogPacketWrapper`` and build an event object through several layers, which costs more
than decoding the rows. ``EventReader`` instead reads the socket in large chunks, cuts them into
MySQL packets and binlog events itself, and hands out a ``RawEvent`` per event: the 19-byte
header fields plus the event bytes. The converter (``bridge.parse.convert``) decodes the hot
events (rows, TABLE_MAP, XID, MariaDB GTID) from those bytes and gives every other kind back to
mysql-replication's own classes (``LibraryEvents``), so their parsing stays the library's.

The hand-over uses the stream reader's name-mangled connect methods and settings (checksum,
optional metadata), as mysql-replication 1.0.x has them; pyproject pins ``<1.1``.

Failures: an error packet from the server is raised as pymysql raises it (so
``BinlogPurged`` and friends are recognised as before); a short read (the server or ``stop()``
closed the connection) raises ``ConnectionError``.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from typing import Any

from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.packet import BinLogPacketWrapper

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
HEADER_SIZE = 19
MAX_PACKET = 0xFFFFFF
READ_SIZE = 1 << 20
ROTATE_EVENT = 4
FORMAT_DESCRIPTION_EVENT = 15
CHECKSUM_SIZE = 4
_PRIVATE = "_BinLogStreamReader__"  # the stream reader's name-mangled attributes


class RawEvent:
    """One binlog event: its header fields and bytes (``data``: header + body + checksum).

    ``body_end`` excludes the checksum; ``packet`` and ``timestamp`` mirror what the library's
    events offer, so headers are built the same way for both.
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
    def packet(self) -> RawEvent:
        return self


class EventReader:
    """Cuts the dump connection's byte stream into binlog events.

    Bytes already buffered by pymysql's reader are taken first, so nothing is lost at the hand
    over. The reader owns the connection's input from then on.
    """

    def __init__(self, connection: Any, before_read: Callable[[], None] | None = None) -> None:
        """``before_read`` runs before each read of the socket, which may wait for the source:
        the moment to hand on what was read so far."""
        self._file = connection._rfile
        self._encoding = connection.encoding
        self._before_read = before_read
        self._buffer = b""
        self._pos = 0

    def _fill(self, need: int) -> None:
        """Makes ``need`` bytes available from ``_pos`` (reads in chunks of ``READ_SIZE``)."""
        chunks = [self._buffer[self._pos :]]
        have = len(chunks[0])
        while have < need:
            if self._before_read is not None:
                self._before_read()
            chunk = self._file.read1(max(READ_SIZE, need - have))
            if not chunk:
                raise ConnectionError("the source closed the binlog stream")
            chunks.append(chunk)
            have += len(chunk)
        self._buffer = b"".join(chunks)
        self._pos = 0

    def _payload(self) -> bytes:
        """The next MySQL packet's payload (continuation packets joined)."""
        parts: list[bytes] = []
        while True:
            if len(self._buffer) - self._pos < 4:
                self._fill(4)
            buffer, pos = self._buffer, self._pos
            length = buffer[pos] | buffer[pos + 1] << 8 | buffer[pos + 2] << 16
            if len(buffer) - pos < 4 + length:
                self._fill(4 + length)
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
        payload = self._payload()
        marker = payload[0] if payload else 0xFE
        if marker == 0:
            return payload[1:]
        if marker == 0xFE and len(payload) < 9:
            return None
        if marker == 0xFF:
            MysqlPacket(payload, self._encoding).raise_for_error()
        raise ConnectionError(f"unexpected packet type {marker:#x} in the binlog stream")


class LibraryEvents:
    """Builds mysql-replication's own event object from an event's bytes, exactly as the
    library's ``fetchone`` would (same arguments, read from the stream reader)."""

    def __init__(self, stream: BinLogStreamReader, allowed: frozenset[type[Any]]) -> None:
        self._stream = stream
        self._allowed = allowed
        self.post_header_lengths: bytes | None = None

    @property
    def checksum(self) -> bool:
        """Whether events end with a CRC32 (the library asked the server when connecting)."""
        return bool(getattr(self._stream, _PRIVATE + "use_checksum", False))

    def build(self, event: bytes, table_map: dict[int, Any] | None = None) -> Any:
        """The library's event object, or None when it is not one of ``allowed``.

        ``table_map`` receives a TABLE_MAP's table (a fresh dict by default, so the library's
        frozen-schema shortcut never skips a definition we ask it to parse)."""
        stream = self._stream
        wrapper = BinLogPacketWrapper(
            MysqlPacket(b"\x00" + event, stream._stream_connection.encoding),
            {} if table_map is None else table_map,
            stream._ctl_connection,
            stream.mysql_version,
            self.checksum,
            self._allowed,
            None,
            None,
            None,
            None,
            True,
            False,
            False,
            getattr(stream, _PRIVATE + "optional_meta_data", False),
            False,
            False,
            self.post_header_lengths,
        )
        if wrapper.event_type == FORMAT_DESCRIPTION_EVENT and wrapper.event is not None:
            stream.mysql_version = wrapper.event.mysql_version
            self.post_header_lengths = bytes(wrapper.event.post_header_len)
        return wrapper.event


def follow(stream: BinLogStreamReader, raw: RawEvent) -> None:
    """Keeps the stream reader's position where its ``fetchone`` would have it, for a
    reconnect: after the last event, or where a ROTATE points."""
    if raw.type_code == ROTATE_EVENT:
        data = raw.data
        stream.log_pos = int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
        stream.log_file = data[HEADER_SIZE + 8 : raw.body_end].decode()
    elif raw.log_pos:
        stream.log_pos = raw.log_pos


def reconnect(stream: BinLogStreamReader) -> Any:
    """A new dump connection from the stream's position (what the library does when it loses
    the connection), leaving its control connection open."""
    with contextlib.suppress(Exception):  # already broken; a new connection replaces it
        stream._stream_connection.close()
    setattr(stream, _PRIVATE + "connected_stream", False)
    return connect(stream)


def connect(stream: BinLogStreamReader) -> Any:
    """Connects ``stream`` and sends the dump command, as its first ``fetchone`` would; returns
    the dump connection, whose input ``EventReader`` then reads."""
    if not getattr(stream, _PRIVATE + "connected_stream"):
        getattr(stream, _PRIVATE + "connect_to_stream")()
    if not getattr(stream, _PRIVATE + "connected_ctl"):
        getattr(stream, _PRIVATE + "connect_to_ctl")()
    return stream._stream_connection
