"""MySQL's TRANSACTION_PAYLOAD events (``binlog_transaction_compression=ON``, MySQL >= 8.0.20).

A compressed transaction is one binlog event: after its GTID event, a TRANSACTION_PAYLOAD whose
body is a header of fields, then the transaction's own events (BEGIN, TABLE_MAP, rows, XID)
compressed with zstd. Those inner events have full 19-byte headers, no checksum, and
``log_pos`` 0: they have no place of their own in the binlog file.

Layout of the body (``Transaction_payload_event`` in MySQL's
``libs/mysql/binlog/event/control_events``): fields, each a length-encoded type, a
length-encoded size and a length-encoded value, until the type 0 (end of header); then the
payload. Types: 1 payload size, 2 compression (0 zstd, 255 none), 3 uncompressed size.

``inner_events`` decompresses as it goes and yields one inner event at a time, so a
transaction of a million rows never sits decompressed in memory: what is held is the
compressed event and the inner event being converted. Each inner event takes the payload
event's header position and size, so entries of a compressed transaction carry the position
of the payload (a restart after its XID resumes after the payload, as after any transaction).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import BinaryIO, cast

import zstandard

from bridge.parse.binlog.events import HEADER, HEADER_SIZE
from bridge.parse.binlog.framing import RawEvent
from bridge.parse.binlog.packed import BadPackedInteger, read_packed_int
from bridge.parse.exceptions import CorruptPayload

FIELD_END = 0
FIELD_PAYLOAD_SIZE = 1
FIELD_COMPRESSION = 2
FIELD_UNCOMPRESSED_SIZE = 3
COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
_READ_CHUNK = 1 << 16
# The header's event_size and log_pos (both 4 bytes), and the flags after them.
_SIZE_AT, _FLAGS_AT = 9, 17
_SIZE_AND_POS = struct.Struct("<II")


def payload_header(data: bytes, body_end: int) -> tuple[dict[int, int], int]:
    """The header fields of a TRANSACTION_PAYLOAD (``data`` from its event header) and where
    the payload starts."""
    fields: dict[int, int] = {}
    pos = HEADER_SIZE
    try:
        while pos < body_end:
            field, pos = read_packed_int(data, pos, body_end)
            if field == FIELD_END:
                return fields, pos
            size, pos = read_packed_int(data, pos, body_end)
            value, _ = read_packed_int(data, pos, body_end)
            fields[field] = value
            pos += size
    except BadPackedInteger as exc:
        raise CorruptPayload(f"a TRANSACTION_PAYLOAD header is damaged: {exc}") from exc
    raise CorruptPayload("a TRANSACTION_PAYLOAD header has no end mark")


def inner_events(raw: RawEvent) -> Iterator[RawEvent]:
    """The events inside a TRANSACTION_PAYLOAD, one at a time, in order."""
    for data in inner_event_bytes(raw):
        yield RawEvent(data, checksum=False)


def inner_event_bytes(raw: RawEvent) -> Iterator[bytes]:
    """The bytes of the events inside a TRANSACTION_PAYLOAD, one at a time, in order, each
    header's size and position replaced by the payload event's (no checksum), so that any
    reader of event bytes places them where the payload is."""
    fields, start = payload_header(raw.data, raw.body_end)
    compression = fields.get(FIELD_COMPRESSION, COMPRESSION_ZSTD)
    payload = memoryview(raw.data)[start : raw.body_end]
    stream: BinaryIO
    if compression == COMPRESSION_ZSTD:
        stream = cast(
            BinaryIO,
            zstandard.ZstdDecompressor().stream_reader(payload, read_size=_READ_CHUNK),
        )
    elif compression == COMPRESSION_NONE:
        stream = io.BytesIO(payload)
    else:
        raise CorruptPayload(
            f"TRANSACTION_PAYLOAD at {raw.start} uses compression type {compression}, which "
            "canal-bridge does not know (MySQL writes 0, zstd): the source is newer than this "
            "version of canal-bridge"
        )
    expected = fields.get(FIELD_UNCOMPRESSED_SIZE)
    unpacked = 0
    with stream:
        while True:
            header = _read_exactly(stream, HEADER_SIZE, raw)
            if not header:
                if expected is not None and unpacked != expected:
                    raise CorruptPayload(
                        f"the TRANSACTION_PAYLOAD at {raw.start} unpacks to {unpacked} bytes "
                        f"instead of {expected}: it is truncated or damaged"
                    )
                return
            event_size = HEADER.unpack_from(header, 0)[3]
            if event_size < HEADER_SIZE:
                raise CorruptPayload(
                    f"an event of {event_size} bytes inside the TRANSACTION_PAYLOAD at {raw.start}"
                )
            body = _read_exactly(stream, event_size - HEADER_SIZE, raw, partial=False)
            unpacked += event_size
            yield (
                header[:_SIZE_AT]
                + _SIZE_AND_POS.pack(raw.event_size, raw.log_pos)
                + (header[_FLAGS_AT:] + body)
            )


def _read_exactly(stream: BinaryIO, size: int, raw: RawEvent, partial: bool = True) -> bytes:
    """``size`` bytes, or b"" at a clean end (only where ``partial`` allows one)."""
    chunks: list[bytes] = []
    have = 0
    try:
        while have < size:
            chunk = stream.read(size - have)
            if not chunk:
                break
            chunks.append(chunk)
            have += len(chunk)
    except zstandard.ZstdError as exc:
        raise CorruptPayload(
            f"the TRANSACTION_PAYLOAD at {raw.start} does not unpack: {exc}"
        ) from exc
    if have == size or (have == 0 and partial):
        return b"".join(chunks)
    raise CorruptPayload(f"the TRANSACTION_PAYLOAD at {raw.start} ends inside an event")
