"""HA with ZooKeeper (canal's ServerRunningMonitor): registration, election, fencing."""

from bridge.ha.base import DestinationHost, Fence, RunningInfo
from bridge.ha.election import Election
from bridge.ha.exceptions import CoordinatorUnavailable, FencedOut, HaError
from bridge.ha.fencing import HEADER_NODE, FencedOutlets, FencedSender, FencedService, ZkFence
from bridge.ha.node import HaNode
from bridge.ha.paths import ZkLayout
from bridge.ha.registration import (
    ClusterView,
    DestinationView,
    Registration,
    node_address,
    read_cluster,
)
from bridge.ha.session import ZkSession

__all__ = [
    "HEADER_NODE",
    "ClusterView",
    "CoordinatorUnavailable",
    "DestinationHost",
    "DestinationView",
    "Election",
    "Fence",
    "FencedOut",
    "FencedOutlets",
    "FencedSender",
    "FencedService",
    "HaError",
    "HaNode",
    "Registration",
    "RunningInfo",
    "ZkFence",
    "ZkLayout",
    "ZkSession",
    "node_address",
    "read_cluster",
]
