"""One snapshot reader connection's work on the source: describe a table, read a chunk of it
after a key, estimate its rows (docs/snapshots.md).

``ReaderSession`` is what a reader thread (``bridge.snapshot.reader``) asks; ``LocalSession``
does it on a connection of this process, and ``bridge.snapshot.child.ChildSession`` has a
``LocalSession`` do it in a process of its own, so that reading and rendering a chunk's rows
run on a second core. The reader keeps everything else: the watermark windows, the handoff,
the throttle, the progress, the retries.

A chunk is read as docs/snapshots.md describes: one ``SELECT ... ORDER BY key LIMIT
chunk_size`` after the last key, then the high watermark (the source's binlog end), then its
rows rendered as the stream renders them, with their window keys and encoded keys.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import pymysql

from bridge.entry import EncodedRowsApart, RowData
from bridge.parse.access import Source
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.source import ServerVersion, master_position, open_connection, server_version
from bridge.snapshot import rows as snapshot_rows
from bridge.snapshot.chunks import ChunkQuery, chunk_query
from bridge.snapshot.result import fetch_rows
from bridge.snapshot.window import Key, Position

ER_NO_SUCH_TABLE = 1146
ER_BAD_FIELD = 1054

# A chunk's table was dropped (the SELECT failed with 1146), or altered between its
# description and the SELECT (1054): describe it again and read the chunk again.
Gone = Literal["gone"]
Redo = Literal["redo"]


# A snapshot entry holds about what a binlog rows event does (binlog_row_event_max_size's
# default, 8 KiB of row images), so that a store full of snapshot entries holds no more than
# one full of streamed events; a row larger than that is an entry of its own.
ENTRY_BYTES = 8192


@dataclass(frozen=True, slots=True)
class ChunkRead:
    """The rows of one chunk, as INSERT rows the stream would render (or each already written
    in the output format as a record of its own, ``EncodedRowsApart``, where a child session
    renders them), with each row's key as the windows compare it; ``count``: rows selected
    (``< chunk_size``: the table's last chunk); ``high``: the binlog end read after the
    SELECT; ``read_ms``: when (wall clock, ms).

    The rows go into the store ``per_entry`` to an entry (``ENTRY_BYTES`` of row images, from
    the chunk's average row); ``entry_keys`` holds, per entry, its last row's key as the
    cursor stores it (the last one is the key the next chunk starts after)."""

    rows: tuple[RowData, ...] | EncodedRowsApart
    keys: list[Key]
    per_entry: int
    entry_keys: list[Any]
    high: Position
    read_ms: int

    @property
    def count(self) -> int:
        return len(self.rows)


class ReaderSession(Protocol):
    """What a reader thread asks of the source. An error other than the ones each method
    names means the connection is lost: close the session and open a new one."""

    def describe(self, schema: str, name: str) -> tuple[str, ...] | None:
        """The table's key columns, in the order it is read in; None when it does not exist.
        Raises ``SnapshotError`` (``TableWithoutKey``, ``UnsupportedSnapshotColumn``) for a
        table no snapshot can read."""
        ...

    def read_chunk(self, schema: str, name: str, after: object | None) -> ChunkRead | Gone | Redo:
        """The chunk after the encoded key ``after`` (None: the table's first) of a table
        described on this session."""
        ...

    def estimated_rows(self, schema: str, name: str) -> int:
        """InnoDB's row estimate of the table (for the ETA only)."""
        ...

    def close(self) -> None: ...


class LocalSession:
    """A ``ReaderSession`` on a connection of this process, opened at once."""

    def __init__(self, source: Source, options: DecodeOptions, chunk_size: int) -> None:
        self._options = options
        self.chunk_size = chunk_size
        self._tables: dict[tuple[str, str], tuple[snapshot_rows.SnapshotTable, ChunkQuery]] = {}
        self._exit = contextlib.ExitStack()
        try:
            self._conn: Any = self._exit.enter_context(open_connection(source))
            # Asked before the results turn binary.
            self._server: ServerVersion = server_version(self._conn)
            snapshot_rows.prepare_connection(self._conn, options)
        except BaseException:
            self._exit.close()
            raise

    def describe(self, schema: str, name: str) -> tuple[str, ...] | None:
        shape = snapshot_rows.describe_table(self._conn, schema, name, self._options)
        if shape is None:
            self._tables.pop((schema, name), None)
            return None
        query = chunk_query(schema, name, shape.select_list, shape.key_columns, self.chunk_size)
        self._tables[schema, name] = (shape, query)
        return shape.key_columns

    def read_chunk(self, schema: str, name: str, after: object | None) -> ChunkRead | Gone | Redo:
        shape, query = self._tables[schema, name]
        last_key = None if after is None else snapshot_rows.decode_key(after)  # type: ignore[arg-type]
        statement, params = query.statement(last_key)
        try:
            raw_rows = fetch_rows(self._conn, statement, params)
        except pymysql.MySQLError as exc:
            code = exc.args[0] if exc.args else 0
            if code == ER_NO_SUCH_TABLE:
                return "gone"
            if code == ER_BAD_FIELD:
                return "redo"
            raise
        high = master_position(self._conn, self._server).sort_key()
        read_ms = int(time.time() * 1000)
        rows, image_bytes = snapshot_rows.chunk_rows(shape, raw_rows)
        per_entry = max(1, ENTRY_BYTES * len(rows) // max(1, image_bytes))
        last_rows = raw_rows[per_entry - 1 :: per_entry]
        if len(raw_rows) % per_entry:
            last_rows = (*last_rows, raw_rows[-1])
        return ChunkRead(
            rows=rows,
            keys=snapshot_rows.window_keys(shape, rows),
            per_entry=per_entry,
            entry_keys=[
                snapshot_rows.encode_key(snapshot_rows.key_values(shape, raw)) for raw in last_rows
            ],
            high=high,
            read_ms=read_ms,
        )

    def estimated_rows(self, schema: str, name: str) -> int:
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT TABLE_ROWS FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (schema, name),
            )
            row = cur.fetchone()
        return int(row[0] or 0) if row else 0

    def close(self) -> None:
        self._exit.close()
