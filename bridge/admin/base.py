"""What the admin endpoint reads of a running bridge: one snapshot per destination.

The metrics collector and the probes never touch the hot path: at scrape (or probe) time an
``Observed`` hands out immutable ``DestinationSnapshot`` values built from the MQ worker's
progress snapshot, the store's sequences and the instance's newest event time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from bridge.mq.worker import WorkerProgress
from bridge.position import EntryPosition

Role = Literal["active", "standby"]
# starting: not yet reading (or no worker yet); running: worker and parser threads alive;
# standby: another server runs it (HA); paused: stopped by an operator until resumed, its
# cursor flushed; stopped / failed: the worker or parser has ended.
DestinationState = Literal["starting", "running", "standby", "paused", "stopped", "failed"]


@dataclass(frozen=True, slots=True)
class StoreUsage:
    """Entries put but not yet acked, and what the store may hold."""

    items: int
    bytes: int
    capacity_items: int
    capacity_bytes: int


@dataclass(frozen=True, slots=True)
class SnapshotUsage:
    """How far the destination's snapshot (docs/snapshots.md) has come: rows put into the
    store, tables done (read, skipped or dropped) of the plan's tables, and how many of those
    the filter newly selected at the destination's start (docs/snapshots.md, "Tables newly
    selected by the filter")."""

    rows: int
    tables_done: int
    tables_total: int
    tables_backfilled: int = 0


@dataclass(frozen=True, slots=True)
class SchemaUsage:
    """The destination's schema history (docs/schema-history.md): table definitions held and
    DDL records kept after them, DDL recorded by this process, whether it stopped on a
    TABLE_MAP or DDL the history could not account for, and tables whose live definition
    differed at the last drift check."""

    tables: int
    records: int
    ddl_recorded: int
    mismatches: int
    drifted: int


@dataclass(frozen=True, slots=True)
class DestinationSnapshot:
    destination: str
    role: Role
    state: DestinationState
    progress: WorkerProgress | None = None
    store: StoreUsage | None = None
    # Seconds the oldest change not yet delivered is behind now; None before anything was read.
    lag_s: float | None = None
    # The acked cursor (the worker's last ack, else the stored cursor).
    cursor: EntryPosition | None = None
    # Binlog time (ms) of the newest entry the parser has seen, heartbeats included (0: none).
    source_event_ms: int = 0
    # Seconds since the worker loop last came round; None when it may block legitimately.
    beat_age_s: float | None = None
    # How long the destination may go without progress (new events, heartbeats or acks)
    # before readiness says it is stalled.
    stale_after_s: float = 60.0
    # The error class the binlog reader is retrying after, while nothing was read since.
    source_trouble: str | None = None
    # The snapshot this process runs or ran; None without one.
    snapshot: SnapshotUsage | None = None
    # The schema history; None before the destination has one.
    schema: SchemaUsage | None = None
    # The last error that stopped the destination, one line saying what to do; None without.
    error: str | None = None


class Observed(Protocol):
    """Anything that can describe its destinations right now (the runner, a fake in tests)."""

    def snapshots(self) -> Sequence[DestinationSnapshot]: ...


class Reachability(Protocol):
    """Whether a dependency every destination needs answers (the Kafka cluster)."""

    def unreachable(self) -> str | None:
        """None when it answers; else why not, in one line without addresses or data."""
        ...
