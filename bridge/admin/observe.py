"""Snapshots of the runner's destinations, read at scrape time (the runner's ``Observed``).

Nothing here locks the hot path for long: ``worker.progress()`` is an immutable snapshot
behind a short lock, the store's sequences are plain integers, and the instance's newest event
time is one attribute.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from bridge.admin.base import (
    DestinationSnapshot,
    DestinationState,
    Role,
    SchemaUsage,
    SnapshotUsage,
    StoreUsage,
)
from bridge.admin.roles import HA_ROLES, HaRoles
from bridge.config import BridgeConfig, DestinationConfig
from bridge.exceptions import BridgeError
from bridge.instance import EmbeddedServer, Instance, UnknownDestination, mq_client
from bridge.mq.worker import MqWorker, WorkerProgress
from bridge.parse.exceptions import SchemaMismatch
from bridge.position import EntryPosition
from bridge.schema.exceptions import SchemaError

# Readiness: a running destination that shows no progress (no new binlog event, no heartbeat,
# no ack) for this many heartbeat periods, and at least STALE_FLOOR_S, is stalled.
STALE_HEARTBEATS = 3
STALE_FLOOR_S = 10.0


class RunnerView(Protocol):
    """The parts of ``bridge.runner.Runner`` the observer reads."""

    @property
    def config(self) -> BridgeConfig: ...

    @property
    def server(self) -> EmbeddedServer: ...

    @property
    def workers(self) -> Mapping[str, MqWorker]: ...

    @property
    def paused(self) -> Mapping[str, EntryPosition | None]:
        """Paused destinations and their stored cursor."""
        ...

    @property
    def start_errors(self) -> Mapping[str, BaseException]:
        """Destinations that failed to start (after a configuration change), and why."""
        ...


class RunnerObserver:
    def __init__(
        self,
        runner: RunnerView,
        roles: HaRoles = HA_ROLES,
        *,
        wall_clock: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._runner = runner
        self._roles = roles
        self._wall_clock = wall_clock
        self._clock = clock

    def snapshots(self) -> Sequence[DestinationSnapshot]:
        return [self._snapshot(d) for d in self._runner.config.destinations]

    def _snapshot(self, destination: DestinationConfig) -> DestinationSnapshot:
        name = destination.name
        role = self._roles.get(name)
        stale_after_s = max(STALE_FLOOR_S, STALE_HEARTBEATS * destination.heartbeat_period_s)
        instance = self._instance(name)
        worker = self._runner.workers.get(name)
        if instance is None:
            return self._not_started(name, role, stale_after_s)
        progress = worker.progress() if worker is not None else None
        now_ms = int(self._wall_clock() * 1000)
        return DestinationSnapshot(
            destination=name,
            role=role,
            state=_state(role, instance, worker, progress),
            progress=progress,
            store=_store_usage(instance),
            lag_s=_lag_s(instance, progress, now_ms),
            cursor=_cursor(instance, progress),
            source_event_ms=instance.last_event_ms,
            beat_age_s=self._beat_age(worker),
            stale_after_s=stale_after_s,
            source_trouble=instance.source_trouble,
            snapshot=_snapshot_usage(instance),
            schema=_schema_usage(instance),
            error=_error(instance, worker),
        )

    def _not_started(self, name: str, role: Role, stale_after_s: float) -> DestinationSnapshot:
        """A destination without an instance here: standing by, paused (with its stored
        cursor), failed to start, or about to start."""
        error = self._runner.start_errors.get(name)
        if role == "standby":
            return DestinationSnapshot(name, role, "standby", stale_after_s=stale_after_s)
        if name in self._runner.paused:
            cursor = self._runner.paused[name]
            return DestinationSnapshot(
                name, role, "paused", cursor=cursor, stale_after_s=stale_after_s
            )
        if error is not None:
            return DestinationSnapshot(
                name, role, "failed", stale_after_s=stale_after_s, error=_one_line(error)
            )
        return DestinationSnapshot(name, role, "starting", stale_after_s=stale_after_s)

    def _instance(self, name: str) -> Instance | None:
        try:
            return self._runner.server.instance(name)
        except UnknownDestination:
            return None  # not started yet, stopped, or held by another server (HA)

    def _beat_age(self, worker: MqWorker | None) -> float | None:
        if worker is None or not worker.running:
            return None
        timeout = worker.settings.get_timeout_s
        if timeout is not None and timeout <= 0:
            return None  # a blocking get waits for a full batch as long as it takes
        return max(0.0, self._clock() - worker.last_beat)


def _state(
    role: Role, instance: Instance, worker: MqWorker | None, progress: WorkerProgress | None
) -> DestinationState:
    if role == "standby":
        return "standby"
    if instance.failure is not None or (worker is not None and worker.error is not None):
        return "failed"
    if worker is None or progress is None or progress.state == "new":
        return "starting"
    if progress.state in ("stopped", "failed"):
        return progress.state
    return "running" if instance.running else "stopped"


def _error(instance: Instance, worker: MqWorker | None) -> str | None:
    """What stopped the destination, on one line (a message may list problems below it)."""
    error = instance.failure or (worker.error if worker is not None else None)
    return None if error is None else _one_line(error)


def _one_line(error: BaseException) -> str:
    lines = [line.strip().rstrip(":") for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


def _store_usage(instance: Instance) -> StoreUsage:
    store = instance.store
    return StoreUsage(
        items=max(0, store.put_sequence - store.ack_sequence),
        bytes=store.used_memory,
        capacity_items=store.capacity_items,
        capacity_bytes=store.capacity_bytes,
    )


def _snapshot_usage(instance: Instance) -> SnapshotUsage | None:
    reader = instance.snapshot_reader
    if reader is None:
        return None
    stats = reader.stats
    return SnapshotUsage(
        stats.rows, stats.tables_done, stats.tables_total, instance.snapshots.backfilled
    )


def _schema_usage(instance: Instance) -> SchemaUsage | None:
    stored = instance.schema.kept()
    if stored is None:
        return None
    stopped = isinstance(instance.failure, SchemaMismatch | SchemaError)
    return SchemaUsage(
        tables=len(stored.schemas.tables),
        records=len(stored.records),
        ddl_recorded=instance.schema.applied,
        mismatches=1 if stopped else 0,
        drifted=len(instance.drift.drifted),
    )


def _lag_s(instance: Instance, progress: WorkerProgress | None, now_ms: int) -> float | None:
    """How far behind the source the delivered data is.

    A batch in flight: the age of its first event. Caught up (the last get was empty, or
    everything put into the store is acked: an idle worker's get may sleep up to its
    ``idle_wait_s`` before it says so): the parser's lag, which heartbeats keep near 0 on an
    idle source. In between batches: the age of the last acked event. None until the parser
    has seen anything.
    """
    if not instance.last_event_ms:
        return None
    if progress is not None:
        if progress.pending_since_ms is not None:
            return max(0.0, (now_ms - progress.pending_since_ms) / 1000)
        store = instance.store
        drained = store.ack_sequence >= store.put_sequence
        if not progress.caught_up and not drained and progress.last_event_time_ms is not None:
            return progress.lag_s(now_ms)
    return max(0.0, (now_ms - instance.last_event_ms) / 1000)


def _cursor(instance: Instance, progress: WorkerProgress | None) -> EntryPosition | None:
    if progress is not None and progress.last_position is not None:
        return progress.last_position
    try:
        stored = instance.meta.get_cursor(mq_client(instance.destination))
    except BridgeError:
        return None  # the meta store is stopping
    return stored.position if stored is not None else None
