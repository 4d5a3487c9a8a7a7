"""``canal-bridge run``: one instance and one MQ worker per destination (canal's CanalMQStarter).

Start order per destination: instance (meta -> store -> sink -> parser), then its worker.
Shutdown on SIGINT/SIGTERM: workers stop first (each rolls back its in-flight batch), then
the instances stop, which flushes the acked cursors. A restart resumes from those cursors.

The operator's actions (``bridge.admin.DestinationControl``) act on one destination while the
others run on: ``pause`` stops it as a shutdown would (cursor flushed) and ``resume`` starts it
again from that cursor; ``move_cursor`` rewrites the cursor of a stopped destination through
the meta store its instance reads at start.

HA mode (a ``zookeeper`` section): the runner is the ``DestinationHost`` of a
``bridge.ha.HaNode``, which starts a destination (fenced worker, ZooKeeper meta store when
``meta.store: zookeeper``) only once this process owns its running node, stops it when the
node is lost, and stands by for the rest until SIGINT/SIGTERM.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.admin import HA_ROLES, AdminServer, RunnerObserver, set_ha_role
from bridge.config import BridgeConfig, ConfigChange, DestinationConfig
from bridge.exceptions import ActionRefused
from bridge.instance import (
    DestinationElsewhere,
    EmbeddedServer,
    Instance,
    UnknownDestination,
    mq_client,
)
from bridge.logs import set_position_lookup
from bridge.meta import MetaManager, build_meta_manager
from bridge.mq.formats import rows_encoder
from bridge.mq.records import RowsEncoder
from bridge.mq.senders import sender_factory
from bridge.mq.worker import MqWorker, build_worker
from bridge.position import EntryPosition, LogIdentity, LogPosition
from bridge.runner.cursor_target import parse_target, resolve_target
from bridge.runner.reload import LiveConfig
from bridge.schema.store import history_store
from bridge.snapshot.requests import RequestOutcome

if TYPE_CHECKING:
    from bridge.ha import HaNode

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 30.0


def build_meta(config: BridgeConfig, ha: HaNode | None = None) -> MetaManager:
    """The configured meta store; in HA mode with the node's ZooKeeper session and fence."""
    return build_meta_manager(config.meta) if ha is None else ha.meta_manager()


def build_instance(
    config: BridgeConfig,
    destination: DestinationConfig,
    encoder: RowsEncoder,
    ha: HaNode | None = None,
) -> Instance:
    """The destination's instance; its binlog reader may encode ahead as ``encoder`` allows,
    and leaves out the transaction BEGINs it makes nothing of."""
    placed = parser_placement(destination, len(config.destinations))
    return Instance(
        placed,
        build_meta(config, ha),
        ahead=encoder.ahead(),
        begins=not encoder.rows_only,
        schema_store=(
            history_store(config, destination.name)
            if ha is None
            else ha.history_store(destination.name)
        ),
    )


def parser_placement(destination: DestinationConfig, destinations: int) -> DestinationConfig:
    """``parser_process: auto`` decided for a process configured with ``destinations``: a
    child process each while there are no more of them than cores (a busy destination gets
    a core of its own: the faster path, docs/benchmarks.md), else a thread each (a child
    costs tens of MB even idle, too many for dozens of quiet destinations)."""
    if destination.parser_process != "auto":
        return destination
    in_child = destinations <= (os.cpu_count() or 1)
    return destination.model_copy(update={"parser_process": in_child})


class Runner:
    def __init__(self, config: BridgeConfig, path: Path | None = None) -> None:
        """``path``: the file ``config`` was read from, which ``apply_config`` rewrites and
        ``canal-bridge run`` watches (``live.poll``)."""
        self.config = config
        self.server = EmbeddedServer()
        self.senders = sender_factory(config)
        self.workers: dict[str, MqWorker] = {}
        self.admin: AdminServer | None = None
        self.ha: HaNode | None = None
        # Paused destinations and their stored cursor (None: none stored yet).
        self.paused: dict[str, EntryPosition | None] = {}
        # Destinations that failed to start after a configuration change, and why.
        self.start_errors: dict[str, BaseException] = {}
        # Serialises the actions that start and stop destinations (admin threads, the main
        # loop, the HA election's thread).
        self._lock = threading.RLock()
        self.live = LiveConfig(self, path)

    def start(self) -> None:
        self.start_admin()
        set_position_lookup(self._cursor_of)
        if self.config.zookeeper is not None:
            from bridge.ha import HaNode

            for destination in self.config.destinations:
                if destination.snapshot.mode == "initial_only":
                    log.warning(
                        "destination %s: snapshot.mode initial_only does not stop it in HA mode "
                        "(zookeeper is set): it streams on after its snapshot",
                        destination.name,
                    )
            self.ha = HaNode(self.config, self, on_role=set_ha_role, snapshots=self)
            self.ha.start()
            return
        for destination in self.config.destinations:
            self.start_destination(destination.name)

    # -- one destination (bridge.ha.DestinationHost) ------------------------------------------

    def start_destination(self, name: str) -> None:
        with self._lock:
            self.paused.pop(name, None)
            self.start_errors.pop(name, None)
            self._start_destination(self.config.destination(name))

    def _start_destination(self, destination: DestinationConfig) -> None:
        name = destination.name
        # The output format is chosen once: the instance's reader and the worker share it.
        encoder = rows_encoder(destination.mq, self.senders.max_record_bytes)
        instance = build_instance(self.config, destination, encoder, self.ha)
        sender = self.senders.sender(destination)  # exactly-once: fences the previous owner
        try:
            cursor = self.senders.cursor(destination, instance.meta)
            self.server.start(instance)
        except BaseException:
            sender.close()
            raise
        guard = None if self.ha is None else self.ha.outlets
        worker = build_worker(
            destination, self.server, sender, guard, encoder=encoder, cursor=cursor
        )
        self.workers[name] = worker
        worker.start()
        log.info("destination %s started", name)

    def stop_destination(self, name: str, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Stop the worker (its in-flight batch is rolled back), then the instance."""
        with self._lock:
            worker = self.workers.pop(name, None)
            if worker is not None:
                worker.stop()
                if not worker.join(timeout_s):
                    log.error("MQ worker of %s did not stop within %.0fs", name, timeout_s)
            self.server.stop(name)

    # -- the operator's actions (bridge.admin.DestinationControl) -------------------------------

    def pause(self, destination: str) -> None:
        """Stop ``destination`` as a shutdown would (in-flight batch rolled back, cursor
        flushed) and keep it stopped until ``resume``. In HA mode this process keeps its
        running node meanwhile, so no standby takes it over."""
        with self._lock:
            self._check_runs_here(destination)
            if destination in self.paused:
                return
            self._refuse_memory_meta(destination, "pause")
            self.stop_destination(destination)
            self.paused[destination] = self._stored_cursor(destination)
        log.info("destination %s paused at %s", destination, _at(self.paused[destination]))

    def resume(self, destination: str) -> None:
        """Start a paused (or stopped) destination again from its stored cursor."""
        with self._lock:
            self._check_runs_here(destination)
            if self._running(destination):
                return
            self.stop_destination(destination)  # a failed one: its leftovers
            self.start_destination(destination)

    def move_cursor(self, destination: str, target: str) -> EntryPosition:
        """Store ``target`` (``file:position``, a GTID set, an ISO-8601 timestamp) as the
        cursor of a destination that is not running, so that ``resume`` starts there; the
        destination stays paused. ``ActionRefused`` while it runs, for a malformed target or
        one the source's binlog no longer holds (``resolve_target``), and for a cursor no
        meta store holds (exactly-once delivery, ``meta.store: memory``): nothing written."""
        try:
            start = parse_target(target)
        except ValueError as exc:
            raise ActionRefused(f"destination {destination}: {exc}") from None
        with self._lock:
            config = self._movable(destination)
        # Asking the source may scan binlogs for seconds: the others' actions go on meanwhile.
        position = resolve_target(config, start)
        with self._lock:
            config = self._movable(destination)  # not resumed or removed meanwhile
            self.stop_destination(destination)  # a failed one: its leftovers
            self._write_cursor(config, position)
            self.paused[destination] = position
        log.info("destination %s: cursor moved to %s", destination, _at(position))
        return position

    def _movable(self, destination: str) -> DestinationConfig:
        """The configuration of a destination whose cursor may be moved now, else why not."""
        self._check_runs_here(destination)
        if self._running(destination):
            raise ActionRefused(
                f"destination {destination} is running: pause it first (its cursor moves "
                "only while it is stopped), then move the cursor and resume it"
            )
        config = self.config.destination(destination)
        if config.mq.delivery == "exactly_once":
            raise ActionRefused(
                f"destination {destination} delivers exactly_once: its cursor is committed "
                "with its records to the offsets topic, which is not rewritten; stop it, "
                "remove it from the file, and add it under a new name with start set"
            )
        self._refuse_memory_meta(destination, "move_cursor")
        return config

    def _check_runs_here(self, destination: str) -> None:
        """``UnknownDestination`` for a name the configuration lacks; in HA mode
        ``DestinationElsewhere`` unless this process owns its running node."""
        if destination not in {d.name for d in self.config.destinations}:
            raise UnknownDestination(destination)
        if self.ha is not None and destination not in self.ha.election.active():
            raise DestinationElsewhere(destination, self.ha.owner_of(destination))

    def _running(self, destination: str) -> bool:
        worker = self.workers.get(destination)
        return worker is not None and not worker.join(0)

    def _refuse_memory_meta(self, destination: str, action: str) -> None:
        if self.config.meta.store == "memory":
            raise ActionRefused(
                f"destination {destination}: {action} needs a stored cursor and meta.store "
                "memory keeps none once a destination stops; use meta.store file or zookeeper"
            )

    @contextmanager
    def _meta(self) -> Iterator[MetaManager]:
        """A meta manager of its own for a stopped destination's cursor; stopping it saves."""
        meta = build_meta(self.config, self.ha)
        meta.start()
        try:
            yield meta
        finally:
            meta.stop()

    def _stored_cursor(self, destination: str) -> EntryPosition | None:
        with self._meta() as meta:
            stored = meta.get_cursor(mq_client(destination))
        return None if stored is None else stored.position

    def _write_cursor(self, config: DestinationConfig, position: EntryPosition) -> None:
        """Store ``position`` as the cursor (keeping the snapshot progress it carried), then
        read it back: a store that declined the write (HA: the fence no longer holds) is
        refused rather than reported as done."""
        client = mq_client(config.name)
        identity = LogIdentity(config.source.address, config.source.slave_id)
        with self._meta() as meta:
            if not meta.has_subscribe(client):
                meta.subscribe(client)
            previous = meta.get_cursor(client)
            cursor = LogPosition(identity, position).keeping_snapshot_of(previous)
            meta.update_cursor(client, cursor)
        kept = self._stored_cursor(config.name)
        if kept is None or (kept.sort_key(), kept.gtid) != (position.sort_key(), position.gtid):
            raise ActionRefused(
                f"destination {config.name}: the meta store did not keep the new cursor (in HA "
                "mode: this process no longer owns the destination); ask the process that does"
            )

    # -- the configuration, changed while running ----------------------------------------------

    def check_config(self, text: str) -> ConfigChange:
        """What applying ``text`` would change; nothing is applied."""
        return self.live.check(text)[1]

    def apply_config(self, text: str) -> ConfigChange:
        """Validate ``text``, write it to the configuration file, and apply it."""
        return self.live.apply(text)

    def apply_change(self, new: BridgeConfig, change: ConfigChange) -> None:
        """Run ``new``: stop the removed destinations and the changed ones (each as a
        shutdown would, cursor flushed), then start the changed ones from their cursor and
        the added ones; the unchanged ones are not touched. A changed destination that is
        paused takes its new configuration when resumed. One that fails to start is
        reported as failed (``start_errors``); the others run on."""
        if self.ha is not None:
            self._apply_in_ha(new, change)
            return
        with self._lock:
            for name in (*change.removed, *change.changed):
                self.stop_destination(name)
                self.start_errors.pop(name, None)
                log.info("destination %s stopped: %s", name, _why(name, change))
            for name in change.removed:
                self.paused.pop(name, None)
            self.config = new
            for name in (*change.changed, *change.added):
                if name not in self.paused:
                    self._start_reported(name)

    def _apply_in_ha(self, new: BridgeConfig, change: ConfigChange) -> None:
        """The removed destinations are given up (cursor written, running node deleted) and
        unregistered; the changed ones this process runs restart here; the added ones are
        registered and raced for. The election is told outside the runner's lock: its round
        starts and stops destinations through this runner."""
        assert self.ha is not None
        election = self.ha.election
        removed = set(change.removed)
        election.set_destinations([n for n in election.destinations if n not in removed])
        with self._lock:
            here = [name for name in change.changed if name in election.active()]
            for name in here:
                self.stop_destination(name)
                log.info("destination %s stopped: %s", name, _why(name, change))
            for name in change.removed:
                self.paused.pop(name, None)
                self.start_errors.pop(name, None)
            self.config = new
            for name in here:
                if name not in self.paused:
                    self._start_reported(name)
        election.set_destinations([d.name for d in new.destinations])
        for name in change.removed:
            HA_ROLES.clear(name)

    def _start_reported(self, name: str) -> None:
        try:
            self.start_destination(name)
        except Exception as exc:
            self.start_errors[name] = exc
            log.error("destination %s: could not start: %s", name, exc)

    def request_snapshot(
        self, destination: str, tables: Sequence[str], timeout_s: float = 5.0
    ) -> RequestOutcome:
        """Snapshot ``tables`` of a destination this process runs again, while it streams
        (the admin endpoint's and the HA request watcher's action; docs/snapshots.md)."""
        if destination not in {d.name for d in self.config.destinations}:
            raise UnknownDestination(destination)
        try:
            instance = self.server.instance(destination)
        except UnknownDestination:
            if self.ha is None:
                raise
            raise DestinationElsewhere(destination, self.ha.owner_of(destination)) from None
        return instance.request_snapshot(tables, timeout_s)

    def retire_finished(self) -> None:
        """Stop each destination whose work is done: with ``snapshot.mode: initial_only``,
        once every row of its snapshot is acked (``Instance.snapshot_delivered``). Its cursor
        keeps where the stream got to, so ``mode: initial`` later streams on from there. Not
        in HA mode, where the election starts and stops destinations (``start`` says so)."""
        if self.ha is not None:
            return
        with self._lock:
            self._retire_finished()

    def _retire_finished(self) -> None:
        for name in list(self.workers):
            if self.config.destination(name).snapshot.mode != "initial_only":
                continue
            try:
                delivered = self.server.instance(name).snapshot_delivered()
            except UnknownDestination:
                continue
            if delivered:
                log.info(
                    "destination %s: snapshot delivered; stopping it (snapshot.mode initial_only)",
                    name,
                )
                self.stop_destination(name)

    def destination_ended(self, name: str) -> bool:
        worker = self.workers.get(name)
        return name in self.start_errors or (worker is not None and worker.join(0))

    def destination_error(self, name: str) -> BaseException | None:
        worker = self.workers.get(name)
        return self.start_errors.get(name) or (None if worker is None else worker.error)

    def alive(self) -> bool:
        """Something runs, or waits to be resumed."""
        if self.ha is not None:
            return self.ha.election.running
        return bool(self.paused) or any(not worker.join(0) for worker in self.workers.values())

    def failed(self) -> list[str]:
        failed = [name for name, worker in self.workers.items() if worker.error is not None]
        failed += [name for name in self.start_errors if name not in failed]
        if self.ha is not None:
            failed += [name for name in self.ha.election.failures if name not in failed]
        return failed

    def stop(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        if self.ha is not None:
            self.ha.stop()  # gives each destination up: worker, instance, running node
        deadline = time.monotonic() + timeout_s
        for worker in self.workers.values():
            worker.stop()
        for name, worker in self.workers.items():
            if not worker.join(max(0.1, deadline - time.monotonic())):
                log.error("MQ worker of %s did not stop within %.0fs", name, timeout_s)
        self.server.stop_all()
        self.stop_admin()

    def start_admin(self) -> None:
        """Serve metrics and probes on ``admin.listen`` (none when it is null); first, so that
        a taken port fails the run before any destination starts."""
        if self.config.admin.listen is None or self.admin is not None:
            return
        admin = AdminServer.for_bridge(self.config, RunnerObserver(self), control=self)
        admin.start()
        self.admin = admin

    def _cursor_of(self, destination: str) -> str | None:
        """The acked cursor for log records of ``destination`` (see bridge.logs)."""
        worker = self.workers.get(destination)
        if worker is None:
            return None
        cursor = worker.progress().cursor
        return None if cursor == "-" else cursor

    def stop_admin(self) -> None:
        if self.admin is not None:
            self.admin.stop()
            self.admin = None


def _at(position: EntryPosition | None) -> str:
    """A cursor for a log line."""
    if position is None:
        return "no stored cursor"
    if position.journal_name is not None:
        return f"{position.journal_name}:{position.position}"
    return f"GTID {position.gtid}"


def _why(name: str, change: ConfigChange) -> str:
    if name in change.removed:
        return "removed from the configuration"
    return "its configuration changed; it restarts from its cursor"
