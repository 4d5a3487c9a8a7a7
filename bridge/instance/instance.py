"""One destination's pipeline: canal's AbstractCanalInstance.

Parts start in the order meta -> store -> sink -> parser and stop in reverse. The parser runs in
its own thread: it finds the start position, reads entries, groups them in the transaction
buffer and puts them through the sink into the store, where ``put`` blocks while the store is
full (backpressure reaching the binlog socket).

With ``snapshot.mode`` initial or initial_only and no cursor yet (or a cursor whose snapshot is
unfinished), a ``SnapshotReader`` reads the planned tables in chunks beside the parser, and the
flush path interleaves them with the stream (``bridge.snapshot.handoff``; docs/snapshots.md).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

from bridge.backoff import Backoff
from bridge.config import DestinationConfig
from bridge.entry import HEARTBEAT, AheadEncoding, Entry, EntryType
from bridge.exceptions import BridgeError
from bridge.instance.exceptions import DamagedCursor, InstanceFailed
from bridge.instance.log_position import (
    FailbackLogPositionManager,
    MemoryLogPositionManager,
    MetaLogPositionManager,
)
from bridge.instance.schema_drift import DriftWatch
from bridge.instance.schema_start import ensure_history
from bridge.instance.start_position import StartPositionFinder
from bridge.meta import ClientIdentity, MetaManager
from bridge.meta.base import MQ_CLIENT_ID
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.child import ParserProcess
from bridge.parse.exceptions import (
    BinlogPositionUnreadable,
    BinlogPurged,
    CorruptPayload,
    SchemaMismatch,
    SourceAccessDenied,
    SourceMisconfigured,
    UnsupportedBinlogEvent,
)
from bridge.parse.parser import BinlogParser, Definitions, EntryReader
from bridge.parse.source import SourceFacts, open_connection
from bridge.position import (
    EntryPosition,
    LogIdentity,
    LogPosition,
    SnapshotProgress,
    is_ack_point,
    resume_position_after,
)
from bridge.schema.exceptions import SchemaError
from bridge.schema.history import SchemaHistory
from bridge.schema.recorder import SchemaRecorder
from bridge.schema.store import HistoryStore, MemoryHistoryStore
from bridge.sink import EntrySink, FieldFilter, TableFilter, TransactionBuffer
from bridge.snapshot.handoff import SnapshotHandoff
from bridge.snapshot.planner import fresh_plan
from bridge.snapshot.reader import SnapshotReader
from bridge.snapshot.requests import (
    PendingRequest,
    RequestOutcome,
    check_tables,
    plan_marker,
    with_tables_again,
)
from bridge.snapshot.window import WatermarkWindows
from bridge.store import BatchMode, MemoryEventStore, MemoryStoreConfig
from bridge.store.exceptions import StoreStopped

log = logging.getLogger(__name__)

# The longest wait between restarts of a failing binlog reader.
RESTART_MAX_S = 60.0

# How long an on-demand snapshot request waits for its plan to reach the cursor (below the
# admin endpoint's request timeout).
REQUEST_WAIT_S = 5.0

# Test hook: put snapshot rows whose key the stream changed inside their window anyway (the
# negative case of tests/e2e/test_snapshot.py: a stale row then reaches Kafka).
KEEP_CHANGED_KEYS_ENV = "CANAL_BRIDGE_TEST_SNAPSHOT_KEEP_CHANGED_KEYS"

# Where to start, given what the source is and the last known position (tests inject one).
FindStart = Callable[[SourceFacts, LogPosition | None], EntryPosition]
FATAL_ERRORS = (
    SourceMisconfigured,
    SourceAccessDenied,
    BinlogPurged,
    BinlogPositionUnreadable,
    DamagedCursor,
    SchemaMismatch,
    UnsupportedBinlogEvent,
    CorruptPayload,
    SchemaError,
)


def mq_client(destination: str) -> ClientIdentity:
    """The one client of a destination in MQ mode (canal's clientId 1001)."""
    return ClientIdentity(destination, MQ_CLIENT_ID)


class Instance:
    def __init__(
        self,
        config: DestinationConfig,
        meta: MetaManager,
        parser_factory: Callable[[DestinationConfig], EntryReader] | None = None,
        restart_delay_s: float = 2.0,
        find_start: FindStart | None = None,
        *,
        ahead: AheadEncoding | None = None,
        begins: bool = True,
        schema_store: HistoryStore | None = None,
    ) -> None:
        """``ahead``: how the binlog reader's process may encode rows events ahead of their
        batch, as the destination's encoder says (``RowsEncoder.ahead``); ``begins``: whether
        the binlog reader gives transactions their TRANSACTIONBEGIN entry (not when the
        encoder makes nothing of it, ``RowsEncoder.rows_only``: a third of the entries of
        one-row transactions, stored and freed for nothing); ``schema_store``: where the
        destination's schema history is kept (beside its cursor; in memory if None)."""
        self.config = config
        self.destination = config.name
        self.identity = LogIdentity(config.source.address, config.source.slave_id)
        self.meta = meta
        self.store = MemoryEventStore(
            MemoryStoreConfig(
                buffer_size=config.store.buffer_size,
                mem_unit=config.store.mem_unit,
                batch_mode=BatchMode[config.store.mode],
                ddl_isolation=config.store.ddl_isolation,
            )
        )
        field_filter = FieldFilter(config.filter.field, config.filter.black_field)
        tables = TableFilter(config.filter.regex, config.filter.black_regex)
        self.sink = EntrySink(self.store, tables, field_filter if field_filter else None)
        self.schema = SchemaRecorder(
            schema_store or MemoryHistoryStore(), selected=tables, acked=self._acked_position
        )
        self.drift = DriftWatch(config, self.schema, self._read_up_to)
        self.memory_positions = MemoryLogPositionManager()
        self.positions = FailbackLogPositionManager(
            self.memory_positions, MetaLogPositionManager(meta)
        )
        # Built when the parser thread first runs: whether a snapshot runs decides whether the
        # reader's process may encode rows ahead (a snapshot needs the keys of rows events).
        self._parser_factory = parser_factory
        self._ahead = ahead
        self._begins = begins
        self.parser: EntryReader | None = None
        self._parser_lock = threading.Lock()
        self._snapshot_planned = False
        self._snapshot_plan: SnapshotProgress | None = None
        self.snapshot_reader: SnapshotReader | None = None
        self._handoff: SnapshotHandoff | None = None
        # On-demand snapshot requests: queued, then planned at the reader's restart, then
        # waiting for their plan marker to be put (docs/snapshots.md, "On demand").
        self._requests: list[PendingRequest] = []
        self._unmarked: list[PendingRequest] = []
        self._purged_to_snapshot = False  # on_purged: snapshot chose the binlog end
        self.restart_delay_s = restart_delay_s
        self._restart_backoff = Backoff(restart_delay_s, RESTART_MAX_S)
        self._reading = False  # entries flowed since the last restart
        self._trouble: str | None = None  # the error class of the reader's last failure
        # The reader that finished, and the store's put sequence when it was seen finished.
        self._snapshot_end: tuple[SnapshotReader, int] | None = None
        self._traced: set[type[Exception]] = set()  # unexpected errors logged with a traceback
        self._find_start = find_start or self._search_start
        self.get_lock = threading.Lock()
        self.ack_lock = threading.Lock()
        self.failure: BaseException | None = None
        self.last_event_ms = 0  # binlog time of the newest entry seen (heartbeats included)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"instance {self.destination} already started")
        if not self.meta.running:
            self.meta.start()
        client = mq_client(self.destination)
        if not self.meta.has_subscribe(client):
            self.meta.subscribe(client)
        self.store.start()
        self.sink.start()
        self._thread = threading.Thread(
            target=self._run_parser, name=f"parser-{self.destination}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stopping.set()
        if self.snapshot_reader is not None:
            self.snapshot_reader.stop()
        with self._parser_lock:
            parser = self.parser
        if parser is not None:
            parser.stop()
        self.sink.stop()
        self.store.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self.meta.running:
            self.meta.stop()

    def check_alive(self) -> None:
        """Raise the parser's fatal error, if it stopped on one."""
        if self.failure is not None:
            raise InstanceFailed(f"{self.destination}: {self.failure}") from self.failure

    # ------------------------------------------------------------------ parser thread

    def _run_parser(self) -> None:
        try:
            self._parse_until_stopped()
        finally:
            # Whatever ended the thread (a fatal error, a stop), no binlog reader process is
            # left behind, including one started ahead by the preflight.
            with self._parser_lock:
                parser = self.parser
            if parser is not None:
                parser.stop()

    def _parse_until_stopped(self) -> None:
        while not self._stopping.is_set():
            try:
                self._parse_once()
                if not self._requests:
                    return
                self.sink.reset()  # stopped for a snapshot request: again from the last put
                continue
            except FATAL_ERRORS as exc:
                self.failure = exc
                log.error("destination %s stopped: %s", self.destination, exc)
                return
            except StoreStopped:
                return
            except Exception as exc:
                if self._stopping.is_set():
                    return
                if self._requests:  # the reader was stopped for a snapshot request
                    self.sink.reset()
                    continue
                self._restart_later(exc)

    def _restart_later(self, exc: Exception) -> None:
        """One line per failed attempt, waits growing to ``RESTART_MAX_S`` (a source that is
        down at start costs a few lines a minute, not a traceback every two seconds). Our own
        errors say what is wrong; anything else gets its traceback once."""
        if self._reading:
            self._restart_backoff.reset()  # it was running: a new outage starts short
            self._reading = False
        self._trouble = type(exc).__name__
        delay = self._restart_backoff.next()
        unexpected = not isinstance(exc, BridgeError)
        log.warning(
            "destination %s: %s%s; restarting in %.1fs from the last stored transaction",
            self.destination,
            f"{type(exc).__name__}: " if unexpected else "",
            exc,
            delay,
            exc_info=unexpected and exc.__class__ not in self._traced,
        )
        self._traced.add(exc.__class__)
        self.sink.reset()
        self._stopping.wait(delay)

    @property
    def source_trouble(self) -> str | None:
        """The error class the binlog reader is retrying after, while nothing has been read
        since that failure (readiness says ``source-unreachable``); None while entries flow,
        and before a first attempt failed. An outage the reader retries by itself while
        reading does not show here (readiness says ``stalled`` after its window)."""
        return None if self._reading else self._trouble

    def _search_start(self, facts: SourceFacts, known: LogPosition | None) -> EntryPosition:
        finder = StartPositionFinder(
            self.config.source,
            facts,
            self.config.start,
            on_purged=self.config.on_purged,
            fallback_interval_s=self.config.fallback_interval_s,
        )
        start = finder.find(known)
        self._purged_to_snapshot = finder.snapshot_needed
        return start

    def _parse_once(self) -> None:
        known = self.positions.get_latest(self.destination)
        if not self._snapshot_planned:
            self._snapshot_plan = self._plan_snapshot(known)
            self._snapshot_planned = True
        self._plan_requests()
        parser = self._built_parser()
        facts = parser.preflight()
        # A position this process read itself is an event boundary; one loaded from the
        # stored cursor may have been edited or damaged.
        from_cursor = (
            known is not None and self.memory_positions.get_latest(self.destination) is None
        )
        start = self._find_start(facts, known)
        purged = self._purged_to_snapshot
        if purged:
            self._replan_after_purge()
        if self._parser_factory is None:  # a reader made by a factory brings its own
            jumped = known is not None and (
                known.identity != self.identity or start.sort_key() > known.position.sort_key()
            )
            ensure_history(self.schema, self.config, facts, start, jumped=jumped)
        if known is None or purged:
            # Record the first start as the cursor so a crash before the first ack resumes
            # here rather than at a later "current end".
            # The snapshot plan goes with it: a restart before the first ack resumes both.
            first = LogPosition(self.identity, start, self._snapshot_plan)
            self.meta.update_cursor(mq_client(self.destination), first)
        self._put_plan_marker(start)
        self._start_snapshot(start)
        log.info(
            "destination %s reading %s from %s",
            self.destination,
            self.config.source.address,
            f"{start.journal_name}:{start.position}"
            if start.journal_name
            else f"GTID {start.gtid}",
        )
        buffer = TransactionBuffer(self._flush, self.config.transaction_size)
        try:
            self._read_from(start, buffer)
        except BinlogPositionUnreadable as exc:
            if not from_cursor or start.journal_name is None or start.position is None:
                raise
            raise DamagedCursor(
                self.destination, start.journal_name, start.position, exc.detail
            ) from exc

    def _read_from(self, start: EntryPosition, buffer: TransactionBuffer) -> None:
        assert self.parser is not None
        record = self.schema.record
        for batch in self.parser.batches(start):
            self._reading = True
            # DDL into the schema history before anything of it is put (or acked).
            for entry in [e for e in batch if e.row_change is not None and e.row_change.is_ddl]:
                record(entry)
            # Two comprehensions cost a quarter of one loop with a branch and a max() per
            # entry (a batch holds up to a thousand).
            seen = max([entry.header.execute_time for entry in batch], default=0)
            # A heartbeat's header time is 0 (MySQL and MariaDB alike); the source sends one
            # when it has nothing newer, so it means "caught up as of now".
            idle = HEARTBEAT in [entry.entry_type for entry in batch]
            if idle:
                seen = max(seen, int(time.time() * 1000))
            self.last_event_ms = max(self.last_event_ms, seen)
            if self._handoff is None:
                buffer.add_batch(batch)  # whole transactions of a batch in one put
            else:
                for entry in batch:  # snapshot chunks go in between any two transactions
                    buffer.add(entry)
            if self.parser.caught_up:
                self.store.source_caught_up()
                self.drift.caught_up()
            elif idle:
                self.drift.caught_up()  # a reader that cannot tell: the source is idle

    def _flush(self, entries: Sequence[Entry]) -> None:
        handoff = self._handoff
        if handoff is None:
            self._put(entries)
            return
        with handoff.lock:
            # The keys first: a chunk put after this transaction must leave them out.
            handoff.observe(entries)
            boundary = self._put(entries)
            last = entries[-1]
            if boundary is not None:
                handoff.flushed(boundary)
            elif last.entry_type is EntryType.HEARTBEAT:
                handoff.idle_at(resume_position_after(last))
            else:
                handoff.flushed(None)
            reader = self.snapshot_reader
            if reader is not None and reader.stats.finished and not reader.running:
                self._handoff = None  # nothing left to interleave: back to the plain path

    def _put(self, entries: Sequence[Entry]) -> EntryPosition | None:
        """Put a flushed piece of the stream; where it ends when that is a boundary."""
        self.sink.sink(entries, self.identity)
        last = entries[-1]
        if not is_ack_point(last):
            return None
        boundary = resume_position_after(last)
        self.memory_positions.persist(self.destination, LogPosition(self.identity, boundary))
        return boundary

    # ------------------------------------------------------------------ snapshot

    def _plan_snapshot(self, known: LogPosition | None) -> SnapshotProgress | None:
        """The snapshot to run: the saved one while unfinished (whatever the mode: an
        on-demand or ``on_purged`` snapshot resumes too), else a fresh plan for a destination
        without a cursor, else none (docs/snapshots.md)."""
        if known is not None:
            plan = known.snapshot
            return plan if plan is not None and not plan.done else None
        if self.config.snapshot.mode == "never":
            return None
        with open_connection(self.config.source) as conn:
            plan = fresh_plan(conn, self.config)
        return plan if plan.tables else None

    def snapshot_delivered(self) -> bool:
        """Whether every row of this process's snapshot is acked, or there was nothing to
        snapshot (``snapshot.mode: initial_only`` stops there: bridge.runner). Once the reader
        has put its last chunk, the acks past the store's put sequence of that moment cover
        every snapshot row (a skipped or dropped table has none)."""
        if not self._snapshot_planned:
            return False
        reader = self.snapshot_reader
        if reader is None:
            return self._snapshot_plan is None
        if not reader.stats.finished:
            return False
        if self._snapshot_end is None or self._snapshot_end[0] is not reader:
            self._snapshot_end = (reader, self.store.put_sequence)
        return self.store.ack_sequence >= self._snapshot_end[1]

    def _start_snapshot(self, start: EntryPosition) -> None:
        """Start the reader once, beside the first parser run (a parser restart keeps it)."""
        plan = self._snapshot_plan
        if plan is None or self.snapshot_reader is not None:
            return
        windows = WatermarkWindows(start.sort_key(), (t.table for t in plan.tables if not t.done))
        handoff = SnapshotHandoff(
            plan,
            windows,
            lambda entries: self.sink.put_snapshot(entries, self.identity),
            start=start,
            # As many rows as the store held when each snapshot row was an entry of its own
            # (four batches: the store counts a snapshot entry as its rows, batch_items).
            store=self.store,
            backlog_rows=self.store.capacity_items,
            drop_changed_keys=os.environ.get(KEEP_CHANGED_KEYS_ENV) != "1",
        )
        self._handoff = handoff
        self.snapshot_reader = SnapshotReader(
            self.config,
            handoff,
            decode_options(self.config),
            ahead_where_allowed(self.config, self._ahead),
        )
        self.snapshot_reader.start()

    def request_snapshot(
        self, tables: Sequence[str], timeout_s: float = REQUEST_WAIT_S
    ) -> RequestOutcome:
        """Snapshot ``tables`` again while streaming (docs/snapshots.md, "On demand").

        1. Check them: base tables of the source the filter keeps, else
           ``SnapshotRequestRefused`` naming the others (nothing is done).
        2. Queue them and stop the binlog reader: its thread restarts at once from the last
           stored transaction (``_plan_requests``), plans them (each from its first row, a
           table already planned too), puts the plan marker and starts the snapshot reader.
        3. Wait, at most ``timeout_s``, until the marker is acknowledged: the cursor then
           carries the plan, so a crash after this returns still snapshots them.
        """
        self.check_alive()
        if not self.running:
            raise InstanceFailed(f"{self.destination}: not running")
        with open_connection(self.config.source) as conn:
            accepted = check_tables(conn, self.config, tables)
        request = PendingRequest(accepted)
        with self._parser_lock:
            self._requests.append(request)
            parser = self.parser
        if parser is not None:
            parser.stop()
        deadline = time.monotonic() + timeout_s
        while not request.put.wait(0.05):
            if time.monotonic() >= deadline or self._stopping.is_set() or not self.running:
                return RequestOutcome(accepted, persisted=False)
        while self.store.ack_sequence < request.sequence:
            if time.monotonic() >= deadline or self._stopping.wait(0.05):
                return RequestOutcome(accepted, persisted=False)
        return RequestOutcome(accepted, persisted=True)

    def _plan_requests(self) -> None:
        """The binlog reader's thread, before (re)starting the parser: the queued requests
        join the plan. The running snapshot reader stops first (its chunks not yet put are
        read again: the plan is what was put), and the parser is built anew, without encoding
        rows ahead (the windows need the keys of rows events)."""
        with self._parser_lock:
            taken, self._requests = self._requests, []
            if taken and self.parser is not None:
                self.parser.stop()
                self.parser = None
        if not taken:
            return
        base = self._stop_snapshot_reader()
        tables = sorted({table for request in taken for table in request.tables})
        self._snapshot_plan = with_tables_again(base, tables)
        self._unmarked.extend(taken)
        log.info(
            "destination %s: snapshot requested of %s; the binlog reader restarts from the "
            "last stored transaction to interleave it",
            self.destination,
            ", ".join(tables),
        )

    def _stop_snapshot_reader(self) -> SnapshotProgress | None:
        """Stop the snapshot reader, if one runs; the plan as put into the store (else the
        planned one, else the cursor's)."""
        reader = self.snapshot_reader
        self.snapshot_reader = None
        self._handoff = None
        if reader is not None:
            reader.stop()
            return reader.handoff.progress
        if self._snapshot_plan is not None:
            return self._snapshot_plan
        cursor = self.meta.get_cursor(mq_client(self.destination))
        return None if cursor is None else cursor.snapshot

    def _replan_after_purge(self) -> None:
        """``on_purged: snapshot`` chose the binlog end: a fresh plan of every table the
        snapshot config selects replaces any other, and the parser is rebuilt without ahead
        encoding (the finder logged the WARNING) and checks the source again, so that its
        reader process starts ahead and is given the facts, as the first one was."""
        self._purged_to_snapshot = False
        self._stop_snapshot_reader()
        with open_connection(self.config.source) as conn:
            plan = fresh_plan(conn, self.config)
        self._snapshot_plan = plan if plan.tables else None
        with self._parser_lock:
            if self.parser is not None and self._parser_factory is None:
                self.parser.stop()
                self.parser = None
        self._built_parser().preflight()

    def _put_plan_marker(self, start: EntryPosition) -> None:
        """Put the plan of the requests planned at this restart into the store at ``start``
        (``bridge.snapshot.requests.plan_marker``) and tell their callers its sequence."""
        if not self._unmarked or self._snapshot_plan is None:
            return
        if start.journal_name is None:  # a GTID start: no file position to put it at
            cursor = LogPosition(self.identity, start, self._snapshot_plan)
            self.meta.update_cursor(mq_client(self.destination), cursor)
            sequence = self.store.ack_sequence
        else:
            marker = plan_marker(self._snapshot_plan, start, int(time.time() * 1000))
            self.sink.put_snapshot(marker, self.identity)
            sequence = self.store.put_sequence
        for request in self._unmarked:
            request.sequence = sequence
            request.put.set()
        self._unmarked.clear()

    def _built_parser(self) -> EntryReader:
        with self._parser_lock:
            if self.parser is None:
                if self._parser_factory is not None:
                    self.parser = self._parser_factory(self.config)
                else:
                    # Rows encoded ahead hide their images; a snapshot needs their keys.
                    ahead = self._ahead if self._snapshot_plan is None else None
                    self.parser = _default_parser(
                        self.config, ahead, self._begins, self._definitions_at
                    )
            if self._stopping.is_set() or self._requests:
                self.parser.stop()  # a request came while it was built: restart at once
            return self.parser

    def _definitions_at(self, start: EntryPosition) -> SchemaHistory:
        """The binlog reader's schema history at ``start`` (``ensure_history`` made sure
        there is one before the reader starts)."""
        return self.schema.history_at(start)

    def _read_up_to(self) -> EntryPosition | None:
        latest = self.memory_positions.get_latest(self.destination)
        return latest.position if latest is not None else None

    def _acked_position(self) -> EntryPosition | None:
        cursor = self.meta.get_cursor(mq_client(self.destination)) if self.meta.running else None
        return cursor.position if cursor is not None else None

    def lag_seconds(self) -> float:
        """How far the newest entry seen is behind now (0 when idle with heartbeats)."""
        if not self.last_event_ms:
            return 0.0
        return max(0.0, time.time() - self.last_event_ms / 1000)


def _default_parser(
    config: DestinationConfig,
    ahead: AheadEncoding | None,
    begins: bool,
    definitions: Definitions,
) -> EntryReader:
    values = decode_options(config)
    # 'auto' left undecided (an instance built without a runner) is one destination alone.
    if config.parser_process is not False:
        return ParserProcess(
            config.source,
            time_zone=config.timestamp_time_zone,
            heartbeat_period_s=config.heartbeat_period_s,
            destination=config.name,
            ahead=ahead_where_allowed(config, ahead),
            values=values,
            begins=begins,
            definitions=definitions,
        )
    return BinlogParser(
        config.source,
        time_zone=config.timestamp_time_zone,
        heartbeat_period_s=config.heartbeat_period_s,
        values=values,
        begins=begins,
        definitions=definitions,
    )


def decode_options(config: DestinationConfig) -> DecodeOptions:
    """How the destination's binlog reader spells values: its ``mq.value_mode`` and
    ``mq.binary_encoding`` (the time zone is resolved by the reader at start)."""
    return DecodeOptions(value_mode=config.mq.value_mode, binary_encoding=config.mq.binary_encoding)


def ahead_where_allowed(
    config: DestinationConfig, ahead: AheadEncoding | None
) -> AheadEncoding | None:
    """The encoder's ahead-of-batch encoding, unless the sink changes rows after the binlog
    reader (a field filter): encoded rows cannot be filtered."""
    if config.filter.field or config.filter.black_field:
        return None
    return ahead
