"""The admin endpoint: Prometheus metrics, health/readiness probes and status over HTTP(S).

``AdminServer`` serves what an ``Observed`` (the runner, through ``RunnerObserver``) reports;
``BrokerWatch`` tells readiness whether Kafka answers; ``requires_token`` guards details and
control actions; ``set_ha_role`` is how ``bridge.ha`` tells it which destinations this process
runs.
"""

from bridge.admin.auth import BearerToken, requires_token
from bridge.admin.base import (
    DestinationSnapshot,
    DestinationState,
    Observed,
    Reachability,
    Role,
    SchemaUsage,
    SnapshotUsage,
    StoreUsage,
)
from bridge.admin.exceptions import AdminError, AdminListenFailed, AdminSetupFailed
from bridge.admin.http_server import AdminServer, ServerLimits
from bridge.admin.metrics import BridgeCollector, build_registry
from bridge.admin.observe import RunnerObserver
from bridge.admin.probes import ProbeResult, Probes, ReadinessLog, Verdict
from bridge.admin.reach import BrokerWatch
from bridge.admin.roles import HA_ROLES, HaRoles, set_ha_role

__all__ = [
    "HA_ROLES",
    "AdminError",
    "AdminListenFailed",
    "AdminServer",
    "AdminSetupFailed",
    "BearerToken",
    "BridgeCollector",
    "BrokerWatch",
    "DestinationSnapshot",
    "DestinationState",
    "HaRoles",
    "Observed",
    "ProbeResult",
    "Probes",
    "Reachability",
    "ReadinessLog",
    "Role",
    "RunnerObserver",
    "SchemaUsage",
    "ServerLimits",
    "SnapshotUsage",
    "StoreUsage",
    "Verdict",
    "build_registry",
    "requires_token",
    "set_ha_role",
]
