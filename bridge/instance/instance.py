"""One destination's pipeline: canal's AbstractCanalInstance.

Parts start in the order meta -> store -> sink -> parser and stop in reverse. The parser runs in
its own thread: it finds the start position, reads entries, groups them in the transaction
buffer and puts them through the sink into the store, where ``put`` blocks while the store is
full (backpressure reaching the binlog socket).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from bridge.backoff import Backoff
from bridge.config import DestinationConfig
from bridge.entry import AheadEncoding, Entry, EntryType
from bridge.exceptions import BridgeError
from bridge.instance.exceptions import DamagedCursor, InstanceFailed
from bridge.instance.log_position import (
    FailbackLogPositionManager,
    MemoryLogPositionManager,
    MetaLogPositionManager,
)
from bridge.instance.start_position import StartPositionFinder
from bridge.meta import ClientIdentity, MetaManager
from bridge.meta.base import MQ_CLIENT_ID
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
from bridge.parse.parser import BinlogParser, EntryReader
from bridge.parse.source import SourceFacts
from bridge.parse.values import DecodeOptions
from bridge.position import EntryPosition, LogIdentity, LogPosition, resume_position_after
from bridge.sink import EntrySink, FieldFilter, TableFilter, TransactionBuffer
from bridge.store import BatchMode, MemoryEventStore, MemoryStoreConfig
from bridge.store.exceptions import StoreStopped

log = logging.getLogger(__name__)

# The longest wait between restarts of a failing binlog reader.
RESTART_MAX_S = 60.0

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
    ) -> None:
        """``ahead``: how the binlog reader's process may encode rows events ahead of their
        batch, as the destination's encoder says (``RowsEncoder.ahead``)."""
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
        self.sink = EntrySink(
            self.store,
            TableFilter(config.filter.regex, config.filter.black_regex),
            field_filter if field_filter else None,
        )
        self.memory_positions = MemoryLogPositionManager()
        self.positions = FailbackLogPositionManager(
            self.memory_positions, MetaLogPositionManager(meta)
        )
        self.parser = (
            parser_factory(config) if parser_factory is not None else _default_parser(config, ahead)
        )
        self.restart_delay_s = restart_delay_s
        self._restart_backoff = Backoff(restart_delay_s, RESTART_MAX_S)
        self._reading = False  # entries flowed since the last restart
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
        self.parser.stop()
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
        while not self._stopping.is_set():
            try:
                self._parse_once()
                return
            except FATAL_ERRORS as exc:
                self.failure = exc
                log.error("destination %s stopped: %s", self.destination, exc)
                return
            except StoreStopped:
                return
            except Exception as exc:
                if self._stopping.is_set():
                    return
                self._restart_later(exc)

    def _restart_later(self, exc: Exception) -> None:
        """One line per failed attempt, waits growing to ``RESTART_MAX_S`` (a source that is
        down at start costs a few lines a minute, not a traceback every two seconds). Our own
        errors say what is wrong; anything else gets its traceback once."""
        if self._reading:
            self._restart_backoff.reset()  # it was running: a new outage starts short
            self._reading = False
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

    def _search_start(self, facts: SourceFacts, known: LogPosition | None) -> EntryPosition:
        finder = StartPositionFinder(
            self.config.source,
            facts,
            self.config.start,
            on_purged=self.config.on_purged,
            fallback_interval_s=self.config.fallback_interval_s,
        )
        return finder.find(known)

    def _parse_once(self) -> None:
        facts = self.parser.preflight()
        known = self.positions.get_latest(self.destination)
        # A position this process read itself is an event boundary; one loaded from the
        # stored cursor may have been edited or damaged.
        from_cursor = (
            known is not None and self.memory_positions.get_latest(self.destination) is None
        )
        start = self._find_start(facts, known)
        if known is None:
            # Record the first start as the cursor so a crash before the first ack resumes
            # here rather than at a later "current end".
            self.meta.update_cursor(mq_client(self.destination), LogPosition(self.identity, start))
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
        for entry in self.parser.entries(start):
            self._reading = True
            # A heartbeat's header time is 0 (MySQL and MariaDB alike); the source sends one
            # when it has nothing newer, so it means "caught up as of now".
            seen = entry.header.execute_time
            if entry.entry_type is EntryType.HEARTBEAT:
                seen = int(time.time() * 1000)
            self.last_event_ms = max(self.last_event_ms, seen)
            buffer.add(entry)

    def _flush(self, entries: Sequence[Entry]) -> None:
        self.sink.sink(entries, self.identity)
        last = entries[-1]
        if last.entry_type is EntryType.TRANSACTIONEND or last.is_ddl:
            self.memory_positions.persist(
                self.destination, LogPosition(self.identity, resume_position_after(last))
            )

    def lag_seconds(self) -> float:
        """How far the newest entry seen is behind now (0 when idle with heartbeats)."""
        if not self.last_event_ms:
            return 0.0
        return max(0.0, time.time() - self.last_event_ms / 1000)


def _default_parser(config: DestinationConfig, ahead: AheadEncoding | None) -> EntryReader:
    values = decode_options(config)
    if config.parser_process:
        return ParserProcess(
            config.source,
            time_zone=config.timestamp_time_zone,
            heartbeat_period_s=config.heartbeat_period_s,
            destination=config.name,
            ahead=ahead_where_allowed(config, ahead),
            values=values,
        )
    return BinlogParser(
        config.source,
        time_zone=config.timestamp_time_zone,
        heartbeat_period_s=config.heartbeat_period_s,
        values=values,
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
