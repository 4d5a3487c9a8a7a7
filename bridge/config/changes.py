"""What a new configuration changes against the running one, destination by destination.

A running ``canal-bridge run`` applies a new file (edited in place, SIGHUP, or the admin API)
destination by destination: an added destination starts, a removed one stops, a changed one
restarts alone from its cursor, the others never pause. The sections every destination shares
(``kafka``, ``meta``, ``admin``, ``zookeeper``, ``broker``) are built once at start, so a new
value there cannot be applied to a running process: such a file is refused as a whole, with
one line per section, and what runs stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.config.loading import InvalidConfig
from bridge.config.models import BridgeConfig

# The sections built once per process; a change needs a restart.
PROCESS_SECTIONS = ("broker", "kafka", "meta", "admin", "zookeeper")


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """Destination names, in the new file's order (``removed`` in the old file's)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def describe(self) -> str:
        """One line for the log: ``added a, b; removed c; changed d`` or ``no change``."""
        parts = [
            f"{verb} {', '.join(names)}"
            for verb, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("changed", self.changed),
            )
            if names
        ]
        return "; ".join(parts) if parts else "no change"


def config_change(running: BridgeConfig, new: BridgeConfig, source: str) -> ConfigChange:
    """How ``new`` differs from ``running``; ``InvalidConfig`` (named after ``source``) when a
    section shared by every destination differs, since that needs a restart."""
    problems = [
        f"{section}: changed; a running canal-bridge applies changes to destinations only: "
        f"restart it to apply a new {section} section, or undo the change"
        for section in PROCESS_SECTIONS
        if getattr(running, section) != getattr(new, section)
    ]
    if problems:
        raise InvalidConfig(source, problems)
    old = {d.name: d for d in running.destinations}
    names = [d.name for d in new.destinations]
    return ConfigChange(
        added=tuple(n for n in names if n not in old),
        removed=tuple(n for n in old if n not in set(names)),
        changed=tuple(n for n in names if n in old and old[n] != new.destination(n)),
        unchanged=tuple(n for n in names if n in old and old[n] == new.destination(n)),
    )
