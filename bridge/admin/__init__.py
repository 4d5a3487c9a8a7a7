"""The admin endpoint: Prometheus metrics and health/readiness probes over HTTP.

``AdminServer`` serves what an ``Observed`` (the runner, through ``RunnerObserver``) reports;
``set_ha_role`` is how ``bridge.ha`` tells it which destinations this process runs.
"""

from bridge.admin.base import DestinationSnapshot, DestinationState, Observed, Role, StoreUsage
from bridge.admin.exceptions import AdminError, AdminListenFailed
from bridge.admin.metrics import BridgeCollector, build_registry
from bridge.admin.observe import RunnerObserver
from bridge.admin.probes import ProbeResult, Probes
from bridge.admin.roles import HA_ROLES, HaRoles, set_ha_role
from bridge.admin.server import AdminServer

__all__ = [
    "HA_ROLES",
    "AdminError",
    "AdminListenFailed",
    "AdminServer",
    "BridgeCollector",
    "DestinationSnapshot",
    "DestinationState",
    "HaRoles",
    "Observed",
    "ProbeResult",
    "Probes",
    "Role",
    "RunnerObserver",
    "StoreUsage",
    "build_registry",
    "set_ha_role",
]
