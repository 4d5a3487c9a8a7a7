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
from bridge.parse.source import SourceFacts
from bridge.position import (
    EntryPosition,
    LogIdentity,
    LogPosition,
    is_ack_point,
    resume_position_after,
)
from bridge.schema.definitions import Schemas
from bridge.schema.exceptions import SchemaError
from bridge.schema.history import SchemaHistory
from bridge.schema.recorder import SchemaRecorder
from bridge.schema.store import HistoryStore, MemoryHistoryStore
from bridge.sink import (
    ColumnShaper,
    EntrySink,
    FieldFilter,
    KeyColumns,
    MaskedKeyColumn,
    MissingKeyColumn,
    TableFilter,
    TransactionBuffer,
)
from bridge.snapshot.coordinator import SnapshotCoordinator, SnapshotParts
from bridge.snapshot.reader import SnapshotReader
from bridge.snapshot.requests import RequestOutcome
from bridge.store import BatchMode, MemoryEventStore, MemoryStoreConfig
from bridge.store.exceptions import StoreStopped

log = logging.getLogger(__name__)

# The longest wait between restarts of a failing binlog reader.
RESTART_MAX_S = 60.0

# How long an on-demand snapshot request waits for its plan to reach the cursor (below the
# admin endpoint's request timeout).
REQUEST_WAIT_S = 5.0


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
    MaskedKeyColumn,
    MissingKeyColumn,
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
        self.keys = KeyColumns(config.mq.key_columns)
        self.shaper = column_shaper(config)
        self.sink = EntrySink(
            self.store,
            tables,
            field_filter if field_filter else None,
            skip=config.filter.skip,
            shaper=self.shaper,
            keys=self.keys if self.keys else None,
        )
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
        self.snapshots = SnapshotCoordinator(
            SnapshotParts(
                config,
                self.identity,
                mq_client(self.destination),
                meta,
                self.store,
                self.sink,
                decode_options(config),
                ahead_where_allowed(config, ahead),
            )
        )
        self.restart_delay_s = restart_delay_s
        self._restart_backoff = Backoff(restart_delay_s, RESTART_MAX_S)
        self._reading = False  # entries flowed since the last restart
        self._trouble: str | None = None  # the error class of the reader's last failure
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
        self.snapshots.stop()
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
                if not self.snapshots.requested:
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
                if self.snapshots.requested:  # the reader was stopped for a snapshot request
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
        self.snapshots.purged = finder.snapshot_needed
        return start

    def _parse_once(self) -> None:
        known = self.positions.get_latest(self.destination)
        self.snapshots.plan_once(known)
        self._plan_requests()
        parser = self._built_parser()
        facts = parser.preflight()
        # A position this process read itself is an event boundary; one loaded from the
        # stored cursor may have been edited or damaged.
        from_cursor = (
            known is not None and self.memory_positions.get_latest(self.destination) is None
        )
        start = self._find_start(facts, known)
        purged = self.snapshots.purged
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
            first = LogPosition(self.identity, start, self.snapshots.cursor_progress())
            self.meta.update_cursor(mq_client(self.destination), first)
            self.meta.flush(raise_errors=True)
        self.snapshots.put_plan_marker(start)
        self.snapshots.start(start)
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
        if self._checks_keys():
            check_keys(self.keys, self.shaper, self.schema.history_at(start).schemas)
        for batch in self.parser.batches(start):
            self._reading = True
            # DDL into the schema history before anything of it is put (or acked).
            for entry in [e for e in batch if e.row_change is not None and e.row_change.is_ddl]:
                record(entry)
                if self._checks_keys():
                    self._check_keys_after(entry)
            # Two comprehensions cost a quarter of one loop with a branch and a max() per
            # entry (a batch holds up to a thousand).
            seen = max([entry.header.execute_time for entry in batch], default=0)
            # A heartbeat's header time is 0 (MySQL and MariaDB alike); the source sends one
            # when it has nothing newer, so it means "caught up as of now".
            idle = HEARTBEAT in [entry.entry_type for entry in batch]
            if idle:
                seen = max(seen, int(time.time() * 1000))
            self.last_event_ms = max(self.last_event_ms, seen)
            if self.snapshots.handoff is None:
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
        handoff = self.snapshots.handoff
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
            self.snapshots.interleaved()

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

    @property
    def snapshot_reader(self) -> SnapshotReader | None:
        return self.snapshots.reader

    def snapshot_delivered(self) -> bool:
        """Whether every row of this process's snapshot is acked (``snapshot.mode:
        initial_only`` stops there: bridge.runner)."""
        return self.snapshots.delivered()

    def request_snapshot(
        self, tables: Sequence[str], timeout_s: float = REQUEST_WAIT_S
    ) -> RequestOutcome:
        """Snapshot ``tables`` again while streaming (``SnapshotCoordinator.request``): the
        binlog reader is stopped, and its thread restarts at once to plan them."""
        self.check_alive()
        if not self.running:
            raise InstanceFailed(f"{self.destination}: not running")
        return self.snapshots.request(
            tables,
            timeout_s,
            restart_reader=self._stop_reader,
            gone=lambda: self._stopping.is_set() or not self.running,
        )

    def _stop_reader(self) -> None:
        with self._parser_lock:
            parser = self.parser
        if parser is not None:
            parser.stop()

    def _plan_requests(self) -> None:
        """The binlog reader's thread, before (re)starting the parser: queued requests join
        the plan, and the parser is built anew (without encoding rows ahead)."""
        if not self.snapshots.requested:
            return
        with self._parser_lock:
            if self.parser is not None:
                self.parser.stop()
                self.parser = None
        self.snapshots.take_requests()

    def _replan_after_purge(self) -> None:
        """``on_purged: snapshot`` chose the binlog end: a fresh plan replaces any other, and
        the parser is rebuilt without ahead encoding (the finder logged the WARNING) and
        checks the source again, so that its reader process starts ahead and is given the
        facts, as the first one was."""
        self.snapshots.replan_after_purge()
        with self._parser_lock:
            if self.parser is not None and self._parser_factory is None:
                self.parser.stop()
                self.parser = None
        self._built_parser().preflight()

    def _built_parser(self) -> EntryReader:
        with self._parser_lock:
            if self.parser is None:
                if self._parser_factory is not None:
                    self.parser = self._parser_factory(self.config)
                else:
                    # Rows encoded ahead hide their images; a snapshot needs their keys.
                    ahead = self._ahead if self.snapshots.plan is None else None
                    self.parser = _default_parser(
                        self.config, ahead, self._begins, self._definitions_at
                    )
            if self._stopping.is_set() or self.snapshots.requested:
                self.parser.stop()  # a request came while it was built: restart at once
            return self.parser

    def _checks_keys(self) -> bool:
        """Whether table definitions are checked against ``mq.key_columns`` (every named
        column present) and ``columns`` (no key masked or hashed without ``mask_keys``)."""
        return bool(self.keys) or (self.shaper is not None and not self.shaper.mask_keys)

    def _check_keys_after(self, ddl: Entry) -> None:
        """``check_keys`` on the definitions after a DDL on a table the rules name (it may
        drop a named key column, or make a masked column a key); a table renamed into a
        rule's name is caught at its first row."""
        schema, table = ddl.header.schema_name, ddl.header.table_name
        shaped = self.shaper is not None and self.shaper.shapes_for(schema, table) is not None
        if self.keys.columns_for(schema, table) is None and not shaped:
            return
        history = self.schema.stored()
        if history is not None:
            check_keys(self.keys, self.shaper, self.schema.replay(history).schemas)

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
    reader (a field filter, column shaping): encoded rows cannot be filtered nor shaped."""
    fields, columns = config.filter, config.columns
    if fields.field or fields.black_field or columns.mask or columns.hash or columns.truncate:
        return None
    if config.mq.key_columns:  # rows rendered ahead carry the keys they were rendered with
        return None
    return ahead


def column_shaper(config: DestinationConfig) -> ColumnShaper | None:
    """The destination's ``columns`` rules, or None when it shapes no column."""
    columns = config.columns
    salt = columns.hash_salt.get_secret_value() if columns.hash_salt is not None else ""
    shaper = ColumnShaper(
        columns.mask,
        columns.hash,
        columns.truncate,
        mask_length=columns.mask_length,
        salt=salt,
        mask_keys=columns.mask_keys,
    )
    return shaper if shaper else None


def check_keys(keys: KeyColumns, shaper: ColumnShaper | None, schemas: Schemas) -> None:
    """Raise ``MissingKeyColumn`` for the first table that lacks a column ``keys`` names, and
    ``MaskedKeyColumn`` for a key column (``keys``' or the primary key) that ``shaper`` masks
    or hashes without ``mask_keys``: a start, or a DDL, refused before any row is read."""
    for table in schemas.tables.values():
        schema, name = table.schema, table.name
        missing = keys.missing(schema, name, [column.name for column in table.columns])
        if missing is not None:
            raise MissingKeyColumn(table.full_name, missing.lower())
        if shaper is None or shaper.mask_keys:
            continue
        named = keys.columns_for(schema, name)
        key = [c.name for c in table.columns if c.name.upper() in named] if named else None
        for column in key if key is not None else table.primary_key:
            if shaper.hides(schema, name, column):
                raise MaskedKeyColumn(table.full_name, column)
