"""``/healthz`` and ``/readyz``: status words only, never data, addresses or error messages.

* Health (liveness): the process answers and no MQ worker loop is wedged, i.e. every running
  worker came round within ``wedge_after_s`` (a get returns within its timeout, a send within
  the producer's message timeout plus a grace, a back-off within ``backoff_max_s``). A failed
  destination is not a health problem (restarting the process would not fix its cause); it
  shows in readiness and in the log.
* Readiness: every destination is ``ready`` (running and making progress: the parser saw a new
  event or heartbeat, or the worker acked a batch, within the destination's stale window) or a
  healthy ``standby``. Otherwise its word says why: ``starting`` (nothing read from the source
  yet: connecting, source unreachable), ``stalled`` (no progress within the window: the source
  went away, or the store is full while Kafka refuses), ``failed`` or ``stopped``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge.admin.base import DestinationSnapshot, Observed

# Longer than the longest legitimate pause of a worker loop with default settings: a send
# (30 s message timeout + 5 s grace) followed by the longest back-off (30 s).
DEFAULT_WEDGE_AFTER_S = 120.0


@dataclass(frozen=True, slots=True)
class ProbeResult:
    ok: bool
    # (destination, status word) in configuration order.
    details: tuple[tuple[str, str], ...]

    def body(self) -> str:
        head = "ok" if self.ok else "not ok"
        return "\n".join([head, *(f"{name} {word}" for name, word in self.details)]) + "\n"


class Probes:
    def __init__(
        self,
        observed: Observed,
        *,
        wedge_after_s: float = DEFAULT_WEDGE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._observed = observed
        self._wedge_after_s = wedge_after_s
        self._clock = clock
        self._lock = threading.Lock()
        # destination -> (progress marker, when it last changed)
        self._marks: dict[str, tuple[tuple[int, int], float]] = {}

    def health(self) -> ProbeResult:
        details = []
        for snapshot in self._observed.snapshots():
            age = snapshot.beat_age_s
            wedged = snapshot.state == "running" and age is not None and age > self._wedge_after_s
            details.append((snapshot.destination, "wedged" if wedged else "ok"))
        return ProbeResult(all(word == "ok" for _, word in details), tuple(details))

    def readiness(self) -> ProbeResult:
        details = [(s.destination, self._ready_word(s)) for s in self._observed.snapshots()]
        ok = all(word in ("ready", "standby") for _, word in details)
        return ProbeResult(ok, tuple(details))

    def _ready_word(self, snapshot: DestinationSnapshot) -> str:
        if snapshot.state != "running":
            return snapshot.state
        if not snapshot.source_event_ms:
            return "starting"
        acked = snapshot.progress.batches_acked if snapshot.progress is not None else 0
        idle_s = self._idle_s(snapshot.destination, (snapshot.source_event_ms, acked))
        return "ready" if idle_s <= snapshot.stale_after_s else "stalled"

    def _idle_s(self, destination: str, marker: tuple[int, int]) -> float:
        """Seconds since ``marker`` last changed (as seen by the probes and scrapes so far)."""
        now = self._clock()
        with self._lock:
            previous = self._marks.get(destination)
            if previous is None or previous[0] != marker:
                self._marks[destination] = (marker, now)
                return 0.0
            return now - previous[1]
