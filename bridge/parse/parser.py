"""The binlog parser: dump from a start position and yield canal Entries, reconnecting as needed.

canal's MysqlEventParser loop: preflight the source, dump from the start position, convert
events to entries. A lost connection is retried with backoff from the start of the transaction
in progress; entries already yielded are skipped on the way back, so the consumer sees one
continuous stream. Errors that a retry cannot fix (bad credentials, purged binlog, wrong
binlog_format, schema mismatch) are raised as they are.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Protocol, cast

import pymysql

from bridge.backoff import Backoff
from bridge.entry import (
    HEARTBEAT,
    TRANSACTION_BEGIN,
    TRANSACTION_END,
    Entry,
    EntryType,
    EventEncode,
)
from bridge.parse.access import Source
from bridge.parse.binlog.dump import DumpConnection, DumpRequest
from bridge.parse.binlog.framing import read_end
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.convert import EventConverter
from bridge.parse.entry_codec import (
    FLAT_ENTRY_TYPE,
    FLAT_ENTRY_TYPES,
    FLAT_LOGFILE_NAME,
    FLAT_LOGFILE_OFFSET,
    FlatEntry,
    entry_of,
)
from bridge.parse.exceptions import (
    ER_MASTER_FATAL_ERROR_READING_BINLOG,
    SourceUnreachable,
    start_refused,
)
from bridge.parse.schema import live_history
from bridge.parse.source import (
    SourceFacts,
    open_connection,
    preflight,
    translate_error,
)
from bridge.position import EntryPosition, position_of, resume_position_after
from bridge.schema.history import SchemaHistory

log = logging.getLogger(__name__)

# The definitions a read starts from: the schema history at its start position.
Definitions = Callable[[EntryPosition], SchemaHistory]


class EntryReader(Protocol):
    """What an instance reads entries with: ``BinlogParser``, or ``ParserProcess`` running
    one in a child process."""

    def preflight(self) -> SourceFacts: ...

    def entries(self, start: EntryPosition) -> Iterator[Entry]: ...

    def batches(self, start: EntryPosition) -> Iterator[Sequence[Entry]]:
        """``entries()`` in the groups they arrive in (``TransactionBuffer.add_batch``)."""
        ...

    @property
    def caught_up(self) -> bool:
        """Whether the group ``batches()`` yielded last ends at what the source had written
        (nothing more to read yet); False when the reader cannot tell."""
        ...

    def stop(self) -> None: ...


class BinlogParser:
    """Yields the entries of one source from a start position until ``stop()``."""

    def __init__(
        self,
        source: Source,
        *,
        time_zone: str | None = None,
        heartbeat_period_s: float = 15.0,
        max_backoff_s: float = 30.0,
        before_read: Callable[[bool], None] | None = None,
        values: DecodeOptions | None = None,
        encode_event: EventEncode | None = None,
        begins: bool = True,
        facts: SourceFacts | None = None,
        definitions: Definitions | None = None,
    ) -> None:
        """``before_read`` runs before each read of the dump socket (``EventReader``);
        ``values`` says how values are spelled (default: faithful, latin1);
        ``encode_event``: ``AheadEncoding.encode_event``, tried on each rows event before
        its rows are decoded (in the binlog reader's process); ``begins``: whether
        transactions start with a TRANSACTIONBEGIN entry (``EventConverter``); ``facts``:
        what a preflight of the source has just found (the instance's, given to its binlog
        reader's process), so that reading starts without a preflight of its own;
        ``definitions``: the schema history at a start position (an instance's, from its
        stored history), or None to read the live tables as they are met
        (``bridge.parse.schema.live_history``, for tools)."""
        self._source = source
        self._definitions = definitions
        self._begins = begins
        self._facts = facts
        self._values = values
        self._encode_event = encode_event
        self._before_read = before_read
        self._time_zone = time_zone
        self._heartbeat_s = heartbeat_period_s
        self._max_backoff_s = max_backoff_s
        self._stopping = threading.Event()
        self._dump_connection: DumpConnection | None = None
        self._checksum = False  # whether the open dump's events end in a checksum
        self._lock = threading.Lock()

    def preflight(self) -> SourceFacts:
        return preflight(self._source, self._time_zone)

    def stop(self) -> None:
        """Ends ``entries()`` promptly, also while it waits for the source."""
        self._stopping.set()
        with self._lock:
            if self._dump_connection is not None:
                self._dump_connection.close()

    def batches(self, start: EntryPosition) -> Iterator[Sequence[Entry]]:
        """``entries()`` one at a time: read in this process, an entry is yielded as soon as
        it is decoded, so there is no group to hand on (``ParserProcess.batches`` has one)."""
        for entry in self.entries(start):
            yield (entry,)

    @property
    def caught_up(self) -> bool:
        """Always False: an entry is yielded before the next read, so whether that read will
        wait is not known yet (the store's get waits for its batch or timeout, as canal's)."""
        return False

    def entries(self, start: EntryPosition) -> Iterator[Entry]:
        """Entries from ``start`` (a transaction start, or a GTID) until ``stop()``, which
        ends them at once, also inside the entries of one read."""
        stopped = self._stopping.is_set
        for group in self._stream(start, flat=False):
            for entry in cast(Sequence[Entry], group):
                if stopped():
                    return
                yield entry

    def flat_batches(self, start: EntryPosition) -> Iterator[Sequence[Entry | FlatEntry]]:
        """``entries()`` in the groups ``EventConverter.convert_read`` makes of each read of the
        dump (up to ``GROUP_ENTRIES``; a compressed transaction's one at a time), with those
        the converter writes straight from their events' bytes as ``bridge.parse.entry_codec``
        carries them (``EventConverter.flat_entries``): for the binlog reader's process, which
        sends them on as they are. A generator step and a few checks per group, not per
        entry."""
        return self._stream(start, flat=True)

    def _stream(self, start: EntryPosition, *, flat: bool) -> Iterator[Sequence[Entry | FlatEntry]]:
        facts = self._facts or self.preflight()
        resume = start
        # One history for every dump of this read: a new dump resumes after the last DDL
        # it applied (a DDL is a boundary), so nothing is applied twice.
        history = self._definitions(start) if self._definitions is not None else None
        # Where a new dump starts: at this transaction's BEGIN, or after its END or DDL (the
        # position is made only when needed: two objects per one-row transaction otherwise).
        # Without BEGINs, after the last END or DDL: where the next transaction starts.
        boundary: Entry | FlatEntry | None = None
        after_boundary = False
        last: Entry | FlatEntry | None = None  # the last entry yielded, heartbeats aside
        backoff = Backoff(1.0, self._max_backoff_s)
        while not self._stopping.is_set():
            try:
                # A new dump starts at the transaction in progress: what was yielded before
                # comes again first, and is skipped up to the last entry yielded.
                replayed = None if last is None else _binlog_key(last)
                for read in self._dump(facts, resume, flat, history):
                    group = read
                    if replayed is not None:
                        group, replayed = _after(read, replayed)
                    if not group:
                        continue
                    if backoff.failures:
                        backoff.reset()
                    # The last entry and the last boundary are the group's last ones: read
                    # from its end, usually one or two entries.
                    seen_last = False
                    for entry in reversed(group):
                        entry_type, is_ddl = _kind(entry)
                        if entry_type is HEARTBEAT:
                            continue
                        if not seen_last:
                            last, seen_last = entry, True
                        if entry_type is TRANSACTION_BEGIN:
                            boundary, after_boundary = entry, False
                            break
                        if entry_type is TRANSACTION_END or is_ddl:
                            boundary, after_boundary = entry, True
                            break
                    yield group
                return
            except SourceUnreachable as exc:
                if self._stopping.is_set():
                    return
                if boundary is not None:
                    held = entry_of(boundary) if isinstance(boundary, tuple) else boundary
                    resume = resume_position_after(held) if after_boundary else position_of(held)
                delay = backoff.next()
                log.warning(
                    "%s; retrying from %s:%s in %.1fs",
                    exc,
                    resume.journal_name,
                    resume.position,
                    delay,
                )
                self._stopping.wait(delay)

    def _dump(
        self, facts: SourceFacts, start: EntryPosition, flat: bool, history: SchemaHistory | None
    ) -> Iterator[Sequence[Entry | FlatEntry]]:
        """Opens a dump (``bridge.parse.binlog.dump``), frames its events (``EventReader``) and
        converts them (``EventConverter.convert_read``): the entries of each read, in its
        groups."""
        with open_connection(self._source) as conn:
            converter = EventConverter(
                history or live_history(conn),
                facts.time_zone,
                start.journal_name or "",
                self._values,
                self._encode_event,
                begins=self._begins,
            )
            stopped = self._stopping.is_set
            # Converted here, outside ``_reads``: its handlers are for the dump's errors,
            # and a conversion error (a refused event, a schema mismatch) must not be taken
            # for a lost connection and retried.
            for ready in self._reads(facts, start):
                if stopped():  # entries() also looks between the entries of a read
                    return
                yield from converter.convert_read(ready, self._checksum, flat=flat)

    def _request(self, facts: SourceFacts, start: EntryPosition) -> DumpRequest:
        request = DumpRequest(
            slave_id=self._source.slave_id,
            heartbeat_s=self._heartbeat_s,
            mariadb=facts.is_mariadb,
        )
        if start.journal_name and start.position is not None:
            return replace(request, journal_name=start.journal_name, position=start.position)
        if start.gtid:
            return replace(request, gtid=start.gtid)
        raise ValueError("a start position needs journal_name + position, or a gtid")

    def _open(self, request: DumpRequest) -> DumpConnection:
        dump = DumpConnection(self._source, request, self._before_read)
        with self._lock:
            if self._stopping.is_set():
                dump.close()
                raise SourceUnreachable("stopping")
            self._dump_connection = dump
            self._checksum = dump.checksum
        return dump

    def _reopen(
        self, dump: DumpConnection, request: DumpRequest, journal: str, position: int
    ) -> tuple[DumpConnection, DumpRequest]:
        """A new dump connection in place of ``dump``, from ``position`` of ``journal`` (the
        end of the last event read); without a file name yet, from where ``request`` asked."""
        dump.close()
        if journal:
            request = replace(request, journal_name=journal, position=position)
        return self._open(request), request

    def _reads(self, facts: SourceFacts, start: EntryPosition) -> Iterator[list[bytes]]:
        """The events' bytes of each read of the dump, with ``_checksum`` saying whether they
        end in a checksum. A lost dump connection is reconnected once from the end of the
        last read's events: the consumer has taken them all by the time the next read is
        asked for."""
        request = self._request(facts, start)
        dump: DumpConnection | None = None
        try:
            dump = self._open(request)
            next_events, checksum = dump.reader.next_events, dump.checksum
            journal, position = request.journal_name, request.position
            reconnected = False
            stopped = self._stopping.is_set
            while not stopped():
                try:
                    ready = next_events()
                except OSError:
                    # The dump connection alone was lost: reconnect it once from the last
                    # event; a second loss in a row goes to the retry loop of entries(), with
                    # its back-off.
                    if reconnected or stopped():
                        raise
                    dump, request = self._reopen(dump, request, journal, position)
                    next_events, checksum, reconnected = (
                        dump.reader.next_events,
                        dump.checksum,
                        True,
                    )
                    continue
                if ready is None:
                    raise SourceUnreachable(
                        f"the source {self._source.address} ended the binlog stream"
                    )
                # Where the read ends, for a reconnect; a short event raises: a broken stream,
                # retried as a lost one.
                end = read_end(ready, checksum, journal, position)
                reconnected = False
                yield ready
                journal, position = end
        except pymysql.MySQLError as exc:
            if self._stopping.is_set():
                return
            code = exc.args[0] if exc.args else 0
            if code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
                raise start_refused(start, str(exc.args[-1])) from exc
            raise translate_error(exc, self._source) from exc
        except (OSError, ValueError, struct.error) as exc:
            if self._stopping.is_set():
                return
            raise SourceUnreachable(
                f"lost the binlog stream from {self._source.address}: {exc}"
            ) from exc
        finally:
            with self._lock:
                self._dump_connection = None
            if dump is not None:
                dump.close()


def _kind(entry: Entry | FlatEntry) -> tuple[EntryType, bool]:
    """An entry's type, and whether it is a DDL (a flat one is a BEGIN, END or ROWDATA, never
    a DDL)."""
    if isinstance(entry, tuple):
        return FLAT_ENTRY_TYPES[entry[FLAT_ENTRY_TYPE]], False
    change = entry.row_change
    return entry.entry_type, change is not None and change.is_ddl


def _after(
    group: Sequence[Entry | FlatEntry], replayed: tuple[str, int]
) -> tuple[Sequence[Entry | FlatEntry], tuple[str, int] | None]:
    """A retried dump's group without the entries yielded before (up to ``replayed``, the
    last one's binlog key; heartbeats pass), and ``replayed`` still, or None once an entry
    beyond it came."""
    for at, entry in enumerate(group):
        if _kind(entry)[0] is not HEARTBEAT and _binlog_key(entry) > replayed:
            kept = [e for e in group[:at] if _kind(e)[0] is HEARTBEAT]
            return [*kept, *group[at:]], None
    return [e for e in group if _kind(e)[0] is HEARTBEAT], replayed


def _binlog_key(entry: Entry | FlatEntry) -> tuple[str, int]:
    if isinstance(entry, tuple):
        return entry[FLAT_LOGFILE_NAME], entry[FLAT_LOGFILE_OFFSET]
    return entry.header.logfile_name, entry.header.logfile_offset
