"""This process as a member of the HA cluster: one ZooKeeper session, the fence, the election,
and the fenced parts a destination is built from while this process owns it."""

from __future__ import annotations

import logging
import os

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from bridge.config import BridgeConfig
from bridge.exceptions import BridgeError
from bridge.ha.base import DestinationHost, RunningInfo
from bridge.ha.election import Election, RoleListener
from bridge.ha.fencing import FencedOutlets, ZkFence
from bridge.ha.paths import ZkLayout
from bridge.ha.registration import node_address
from bridge.ha.session import ZkSession
from bridge.ha.snapshot_requests import SnapshotPerformer, SnapshotRequestWatcher
from bridge.meta import MetaManager, StoreContext, build_meta_manager
from bridge.schema.store import HistoryStore, history_store
from bridge.schema.zookeeper_store import ZooKeeperHistoryStore

log = logging.getLogger(__name__)


class HaNode:
    def __init__(
        self,
        config: BridgeConfig,
        host: DestinationHost,
        on_role: RoleListener | None = None,
        snapshots: SnapshotPerformer | None = None,
    ) -> None:
        """``snapshots``: performs the on-demand snapshot requests of the destinations this
        process runs (``bridge.ha.snapshot_requests``); None: they wait for another process."""
        if config.zookeeper is None:
            raise ValueError("HA needs the zookeeper section")
        self.config = config
        self.zookeeper = config.zookeeper
        self.layout = ZkLayout(self.zookeeper.root)
        self.session = ZkSession(self.zookeeper.hosts, self.zookeeper.session_timeout_ms)
        self.fence = ZkFence(self.session, self.layout)
        self.info = RunningInfo(node_address(config), os.getpid())
        # What a destination's worker is wrapped in while this process owns it.
        self.outlets = FencedOutlets(self.fence, self.info.address)
        self.election = Election(
            self.session,
            self.layout,
            self.info,
            [d.name for d in config.destinations],
            host=host,
            fence=self.fence,
            on_role=on_role,
        )
        self.snapshot_requests = (
            None
            if snapshots is None
            else SnapshotRequestWatcher(self.session, self.layout, self.election.active, snapshots)
        )

    def start(self) -> None:
        if self.config.meta.store == "file":
            log.warning(
                "HA with meta.store file: a standby on another host cannot read this host's "
                "cursors; use meta.store zookeeper unless %s is shared",
                self.config.meta.dir,
            )
        self.session.start()
        try:
            self.election.start()
        except BaseException:
            self.session.stop()
            raise
        if self.snapshot_requests is not None:
            self.snapshot_requests.start()
        log.info(
            "HA on: registered as %s below %s; racing for %d destination(s)",
            self.info.address,
            self.layout.root,
            len(self.election.destinations),
        )

    def stop(self) -> None:
        if self.snapshot_requests is not None:
            self.snapshot_requests.stop()
        try:
            self.election.stop()
        finally:
            self.session.stop()

    def meta_manager(self) -> MetaManager:
        """The meta manager of one destination's instance; with ``meta.store: zookeeper`` it
        uses this process's session and writes cursors only while the fence holds."""
        context = StoreContext(self.session.client, self.layout.root, may_write=self.fence.holds)
        return build_meta_manager(self.config.meta, context)

    def history_store(self, destination: str) -> HistoryStore | None:
        """Where the destination's schema history is kept: with ``meta.store: zookeeper``
        beside its cursor in ZooKeeper (so a take-over decodes with it), written only while
        the fence holds; else as without HA (``bridge.schema.store.history_store``)."""
        if self.config.meta.store != "zookeeper":
            return history_store(self.config, destination)
        return ZooKeeperHistoryStore(
            self.session.client,
            f"{self.layout.destination(destination)}/schema",
            may_write=lambda: self.fence.holds(destination),
        )

    def owner_of(self, destination: str) -> str | None:
        """The address of the process running ``destination`` now, if any (and readable)."""
        try:
            data, _ = self.session.client.get(self.layout.running(destination))
            return RunningInfo.loads(data).address
        except (KazooException, KazooTimeoutError, BridgeError):  # no node, no session, ...
            return None
