"""The rows of a chunk's SELECT, read by the compiled path where it is built.

PyMySQL reads a result set one packet and one column at a time in Python (in the 1M-row
snapshot benchmark, 44 % of the snapshot reader process). Here PyMySQL still sends the query
and reads the column descriptions (``query(sql, unbuffered=True)``: its converters per
column), and the row packets are read from the connection's buffered socket in blocks and
made into the same tuples by ``canal_bridge_native.text_rows``: bytes where PyMySQL converts
nothing, ints where its converter is ``int``, its converter's value otherwise. Without the
compiled module, the cursor's ``fetchall`` (the twin, compared in
tests/integration/test_snapshot_result.py).

This reaches into PyMySQL: ``Connection._result`` (the unbuffered result, whose
``converters`` and ``unbuffered_active`` it reads and ends) and ``Connection._rfile`` (the
socket's reader). PyMySQL is pinned below its next major version in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pymysql
from pymysql.constants import CR
from pymysql.protocol import MysqlPacket

from bridge import native

READ_BYTES = 1 << 16
_HEADER = 4
# Column kinds and answers as ``canal_bridge_native.text_rows`` numbers them.
_RAW, _INT, _CONVERT = 0, 1, 2
_END, _ERROR = 1, 2


def fetch_rows(conn: Any, statement: str, params: Sequence[Any]) -> Sequence[tuple[Any, ...]]:
    """The rows ``statement`` (with ``params``, escaped as PyMySQL's cursor escapes them)
    selects on ``conn``, as PyMySQL's ``fetchall`` returns them."""
    compiled = native.module
    with conn.cursor() as cursor:
        if compiled is None:
            cursor.execute(statement, params)
            rows: Sequence[tuple[Any, ...]] = cursor.fetchall()
            return rows
        sql = cursor.mogrify(statement, params)
    conn.query(sql, unbuffered=True)
    result = conn._result
    if result is None or not result.unbuffered_active:  # no result set
        return ()
    try:
        return _read_rows(conn, compiled, result.converters)
    except BaseException:
        conn._force_close()  # the rest of the result would come as the next answer
        raise
    finally:
        result.unbuffered_active = False
        result.connection = None


def _read_rows(
    conn: Any, compiled: native.Compiled, converters: Sequence[tuple[str | None, Any]]
) -> list[tuple[Any, ...]]:
    kinds = bytes(_kind(encoding, converter) for encoding, converter in converters)
    convert = tuple(_converter(encoding, converter) for encoding, converter in converters)
    source = conn._rfile
    rows: list[tuple[Any, ...]] = []
    pending = b""
    while True:
        want = READ_BYTES
        if len(pending) >= _HEADER:  # a packet larger than what came: read it whole
            want = max(want, _HEADER + _length(pending, 0) - len(pending))
        block = _read(source, want, exact=want > READ_BYTES)
        buffer = pending + block if pending else block
        offset, state = compiled.text_rows(buffer, kinds, convert, rows)
        if state == _END:
            return rows
        if state == _ERROR:
            start = offset + _HEADER
            payload = buffer[start : start + _length(buffer, offset)]
            MysqlPacket(payload, conn.encoding).raise_for_error()
        pending = buffer[offset:]


def _length(buffer: bytes, at: int) -> int:
    """The payload length in the header of the packet at ``at``."""
    return int.from_bytes(buffer[at : at + 3], "little")


def _read(source: Any, count: int, *, exact: bool) -> bytes:
    """Up to ``count`` bytes (all of them when ``exact``) from the socket; a lost connection
    raised as PyMySQL raises it."""
    try:
        block: bytes = source.read(count) if exact else source.read1(count)
    except OSError as exc:
        raise pymysql.err.OperationalError(
            CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query ({exc})"
        ) from exc
    if not block or (exact and len(block) < count):
        raise pymysql.err.OperationalError(
            CR.CR_SERVER_LOST, "Lost connection to MySQL server during query"
        )
    return block


def _kind(encoding: str | None, converter: Any) -> int:
    if encoding is None and converter is None:
        return _RAW
    if converter is int and encoding == "ascii":
        return _INT
    return _CONVERT


def _converter(encoding: str | None, converter: Any) -> Callable[[bytes], Any]:
    """A column's value from its bytes, as PyMySQL's ``_read_row_from_packet`` makes it."""
    if encoding is None:
        return converter if converter is not None else bytes
    if converter is None:
        return lambda data: data.decode(encoding)
    return lambda data: converter(data.decode(encoding))
