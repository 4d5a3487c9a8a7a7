"""``/healthz`` and ``/readyz``: status words only, never data, addresses or error messages.

* Health (liveness): the process answers and no MQ worker loop is wedged, i.e. every running
  worker came round within ``wedge_after_s`` (a get returns within its timeout, a send within
  the producer's message timeout plus a grace, a back-off within ``backoff_max_s``). A failed
  destination is not a health problem (restarting the process would not fix its cause); it
  shows in readiness and in the log.
* Readiness: every destination is ``ready`` (running and making progress: the parser saw a new
  event or heartbeat, or the worker acked a batch, within the destination's stale window) or a
  healthy ``standby``. Otherwise its word says why: ``starting`` (nothing read from the source
  yet: connecting), ``source-unreachable`` (the binlog reader failed to connect or read and is
  retrying after a back-off, nothing read since: at start, or after its reader process
  failed), ``stalled`` (no progress within the window: the source went away while reading,
  or the store is full while Kafka refuses), ``kafka-unreachable`` (no Kafka metadata for the
  broker watch's grace period, even with nothing to send), ``failed`` or ``stopped``.

Each word comes with a one-line reason (``Verdict``) for ``/status`` and the log; neither
holds row data. ``ReadinessLog`` logs one line per destination whenever its word changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge.admin.base import DestinationSnapshot, Observed, Reachability

log = logging.getLogger(__name__)

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


@dataclass(frozen=True, slots=True)
class Verdict:
    """One destination's readiness: its status word and why, in one line ("" when ready)."""

    destination: str
    word: str
    reason: str = ""

    @property
    def ready(self) -> bool:
        return self.word in READY_WORDS


READY_WORDS = frozenset({"ready", "standby"})

_STATE_REASONS = {
    "starting": "not started yet",
    "standby": "another process runs it (HA)",
    "paused": "paused by an operator; resume it from the console or the API",
    "stopped": "stopped",
    "failed": "stopped on an error (see the log)",
}


class Probes:
    def __init__(
        self,
        observed: Observed,
        *,
        broker: Reachability | None = None,
        wedge_after_s: float = DEFAULT_WEDGE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._observed = observed
        self._broker = broker
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
        verdicts = self.verdicts()
        details = tuple((v.destination, v.word) for v in verdicts)
        return ProbeResult(all(v.ready for v in verdicts), details)

    def verdicts(self) -> list[Verdict]:
        """Every destination's readiness, in configuration order."""
        broker_down = self._broker.unreachable() if self._broker is not None else None
        return [self._verdict(s, broker_down) for s in self._observed.snapshots()]

    def _verdict(self, snapshot: DestinationSnapshot, broker_down: str | None) -> Verdict:
        name = snapshot.destination
        if snapshot.state != "running":
            return Verdict(name, snapshot.state, _STATE_REASONS[snapshot.state])
        if broker_down is not None:
            return Verdict(name, "kafka-unreachable", broker_down)
        if snapshot.source_trouble is not None:
            return Verdict(
                name,
                "source-unreachable",
                f"the binlog reader is retrying after: {snapshot.source_trouble}",
            )
        if not snapshot.source_event_ms:
            return Verdict(name, "starting", "nothing read from the source yet (connecting)")
        acked = snapshot.progress.batches_acked if snapshot.progress is not None else 0
        idle_s = self._idle_s(name, (snapshot.source_event_ms, acked))
        if idle_s <= snapshot.stale_after_s:
            return Verdict(name, "ready")
        return Verdict(
            name,
            "stalled",
            f"no binlog event, heartbeat or ack for {idle_s:.0f} s (source unreachable, or "
            "the store full while Kafka refuses)",
        )

    def _idle_s(self, destination: str, marker: tuple[int, int]) -> float:
        """Seconds since ``marker`` last changed (as seen by the probes and scrapes so far)."""
        now = self._clock()
        with self._lock:
            previous = self._marks.get(destination)
            if previous is None or previous[0] != marker:
                self._marks[destination] = (marker, now)
                return 0.0
            return now - previous[1]


class ReadinessLog:
    """Logs one line per destination each time its readiness word changes (``tick``, called
    every few seconds by a ``Periodic``): not ready with the reason at WARNING, ready again
    at INFO. Probes alone would say it only to whoever asks."""

    def __init__(self, probes: Probes) -> None:
        self._probes = probes
        self._words: dict[str, str] = {}

    def tick(self) -> None:
        for verdict in self._probes.verdicts():
            name = verdict.destination
            if self._words.get(name) == verdict.word:
                continue
            first = name not in self._words
            self._words[name] = verdict.word
            if verdict.ready:
                if not first or verdict.word == "ready":
                    log.info("destination %s %s", name, verdict.word, extra={"destination": name})
            elif not (first and verdict.word == "starting"):
                log.warning(
                    "destination %s not ready: %s (%s)",
                    name,
                    verdict.word,
                    verdict.reason,
                    extra={"destination": name},
                )
