"""The snapshot reader of one destination: ``snapshot.parallelism`` threads, each with its own
connection, take the plan's tables one at a time and read each in key chunks (docs/snapshots.md).

Per chunk (``_read_chunk``): the low watermark from the windows (``begin_chunk``), one
``SELECT ... ORDER BY key LIMIT chunk_size`` after the last key, the high watermark (the
source's binlog end, ``SHOW BINARY LOG STATUS``), then the chunk is offered to the stream
(``SnapshotHandoff.offer``) and the thread waits until it is put: a table's chunks go in
order, tables interleave. Reads are throttled to ``snapshot.max_rows_per_second`` (all
threads together).

Shapes: a table without a usable key is skipped with one line (``describe_table`` refuses
it; the rest of the destination is snapshotted and streamed); a table dropped before or during
its snapshot is marked done with one line; a DDL of the table inside a chunk's window, or a
SELECT failing on a changed column, reads the chunk again with the table's new shape.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

from bridge.backoff import Backoff
from bridge.config import DestinationConfig
from bridge.entry import AheadEncoding
from bridge.exceptions import BridgeError
from bridge.parse.binlog.values import DecodeOptions
from bridge.position import TableProgress
from bridge.snapshot.child import ChildSession
from bridge.snapshot.handoff import Chunk, SnapshotHandoff
from bridge.snapshot.session import LocalSession, ReaderSession
from bridge.snapshot.window import Position

log = logging.getLogger(__name__)

PROGRESS_LOG_S = 10.0  # a progress line per table at most this often
RETRY_MAX_S = 30.0


@dataclass
class SnapshotStats:
    """What the metrics and the progress lines read (ints: read without a lock)."""

    tables_total: int
    tables_done: int = 0
    rows: int = 0
    finished: bool = False


class Throttle:
    """At most ``per_second`` rows over all threads (None: no limit)."""

    def __init__(self, per_second: int | None) -> None:
        self._per_second = per_second
        self._lock = threading.Lock()
        self._next = time.monotonic()

    def take(self, rows: int, stopping: threading.Event) -> None:
        if not self._per_second or rows <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(self._next, now)
            self._next = start + rows / self._per_second
        if start > now:
            stopping.wait(start - now)


class SnapshotReader:
    def __init__(
        self,
        config: DestinationConfig,
        handoff: SnapshotHandoff,
        options: DecodeOptions,
        ahead: AheadEncoding | None = None,
    ) -> None:
        """``ahead``: the destination's encoding ahead of the batch where rows may take it
        (``bridge.instance.instance.ahead_where_allowed``): a reader in a child process then
        writes each row in the output format there."""
        self.config = config
        self.ahead = ahead
        self.destination = config.name
        self.handoff = handoff
        self.options = options
        progress = handoff.progress
        self.stats = SnapshotStats(
            tables_total=len(progress.tables),
            tables_done=sum(t.done for t in progress.tables),
            rows=sum(t.rows for t in progress.tables),
        )
        self._todo: queue.Queue[TableProgress] = queue.Queue()
        for table in progress.tables:
            if not table.done:
                self._todo.put(table)
        self._throttle = Throttle(config.snapshot.max_rows_per_second)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._sessions: set[ReaderSession] = set()  # open ones, closed by stop()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError(f"snapshot reader of {self.destination} already started")
        count = max(1, min(self.config.snapshot.parallelism, self._todo.qsize()))
        log.info(
            "destination %s: snapshot of %d table(s) (%d to read), %d reader connection(s)",
            self.destination,
            self.stats.tables_total,
            self._todo.qsize(),
            count,
        )
        for i in range(count):
            thread = threading.Thread(
                target=self._run, name=f"snapshot-{self.destination}-{i}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        self.handoff.cancel()
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:  # a child's: a read waiting for it ends at once
            if isinstance(session, ChildSession):
                session.close()
        for thread in self._threads:
            thread.join(timeout_s)

    # -- threads -----------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = Backoff(1.0, RETRY_MAX_S)
        session: ReaderSession | None = None  # kept from table to table; new after an error
        try:
            while not self._stopping.is_set():
                try:
                    table = self._todo.get_nowait()
                except queue.Empty:
                    break
                while not self._stopping.is_set():
                    try:
                        session = session or self._open_session()
                        table = self._read_table(session, table)
                        break
                    except _Stopped:
                        return
                    except Exception as exc:  # the source went away, ...: again from the last key
                        if session is not None:
                            self._close_session(session)
                            session = None
                        if self._stopping.is_set():
                            return
                        delay = backoff.next()
                        log.warning(
                            "destination %s: snapshot of %s interrupted (%s%s); again in %.1f s "
                            "after the last key put",
                            self.destination,
                            table.table,
                            "" if isinstance(exc, BridgeError) else f"{type(exc).__name__}: ",
                            exc,
                            delay,
                        )
                        table = self.handoff.progress.table(table.table) or table
                        self._stopping.wait(delay)
        finally:
            if session is not None:
                self._close_session(session)
        self._finish_if_done()

    def _open_session(self) -> ReaderSession:
        """A reader connection: in a child process where the destination's binlog reader
        runs in one (``parser_process``; the placement decided for the process), else here."""
        config = self.config
        options, size = self.options, config.snapshot.chunk_size
        session: ReaderSession = (
            ChildSession(config.source, options, size, self.destination, self.ahead)
            if config.parser_process is not False
            else LocalSession(config.source, options, size)
        )
        with self._lock:
            self._sessions.add(session)
        return session

    def _close_session(self, session: ReaderSession) -> None:
        with self._lock:
            self._sessions.discard(session)
        session.close()

    def _read_table(self, session: ReaderSession, table: TableProgress) -> TableProgress:
        """Read ``table`` from after its last key to its end; its progress when done."""
        schema, _, name = table.table.partition(".")
        key_columns = self._describe(session, schema, name)
        if key_columns is None:
            return self._table_done(table, "skipped")
        windows = self.handoff.windows
        after = table.last_key
        number = 0
        if after is not None:  # the row count only: keys are the source's values
            log.info(
                "destination %s: snapshot of %s resumes after its last acknowledged chunk "
                "(%d rows sent before)",
                self.destination,
                table.table,
                table.rows,
            )
        started, rows_at_start, last_line = time.monotonic(), table.rows, time.monotonic()
        # Each chunk's low watermark is taken before the chunk before it is asked for: a
        # session in a child process reads the next chunk ahead, right after answering one,
        # and its SELECT must start after its low watermark. (Taken when the chunk itself is
        # asked for, another reader thread's chunk begun meanwhile could hand it a position
        # past that SELECT: changes in between would not be left out, and stale rows would
        # follow them.) An earlier low watermark only widens the window, which is safe.
        next_low = windows.begin_chunk()
        try:
            while not self._stopping.is_set():
                low, next_low = next_low, windows.begin_chunk()
                chunk = self._read_chunk(
                    session, table.table, key_columns, after, number=number, low=low
                )
                if chunk is None:  # the table is gone
                    log.warning(
                        "destination %s: %s was dropped during its snapshot; its snapshot is done",
                        self.destination,
                        table.table,
                    )
                    return self._table_done(table, "dropped during its snapshot")
                if chunk.redo:
                    log.info(
                        "destination %s: %s changed shape during chunk %d of its snapshot; "
                        "reading it again with the new shape",
                        self.destination,
                        table.table,
                        number,
                    )
                    key_columns = self._describe(session, schema, name)
                    if key_columns is None:
                        return self._table_done(table, "dropped during its snapshot")
                    continue
                number += 1
                with self._lock:
                    self.stats.rows += chunk.rows_put
                table = self.handoff.progress.table(table.table) or table
                if chunk.last:
                    return self._table_done(table, "done", started, rows_at_start)
                after = chunk.end_key
                if time.monotonic() - last_line >= PROGRESS_LOG_S:
                    last_line = time.monotonic()
                    self._log_progress(session, table, started, rows_at_start)
            return table
        finally:
            windows.release(next_low)
            windows.untrack(table.table)

    def _describe(self, session: ReaderSession, schema: str, name: str) -> tuple[str, ...] | None:
        """The table's key columns, or None (with its line) when it is not to be read."""
        try:
            key_columns = session.describe(schema, name)
        except BridgeError as exc:  # no primary key and no unique NOT NULL index, ...
            log.warning(
                "destination %s: not snapshotting %s.%s: %s", self.destination, schema, name, exc
            )
            return None
        if key_columns is None:
            log.warning(
                "destination %s: %s.%s is gone; its snapshot is done",
                self.destination,
                schema,
                name,
            )
        return key_columns

    def _read_chunk(
        self,
        session: ReaderSession,
        table: str,
        key_columns: tuple[str, ...],
        after: object,
        *,
        number: int,
        low: Position,
    ) -> Chunk | None:
        """One chunk between its watermarks, offered to the stream and put (or to redo);
        ``after``: the key it starts after, as the cursor stores it (None: the first);
        ``low``: its low watermark (``begin_chunk``), released here."""
        windows = self.handoff.windows
        try:
            schema, _, name = table.partition(".")
            read = session.read_chunk(schema, name, after)
            if read == "gone":
                return None
            if read == "redo":  # altered between describe and read
                return Chunk(
                    table, key_columns, number, (), (), 1, (), low, low, 0, None, False, redo=True
                )
            self._throttle.take(read.count, self._stopping)
            self.handoff.wait_for_room(self._stopping)
            chunk = Chunk(
                table,
                key_columns,
                number,
                read.rows,
                read.keys,
                read.per_entry,
                read.entry_keys,
                low,
                read.high,
                read.read_ms,
                end_key=read.entry_keys[-1] if read.entry_keys else after,
                last=read.count < self.config.snapshot.chunk_size,
            )
            self.handoff.offer(chunk)
            while not chunk.done.wait(0.5):
                if self._stopping.is_set():
                    raise _Stopped()
            return chunk
        finally:
            windows.release(low)

    def _table_done(
        self,
        table: TableProgress,
        how: str,
        started: float | None = None,
        rows_at_start: int = 0,
    ) -> TableProgress:
        with self._lock:
            self.stats.tables_done += 1
        if how != "done":
            # Mark it done in the plan through an empty chunk-less progress step.
            with self.handoff.lock:
                self.handoff.progress = self.handoff.progress.with_table(
                    TableProgress(table.table, table.last_key, table.rows, done=True)
                )
            return table
        elapsed = time.monotonic() - (started or time.monotonic())
        rate = (table.rows - rows_at_start) / elapsed if elapsed > 0 else 0.0
        log.info(
            "destination %s: snapshot of %s done: %d rows (%.0f rows/s); %d of %d tables done",
            self.destination,
            table.table,
            table.rows,
            rate,
            self.stats.tables_done,
            self.stats.tables_total,
        )
        return table

    def _log_progress(
        self, session: ReaderSession, table: TableProgress, started: float, rows_at_start: int
    ) -> None:
        elapsed = time.monotonic() - started
        rate = (table.rows - rows_at_start) / elapsed if elapsed > 0 else 0.0
        estimate = session.estimated_rows(*table.table.split(".", 1))
        eta = (
            f"ETA {max(0.0, (estimate - table.rows) / rate):.0f} s"
            if rate > 0 and estimate
            else "ETA unknown"
        )
        log.info(
            "destination %s: snapshot of %s: %d rows (%.0f rows/s), about %d in the table, %s",
            self.destination,
            table.table,
            table.rows,
            rate,
            estimate,
            eta,
        )

    def _finish_if_done(self) -> None:
        with self._lock:
            if self.stats.finished or self.stats.tables_done < self.stats.tables_total:
                return
            self.stats.finished = True
        log.info(
            "destination %s: snapshot done: %d rows of %d table(s) in %.0f s",
            self.destination,
            self.stats.rows,
            self.stats.tables_total,
            time.monotonic() - self._started,
        )


class _Stopped(Exception):
    """The destination is stopping while a chunk waits for the stream."""
