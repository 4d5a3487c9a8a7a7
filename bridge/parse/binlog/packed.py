"""MySQL's length-encoded ("packed") integer, read in one place for every event decoder.

``net_field_length``: a first byte below 251 is the value; 252, 253 and 254 are followed by the
value in 2, 3 and 8 little-endian bytes; 251 (NULL in result sets) and 255 never start a length
in binlog events.
"""

from __future__ import annotations

_SIZES = {252: 2, 253: 3, 254: 8}


def extra_bytes(first: int) -> int | None:
    """How many bytes follow a packed integer's first byte (0 for a one-byte value), or None
    when ``first`` starts no packed integer: for decoders with a reader of their own."""
    return 0 if first < 251 else _SIZES.get(first)


class BadPackedInteger(ValueError):
    """A packed integer that is malformed or runs past ``end``; callers translate it into
    their own error with the event's context."""


def read_packed_int(data: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """The packed integer at ``pos`` -> (value, position after it); never reads at or past
    ``end`` (default: the end of ``data``)."""
    end = len(data) if end is None else end
    if pos >= end:
        raise BadPackedInteger(f"truncated: a packed integer at byte {pos} needs 1 byte, 0 left")
    first = data[pos]
    if first < 251:
        return first, pos + 1
    size = extra_bytes(first)
    if size is None:
        raise BadPackedInteger(f"byte {pos} is {first:#x}, which starts no packed integer")
    if pos + 1 + size > end:
        raise BadPackedInteger(
            f"truncated: a packed integer at byte {pos} needs {1 + size} bytes, {end - pos} left"
        )
    return int.from_bytes(data[pos + 1 : pos + 1 + size], "little"), pos + 1 + size
