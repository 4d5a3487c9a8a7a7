"""canal's ZooKeeper layout (``ZookeeperPathUtils``), below a configurable root::

{root}/cluster/{address}                              ephemeral: live servers
{root}/destinations/{dest}/cluster/{address}          ephemeral: servers able to run dest
{root}/destinations/{dest}/running                    ephemeral: the active server
{root}/destinations/{dest}/{client_id}/running        ephemeral: the active client
{root}/destinations/{dest}/{client_id}/cursor         persistent: acked position (JSON)
{root}/destinations/{dest}/snapshot-requests/req-N    persistent sequential: an on-demand
                                                      snapshot request (canal-bridge's own;
                                                      canal reads only numeric children)
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ROOT = "/otter/canal"


@dataclass(frozen=True, slots=True)
class ZkLayout:
    root: str = DEFAULT_ROOT

    @property
    def cluster(self) -> str:
        return f"{self.root}/cluster"

    def cluster_node(self, address: str) -> str:
        return f"{self.cluster}/{address}"

    @property
    def destinations(self) -> str:
        return f"{self.root}/destinations"

    def destination(self, destination: str) -> str:
        return f"{self.destinations}/{destination}"

    def destination_cluster(self, destination: str) -> str:
        return f"{self.destination(destination)}/cluster"

    def destination_cluster_node(self, destination: str, address: str) -> str:
        return f"{self.destination_cluster(destination)}/{address}"

    def running(self, destination: str) -> str:
        return f"{self.destination(destination)}/running"

    def client(self, destination: str, client_id: int) -> str:
        return f"{self.destination(destination)}/{client_id}"

    def client_running(self, destination: str, client_id: int) -> str:
        return f"{self.client(destination, client_id)}/running"

    def cursor(self, destination: str, client_id: int) -> str:
        return f"{self.client(destination, client_id)}/cursor"

    def filter(self, destination: str, client_id: int) -> str:
        return f"{self.client(destination, client_id)}/filter"

    def snapshot_requests(self, destination: str) -> str:
        return f"{self.destination(destination)}/snapshot-requests"

    def snapshot_request_prefix(self, destination: str) -> str:
        """What a new request node's path starts with (ZooKeeper appends the sequence)."""
        return f"{self.snapshot_requests(destination)}/req-"
