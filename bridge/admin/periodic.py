"""A function called every few seconds on a daemon thread of its own, until stopped.

The admin endpoint's watchers (the Kafka reachability check, the readiness log) must run
whether or not anyone scrapes or probes: a broker outage with nothing to send, or a destination
turning not ready, has to reach the log by itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """Calls ``tick`` now and then every ``interval_s`` (after it returns) until ``stop()``.

    An exception in ``tick`` is logged in one line (type and message, no traceback) and the
    next tick comes as usual: a watcher must not die of one bad answer.
    """

    def __init__(self, name: str, interval_s: float, tick: Callable[[], None]) -> None:
        self.name = name
        self._interval_s = interval_s
        self._tick = tick
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"{self.name} already started")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._tick()
            except Exception as exc:
                log.warning("%s: %s: %s", self.name, type(exc).__name__, exc)
            self._stopping.wait(self._interval_s)
