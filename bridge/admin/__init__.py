"""The admin endpoint: Prometheus metrics, health/readiness probes, status, the REST API and
the web console over HTTP(S).

``AdminServer`` serves what an ``Observed`` (the runner, through ``RunnerObserver``) reports,
and the operator's actions of a ``DestinationControl`` (``RestApi``, ``WebConsole``);
``BrokerWatch`` tells readiness whether Kafka answers; ``requires_token`` guards details and
control actions; ``set_ha_role`` is how ``bridge.ha`` tells it which destinations this process
runs.
"""

from bridge.admin.api import RestApi
from bridge.admin.auth import BearerToken, requires_token, same_site_json
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
from bridge.admin.control import DestinationControl, SnapshotControl
from bridge.admin.exceptions import AdminError, AdminListenFailed, AdminSetupFailed
from bridge.admin.http_server import AdminServer, ServerLimits
from bridge.admin.metrics import BridgeCollector, build_registry
from bridge.admin.observe import RunnerObserver
from bridge.admin.probes import ProbeResult, Probes, ReadinessLog, Verdict
from bridge.admin.reach import BrokerWatch
from bridge.admin.roles import HA_ROLES, HaRoles, set_ha_role
from bridge.admin.web_console import WebConsole

__all__ = [
    "HA_ROLES",
    "AdminError",
    "AdminListenFailed",
    "AdminServer",
    "AdminSetupFailed",
    "BearerToken",
    "BridgeCollector",
    "BrokerWatch",
    "DestinationControl",
    "DestinationSnapshot",
    "DestinationState",
    "HaRoles",
    "Observed",
    "ProbeResult",
    "Probes",
    "Reachability",
    "ReadinessLog",
    "RestApi",
    "Role",
    "RunnerObserver",
    "SchemaUsage",
    "ServerLimits",
    "SnapshotControl",
    "SnapshotUsage",
    "StoreUsage",
    "Verdict",
    "WebConsole",
    "build_registry",
    "requires_token",
    "same_site_json",
    "set_ha_role",
]
