"""The snapshots of one destination, as its instance runs them (docs/snapshots.md).

What to snapshot (a fresh plan at a first start, the cursor's unfinished one at a restart, the
tables a changed filter newly selects, the tables of on-demand requests), when the reader
starts (beside the binlog reader's first run, kept across its restarts), how its chunks reach
the store between two transactions of the stream (``SnapshotHandoff``), and whether every
snapshot row is delivered. The instance stays the wiring: it asks the coordinator at each
start of its binlog reader and restarts the reader when a request needs it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bridge.config import DestinationConfig
from bridge.entry import AheadEncoding
from bridge.meta import ClientIdentity, MetaManager
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.source import open_connection
from bridge.position import EntryPosition, LogIdentity, LogPosition, SnapshotProgress
from bridge.sink import EntrySink
from bridge.snapshot.backfill import backfill_plan, coverage_change, coverage_of, log_change
from bridge.snapshot.handoff import SnapshotHandoff
from bridge.snapshot.planner import base_tables, fresh_plan
from bridge.snapshot.reader import SnapshotReader
from bridge.snapshot.requests import (
    PendingRequest,
    RequestOutcome,
    check_tables,
    plan_marker,
    with_tables_again,
)
from bridge.snapshot.window import WatermarkWindows
from bridge.store import MemoryEventStore

log = logging.getLogger(__name__)

# Test hook: put snapshot rows whose key the stream changed inside their window anyway (the
# negative case of tests/e2e/test_snapshot.py: a stale row then reaches Kafka).
KEEP_CHANGED_KEYS_ENV = "CANAL_BRIDGE_TEST_SNAPSHOT_KEEP_CHANGED_KEYS"


@dataclass(frozen=True)
class SnapshotParts:
    """What the coordinator works with: the destination's pieces the instance built."""

    config: DestinationConfig
    identity: LogIdentity
    client: ClientIdentity
    meta: MetaManager
    store: MemoryEventStore
    sink: EntrySink
    values: DecodeOptions
    ahead: AheadEncoding | None  # how the snapshot reader's process may encode its rows


class SnapshotCoordinator:
    def __init__(self, parts: SnapshotParts) -> None:
        self._parts = parts
        self._planned = False
        self.plan: SnapshotProgress | None = None
        # What every plan and cursor written from now on records as covered; and whether the
        # cursor read at the start records another (the plan marker then moves it here).
        self._covers = coverage_of(parts.config)
        self._covers_due = False
        self.backfilled = 0  # tables the filter newly selected, planned at the first start
        self.reader: SnapshotReader | None = None
        self.handoff: SnapshotHandoff | None = None
        # On-demand requests: queued, then planned at the binlog reader's restart, then
        # waiting for their plan marker to be put (docs/snapshots.md, "On demand").
        self._lock = threading.Lock()
        self._requests: list[PendingRequest] = []
        self._unmarked: list[PendingRequest] = []
        self.purged = False  # on_purged: snapshot chose the binlog end
        # The reader that finished, and the store's put sequence when it was seen finished.
        self._end: tuple[SnapshotReader, int] | None = None

    @property
    def requested(self) -> bool:
        """Whether requests wait to be planned (the binlog reader restarts for them)."""
        with self._lock:
            return bool(self._requests)

    def plan_once(self, known: LogPosition | None) -> None:
        """The snapshot to run, decided at the first start: the saved one while unfinished
        (whatever the mode: an on-demand or ``on_purged`` snapshot resumes too) plus the
        tables the filter newly selects (``bridge.snapshot.backfill``), else a fresh plan for
        a destination without a cursor, else none. Planned once it succeeded: a source that
        cannot be reached is asked again at the binlog reader's next attempt."""
        if self._planned:
            return
        config = self._parts.config
        plan: SnapshotProgress | None = None
        if known is not None:
            saved = known.snapshot
            plan = saved if saved is not None and not saved.done else None
            change = coverage_change(config, saved, self._base_tables)
            if change is not None:
                log_change(config, change)
                plan = backfill_plan(config, plan, change.tables)
                self.backfilled = len(change.tables)
                self._covers_due = True  # the plan marker moves the cursor's coverage
        elif config.snapshot.mode != "never":
            plan = self._fresh_plan()
        self.plan = self._covered(plan)
        self._planned = True

    def _covered(self, plan: SnapshotProgress | None) -> SnapshotProgress | None:
        return None if plan is None else SnapshotProgress(plan.tables, self._covers)

    def cursor_progress(self) -> SnapshotProgress:
        """What a cursor written now carries: the plan, or none covering the filter."""
        return self.plan if self.plan is not None else SnapshotProgress((), self._covers)

    def _base_tables(self) -> list[tuple[str, str]]:
        with open_connection(self._parts.config.source) as conn:
            return base_tables(conn)

    def _fresh_plan(self) -> SnapshotProgress | None:
        with open_connection(self._parts.config.source) as conn:
            plan = fresh_plan(conn, self._parts.config)
        return plan if plan.tables else None

    def delivered(self) -> bool:
        """Whether every row of this process's snapshot is acked, or there was nothing to
        snapshot (``snapshot.mode: initial_only`` stops there). Once the reader has put its
        last chunk, the acks past the store's put sequence of that moment cover every
        snapshot row (a skipped or dropped table has none)."""
        if not self._planned:
            return False
        reader, store = self.reader, self._parts.store
        if reader is None:
            return self.plan is None
        if not reader.stats.finished:
            return False
        if self._end is None or self._end[0] is not reader:
            self._end = (reader, store.put_sequence)
        return store.ack_sequence >= self._end[1]

    def start(self, start: EntryPosition) -> None:
        """Start the reader once, beside the first binlog reader run (a restart keeps it)."""
        plan, parts = self.plan, self._parts
        if plan is None or self.reader is not None:
            return
        windows = WatermarkWindows(start.sort_key(), (t.table for t in plan.tables if not t.done))
        handoff = SnapshotHandoff(
            plan,
            windows,
            lambda entries: parts.sink.put_snapshot(entries, parts.identity),
            start=start,
            # As many rows as the store held when each snapshot row was an entry of its own
            # (four batches: the store counts a snapshot entry as its rows, batch_items).
            store=parts.store,
            backlog_rows=parts.store.capacity_items,
            drop_changed_keys=os.environ.get(KEEP_CHANGED_KEYS_ENV) != "1",
        )
        self.handoff = handoff
        self.reader = SnapshotReader(parts.config, handoff, parts.values, parts.ahead)
        self.reader.start()

    def interleaved(self) -> None:
        """After a flush: once the reader has put its last chunk and stopped, nothing is left
        to interleave and the flush path goes back to the plain one."""
        reader = self.reader
        if reader is not None and reader.stats.finished and not reader.running:
            self.handoff = None

    def request(
        self,
        tables: Sequence[str],
        timeout_s: float,
        restart_reader: Callable[[], None],
        gone: Callable[[], bool],
    ) -> RequestOutcome:
        """Snapshot ``tables`` again while streaming (docs/snapshots.md, "On demand").

        1. Check them: base tables of the source the filter keeps, else
           ``SnapshotRequestRefused`` naming the others (nothing is done).
        2. Queue them and ``restart_reader``: the binlog reader's thread restarts at once
           from the last stored transaction, plans them (``take_requests``; each from its
           first row, a table already planned too), puts the plan marker and starts the
           snapshot reader.
        3. Wait, at most ``timeout_s``, until the marker is acknowledged: the cursor then
           carries the plan, so a crash after this returns still snapshots them. ``gone``
           says the destination stopped meanwhile.
        """
        with open_connection(self._parts.config.source) as conn:
            accepted = check_tables(conn, self._parts.config, tables)
        request = PendingRequest(accepted)
        with self._lock:
            self._requests.append(request)
        restart_reader()
        deadline = time.monotonic() + timeout_s
        while not request.put.wait(0.05):
            if time.monotonic() >= deadline or gone():
                return RequestOutcome(accepted, persisted=False)
        while self._parts.store.ack_sequence < request.sequence:
            if time.monotonic() >= deadline or gone():
                return RequestOutcome(accepted, persisted=False)
            time.sleep(0.05)
        return RequestOutcome(accepted, persisted=True)

    def take_requests(self) -> bool:
        """The binlog reader's thread, before it restarts: the queued requests join the plan
        (the running snapshot reader stops first: its chunks not yet put are read again, the
        plan is what was put). True when there were any: the binlog reader is then built
        anew, without encoding rows ahead (the windows need the keys of rows events)."""
        with self._lock:
            taken, self._requests = self._requests, []
        if not taken:
            return False
        base = self.stop_reader()
        tables = sorted({table for request in taken for table in request.tables})
        self.plan = self._covered(with_tables_again(base, tables))
        self._unmarked.extend(taken)
        log.info(
            "destination %s: snapshot requested of %s; the binlog reader restarts from the "
            "last stored transaction to interleave it",
            self._parts.config.name,
            ", ".join(tables),
        )
        return True

    def stop_reader(self) -> SnapshotProgress | None:
        """Stop the snapshot reader, if one runs; the plan as put into the store (else the
        planned one, else the cursor's)."""
        reader = self.reader
        self.reader = None
        self.handoff = None
        if reader is not None:
            reader.stop()
            return reader.handoff.progress
        if self.plan is not None:
            return self.plan
        cursor = self._parts.meta.get_cursor(self._parts.client)
        return None if cursor is None else cursor.snapshot

    def replan_after_purge(self) -> None:
        """``on_purged: snapshot`` chose the binlog end: a fresh plan of every table the
        snapshot config selects replaces any other."""
        self.purged = False
        self.stop_reader()
        self.plan = self._covered(self._fresh_plan())

    def put_plan_marker(self, start: EntryPosition) -> None:
        """Put the plan of the requests planned at this restart, or of the first start's
        coverage change, into the store at ``start`` (``bridge.snapshot.requests.plan_marker``)
        and tell the requests' callers its sequence. Until the marker is acknowledged the
        cursor keeps the coverage it had, so a crash before then plans the same again."""
        parts = self._parts
        if not self._covers_due and (not self._unmarked or self.plan is None):
            return
        self._covers_due = False
        progress = self.cursor_progress()
        if start.journal_name is None:  # a GTID start: no file position to put it at
            parts.meta.update_cursor(parts.client, LogPosition(parts.identity, start, progress))
            sequence = parts.store.ack_sequence
        else:
            marker = plan_marker(progress, start, int(time.time() * 1000))
            parts.sink.put_snapshot(marker, parts.identity)
            sequence = parts.store.put_sequence
        for request in self._unmarked:
            request.sequence = sequence
            request.put.set()
        self._unmarked.clear()

    def stop(self) -> None:
        if self.reader is not None:
            self.reader.stop()
