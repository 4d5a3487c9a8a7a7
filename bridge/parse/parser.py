"""The binlog parser: dump from a start position and yield canal Entries, reconnecting as needed.

canal's MysqlEventParser loop: preflight the source, dump from the start position, convert
events to entries. A lost connection is retried with backoff from the start of the transaction
in progress; entries already yielded are skipped on the way back, so the consumer sees one
continuous stream. Errors that a retry cannot fix (bad credentials, purged binlog, wrong
binlog_format, schema mismatch) are raised as they are.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pymysql
from pymysqlreplication import BinLogStreamReader, row_event
from pymysqlreplication import event as binlog_event

from bridge.config import SourceConfig
from bridge.entry import Entry, EntryType
from bridge.parse.convert import TABLE_MAP_EVENT, WANTED_EVENTS, EventConverter
from bridge.parse.exceptions import BinlogPurged, SourceUnreachable
from bridge.parse.framing import (
    EventReader,
    LibraryEvents,
    RawEvent,
    connect,
    follow,
    reconnect,
)
from bridge.parse.schema import LiveSchema
from bridge.parse.source import (
    SourceFacts,
    connection_settings,
    open_connection,
    preflight,
    translate_error,
)
from bridge.position import EntryPosition, position_of, resume_position_after

log = logging.getLogger(__name__)

# The library classes LibraryEvents may build: what the converter wants, plus the format
# description (post-header lengths); and TABLE_MAP alone, for definitions not seen before.
_ALLOWED = frozenset({*WANTED_EVENTS, binlog_event.FormatDescriptionEvent})
_TABLE_MAP_ONLY = frozenset({row_event.TableMapEvent})

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


class EntryReader(Protocol):
    """What an instance reads entries with: ``BinlogParser``, or ``ParserProcess`` running
    one in a child process."""

    def preflight(self) -> SourceFacts: ...

    def entries(self, start: EntryPosition) -> Iterator[Entry]: ...

    def stop(self) -> None: ...


class BinlogParser:
    """Yields the entries of one source from a start position until ``stop()``."""

    def __init__(
        self,
        source: SourceConfig,
        *,
        time_zone: str | None = None,
        heartbeat_period_s: float = 15.0,
        max_backoff_s: float = 30.0,
        before_read: Callable[[], None] | None = None,
    ) -> None:
        """``before_read`` runs before each read of the dump socket (``EventReader``)."""
        self._source = source
        self._before_read = before_read
        self._time_zone = time_zone
        self._heartbeat_s = heartbeat_period_s
        self._max_backoff_s = max_backoff_s
        self._stopping = threading.Event()
        self._stream: BinLogStreamReader | None = None
        self._lock = threading.Lock()

    def preflight(self) -> SourceFacts:
        return preflight(self._source, self._time_zone)

    def stop(self) -> None:
        """Ends ``entries()`` promptly, also while it waits for the source."""
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()

    def entries(self, start: EntryPosition) -> Iterator[Entry]:
        """Entries from ``start`` (a transaction start, or a GTID) until ``stop()``."""
        facts = self.preflight()
        resume = start
        last: Entry | None = None  # the last entry yielded, heartbeats aside
        failures = 0
        while not self._stopping.is_set():
            try:
                # A new dump starts at the transaction in progress: what was yielded before
                # comes again first, and is skipped up to the last entry yielded.
                replayed = None if last is None else _binlog_key(last)
                for entry in self._dump(facts, resume):
                    entry_type = entry.entry_type
                    if entry_type is not EntryType.HEARTBEAT:
                        if replayed is not None:
                            if _binlog_key(entry) <= replayed:
                                continue
                            replayed = None
                        last = entry
                    failures = 0
                    if entry_type is EntryType.TRANSACTIONBEGIN:
                        resume = position_of(entry)
                    elif entry_type is EntryType.TRANSACTIONEND or (
                        entry.row_change is not None and entry.row_change.is_ddl
                    ):
                        resume = resume_position_after(entry)
                    yield entry
                return
            except SourceUnreachable as exc:
                if self._stopping.is_set():
                    return
                failures += 1
                delay = min(self._max_backoff_s, 0.5 * 2**failures) * random.uniform(0.5, 1.0)
                log.warning(
                    "%s; retrying from %s:%s in %.1fs",
                    exc,
                    resume.journal_name,
                    resume.position,
                    delay,
                )
                self._stopping.wait(delay)

    def _dump(self, facts: SourceFacts, start: EntryPosition) -> Iterator[Entry]:
        """mysql-replication connects and sends the dump command; the events are then framed
        by ``EventReader``, the hot ones decoded by the converter from their bytes and the
        rest parsed by the library's own classes."""
        stream = self._open_stream(facts, start)
        library = LibraryEvents(stream, _ALLOWED)
        tables = LibraryEvents(stream, _TABLE_MAP_ONLY)
        try:
            with open_connection(self._source) as conn:
                converter = EventConverter(
                    LiveSchema(conn), facts.time_zone, start.journal_name or ""
                )
                wanted = frozenset(WANTED_EVENTS)
                convert_raw, parse_table_map = converter.convert_raw, tables.build
                for raw in self._events(stream, start, converter.repeats_table_map):
                    entries = convert_raw(raw, parse_table_map, library.post_header_lengths)
                    if entries is None:
                        event = library.build(raw.data, stream.table_map)
                        tables.post_header_lengths = library.post_header_lengths
                        if event is None or type(event) not in wanted:
                            continue
                        entries = converter.convert(event)
                    yield from entries
        finally:
            with self._lock:
                self._stream = None
            stream.close()

    def _open_stream(self, facts: SourceFacts, start: EntryPosition) -> BinLogStreamReader:
        kwargs: dict[str, Any] = {}
        if start.journal_name and start.position is not None:
            kwargs.update(log_file=start.journal_name, log_pos=start.position, resume_stream=True)
        elif start.gtid:
            kwargs.update(auto_position=start.gtid)
        else:
            raise ValueError("a start position needs journal_name + position, or a gtid")
        stream = BinLogStreamReader(
            connection_settings=connection_settings(self._source),
            server_id=self._source.slave_id,
            blocking=True,
            only_events=list(WANTED_EVENTS),
            freeze_schema=True,
            # mysql-replication's MariaDB mode always dumps from the first binlog; it is needed
            # only for GTID starts (file + position works the classic way on MariaDB too).
            is_mariadb=facts.is_mariadb and "auto_position" in kwargs,
            slave_heartbeat=self._heartbeat_s,
            enable_logging=False,
            **kwargs,
        )
        with self._lock:
            self._stream = stream
        return stream

    def _events(
        self,
        stream: BinLogStreamReader,
        start: EntryPosition,
        repeats_table_map: Callable[[bytes, bool], bool],
    ) -> Iterator[RawEvent]:
        """The dump's events; a TABLE_MAP the converter already has is dropped here, before
        any object is made for it (a reconnect then resumes at that map, which is harmless)."""
        try:
            reader = EventReader(connect(stream), self._before_read)
            checksum = LibraryEvents(stream, _ALLOWED).checksum
            reconnected = False
            while not self._stopping.is_set():
                try:
                    data = reader.next_event()
                except OSError:
                    # The dump connection alone was lost: reconnect it once from the last
                    # event, as mysql-replication does; a second loss in a row goes to the
                    # retry loop of entries(), with its back-off.
                    if reconnected or self._stopping.is_set():
                        raise
                    reader, reconnected = EventReader(reconnect(stream), self._before_read), True
                    continue
                if data is None:
                    raise SourceUnreachable(
                        f"the source {self._source.address} ended the binlog stream"
                    )
                if data[4] == TABLE_MAP_EVENT and repeats_table_map(data, checksum):
                    continue
                raw = RawEvent(data, checksum)
                follow(stream, raw)
                reconnected = False
                yield raw
        except pymysql.MySQLError as exc:
            if self._stopping.is_set():
                return
            code = exc.args[0] if exc.args else 0
            if code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
                raise BinlogPurged(start, str(exc.args[-1])) from exc
            raise translate_error(exc, self._source) from exc
        except (OSError, ValueError, AttributeError, struct_error_types()) as exc:
            if self._stopping.is_set():
                return
            raise SourceUnreachable(
                f"lost the binlog stream from {self._source.address}: {exc}"
            ) from exc


def _binlog_key(entry: Entry) -> tuple[str, int]:
    return entry.header.logfile_name, entry.header.logfile_offset


def struct_error_types() -> type[Exception]:
    import struct

    return struct.error
