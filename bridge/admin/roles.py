"""The HA role of each destination, as the metrics and the readiness probe report it.

``bridge.ha`` calls ``set_ha_role(destination, "active" | "standby")`` whenever it wins or
gives up a destination's running node; a destination never set is active (no HA configured).
"""

from __future__ import annotations

import threading

from bridge.admin.base import Role


class HaRoles:
    def __init__(self) -> None:
        self._roles: dict[str, Role] = {}
        self._lock = threading.Lock()

    def set(self, destination: str, role: Role) -> None:
        if role not in ("active", "standby"):
            raise ValueError(f"role must be active or standby, not {role!r}")
        with self._lock:
            self._roles[destination] = role

    def get(self, destination: str) -> Role:
        with self._lock:
            return self._roles.get(destination, "active")

    def clear(self, destination: str | None = None) -> None:
        """Forget one destination's role (or all): it reads as active again."""
        with self._lock:
            if destination is None:
                self._roles.clear()
            else:
                self._roles.pop(destination, None)


# The process-wide board the runner's observer reads and bridge.ha writes.
HA_ROLES = HaRoles()


def set_ha_role(destination: str, role: Role) -> None:
    """Record that this process is ``active`` for ``destination`` or stands ``standby``."""
    HA_ROLES.set(destination, role)
