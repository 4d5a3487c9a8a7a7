"""``canal_bridge_native.text_rows`` reads text-protocol row packets as PyMySQL does: NULLs,
every length prefix, a row over 16 MiB in continuation packets, an incomplete packet left for
the next bytes, the EOF packet and an error packet."""

from __future__ import annotations

from typing import Any

from tests.native_paths import compiled_module

RAW, INT, CONVERT = 0, 1, 2
MORE, END, ERROR = 0, 1, 2


def _packets(payload: bytes, seq: int = 0) -> bytes:
    """``payload`` framed as the server frames it (16 MiB - 1 pieces, then a shorter one)."""
    out, limit = b"", 0xFFFFFF
    while True:
        piece, payload = payload[:limit], payload[limit:]
        out += len(piece).to_bytes(3, "little") + bytes([seq % 256]) + piece
        seq += 1
        if len(piece) < limit:
            return out


def _text(value: bytes | None) -> bytes:
    if value is None:
        return b"\xfb"
    n = len(value)
    if n < 0xFB:
        return bytes([n]) + value
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + value
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little") + value
    return b"\xfe" + n.to_bytes(8, "little") + value


EOF_PACKET = _packets(b"\xfe\x00\x00\x02\x00")


def test_rows_values_and_the_end() -> None:
    module = compiled_module()
    big = bytes(range(256)) * 70_000  # over 16 MiB: two continuation packets
    rows_in = [
        (b"-9223372036854775808", b"note", None),
        (b"18446744073709551615", b"x" * 300, b"1.5"),
        (b"007", big, b"2"),
        (None, b"", b"-0"),
    ]
    buffer = b"".join(_packets(b"".join(map(_text, row))) for row in rows_in) + EOF_PACKET
    rows: list[Any] = []
    offset, state = module.text_rows(buffer, bytes([INT, RAW, CONVERT]), (int, bytes, float), rows)
    assert (offset, state) == (len(buffer), END)
    assert rows == [
        (-9223372036854775808, b"note", None),
        (18446744073709551615, b"x" * 300, 1.5),
        (7, big, 2.0),
        (None, b"", -0.0),
    ]


def test_an_incomplete_packet_is_left_and_an_error_packet_named() -> None:
    module = compiled_module()
    first, second = _packets(_text(b"1")), _packets(_text(b"22"))
    rows: list[Any] = []
    buffer = first + second[:-1]
    assert module.text_rows(buffer, bytes([INT]), (int,), rows) == (len(first), MORE)
    assert rows == [(1,)]
    error = _packets(b"\xff\x7a\x04#HY000oops")
    assert module.text_rows(second + error, bytes([INT]), (int,), rows) == (len(second), ERROR)
    assert rows == [(1,), (22,)]
    # Not a plain integer: the column's converter decides, as PyMySQL's int() would.
    rows.clear()
    assert (
        module.text_rows(_packets(_text(b" 5")) + EOF_PACKET, bytes([INT]), (int,), rows)[1] == END
    )
    assert rows == [(5,)]
