"""Who is there: this process's ephemeral cluster nodes, and the cluster as ``status`` shows it.

A process registers as ``{root}/cluster/{address}`` (a live server) and, for each destination
of its config, as ``{root}/destinations/{d}/cluster/{address}`` (able to run it). The nodes
are ephemeral: they vanish with the session, and ``ensure()`` creates them again after kazoo
reconnects with a new session.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.exceptions import NodeExistsError, NoNodeError

from bridge.config import BridgeConfig, split_address
from bridge.ha.base import RunningInfo
from bridge.ha.paths import ZkLayout
from bridge.ha.session import ZkSession

log = logging.getLogger(__name__)

_WILDCARDS = ("0.0.0.0", "::", "")


def local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def node_address(config: BridgeConfig) -> str:
    """The ``ip:port`` this process registers as (canal's server address).

    1. ``zookeeper.address`` when set;
    2. else the admin listen address (unique per host: two processes cannot bind it), with a
       wildcard host replaced by this host's IP;
    3. else ``<host ip>:<pid>``: unique on the host, and it tells which process it is.
    """
    if config.zookeeper is not None and config.zookeeper.address:
        return config.zookeeper.address
    if config.admin.listen:
        host, port = split_address(config.admin.listen)
        if host in _WILDCARDS:
            host = local_ip()
        return f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    return f"{local_ip()}:{os.getpid()}"


class Registration:
    def __init__(
        self, session: ZkSession, layout: ZkLayout, address: str, destinations: Sequence[str]
    ) -> None:
        self._session = session
        self._layout = layout
        self.address = address
        self._paths = self._paths_of(destinations)
        self._warned: set[str] = set()

    def _paths_of(self, destinations: Sequence[str]) -> list[str]:
        return [self._layout.cluster_node(self.address)] + [
            self._layout.destination_cluster_node(d, self.address) for d in destinations
        ]

    def set_destinations(self, destinations: Sequence[str]) -> None:
        """Register for ``destinations`` from now on: the nodes of those left out are deleted
        at once; those of new ones are created by the next ``ensure``."""
        paths = self._paths_of(destinations)
        self._delete([path for path in self._paths if path not in paths])
        self._paths = paths

    def ensure(self) -> None:
        """Create the missing nodes; raises ``CoordinatorUnavailable`` if ZooKeeper fails."""
        client = self._session.client
        with self._session.errors("registering"):
            for path in self._paths:
                try:
                    client.create(path, b"", ephemeral=True, makepath=True)
                    self._warned.discard(path)
                except NodeExistsError:
                    self._check_owner(path)

    def _check_owner(self, path: str) -> None:
        try:
            _, stat = self._session.client.get(path)
        except NoNodeError:
            return  # gone meanwhile: the next round creates it
        if stat.ephemeralOwner != self._session.session_id and path not in self._warned:
            self._warned.add(path)
            log.warning(
                "%s is held by session 0x%x: another process registers as %s too (or our "
                "previous session has not expired yet); give each process its own "
                "zookeeper.address",
                path,
                stat.ephemeralOwner,
                self.address,
            )

    def remove(self) -> None:
        """Delete our nodes (best effort; closing the session removes them anyway)."""
        self._delete(self._paths)

    def _delete(self, paths: Sequence[str]) -> None:
        client = self._session.client
        for path in paths:
            try:
                _, stat = client.get(path)
                if stat.ephemeralOwner == self._session.session_id:
                    client.delete(path)
            except Exception as exc:  # closing the session cleans up anyway
                log.debug("could not remove %s: %s", path, exc)

    def live_servers(self) -> int:
        with self._session.errors("listing live servers"):
            try:
                return len(self._session.client.get_children(self._layout.cluster))
            except NoNodeError:
                return 0


@dataclass(frozen=True, slots=True)
class DestinationView:
    """One destination as ZooKeeper shows it: who runs it and who stands by."""

    destination: str
    running: RunningInfo | None
    members: tuple[str, ...]

    @property
    def standbys(self) -> tuple[str, ...]:
        active = self.running.address if self.running else None
        return tuple(m for m in self.members if m != active)


@dataclass(frozen=True, slots=True)
class ClusterView:
    servers: tuple[str, ...]
    destinations: tuple[DestinationView, ...]


def read_cluster(session: ZkSession, layout: ZkLayout, destinations: Sequence[str]) -> ClusterView:
    """What ``canal-bridge status`` prints in HA mode."""
    client = session.client

    def children(path: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(client.get_children(path)))
        except NoNodeError:
            return ()

    views = []
    with session.errors("reading the cluster"):
        servers = children(layout.cluster)
        for destination in destinations:
            try:
                data, _ = client.get(layout.running(destination))
                running: RunningInfo | None = RunningInfo.loads(data)
            except NoNodeError:
                running = None
            members = children(layout.destination_cluster(destination))
            views.append(DestinationView(destination, running, members))
    return ClusterView(servers, tuple(views))
