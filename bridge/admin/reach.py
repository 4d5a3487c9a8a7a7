"""Can this process reach its Kafka cluster? Asked every few seconds, whether or not there is
anything to send.

Why not the producer's own errors: librdkafka reports them (``error_cb``) only while the
producer is polled, and an idle destination's producer is not polled. With an unreachable
broker and nothing to send, ``run`` would print nothing for 45 s and ``/readyz`` say ready. A
metadata request is the first thing the producer itself would need, so "no metadata for
``grace_s``" is what readiness reports as ``kafka-unreachable``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bridge.config import KafkaConfig
from bridge.mq.exceptions import TopicLookupFailed
from bridge.mq.producer import TopicInspector

log = logging.getLogger(__name__)

# A metadata request every CHECK_INTERVAL_S, each waiting up to CHECK_TIMEOUT_S; unreachable
# once no request succeeded for GRACE_S (two to three failed requests: a broker restart or a
# leader move passes without a flap).
CHECK_INTERVAL_S = 5.0
CHECK_TIMEOUT_S = 5.0
GRACE_S = 15.0


class BrokerWatch:
    """Remembers when ``check`` (raises when the cluster does not answer) last succeeded.

    ``check_once`` runs one check and logs one line when the answer changes (WARNING when the
    cluster becomes unreachable, INFO when it answers again); ``unreachable`` is read by the
    probes. Thread-safe: the check runs on a ``Periodic`` thread, the probes on the HTTP one.
    """

    def __init__(
        self,
        check: Callable[[], None],
        *,
        what: str = "Kafka",
        grace_s: float = GRACE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self._check = check
        self._grace_s = grace_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_ok = clock()  # a fresh process gets the grace period to connect
        self._error = ""
        self._reported = False  # the last state change logged: unreachable

    def check_once(self) -> None:
        try:
            self._check()
        except Exception as exc:
            error = exc.reason if isinstance(exc, TopicLookupFailed) else str(exc)
            with self._lock:
                self._error = error or type(exc).__name__
        else:
            with self._lock:
                self._last_ok, self._error = self._clock(), ""
        self._log_change()

    def unreachable(self) -> str | None:
        """None while the cluster answered within the grace period; else why, in one line."""
        with self._lock:
            silent_s = self._clock() - self._last_ok
            if not self._error or silent_s < self._grace_s:
                return None
            return f"no {self.what} metadata for {silent_s:.0f} s ({self._error})"

    def _log_change(self) -> None:
        reason = self.unreachable()
        if reason is not None and not self._reported:
            self._reported = True
            log.warning("%s unreachable: %s; destinations report not ready", self.what, reason)
        elif reason is None and self._reported and not self._error:
            self._reported = False
            log.info("%s answers again", self.what)


def kafka_check(config: KafkaConfig, topic: str) -> Callable[[], None]:
    """A check that asks the cluster for its topics (``topic``'s partitions among them), as
    ``canal-bridge check`` does; raises ``TopicLookupFailed`` when no broker answers."""
    inspector = TopicInspector(config, timeout_s=CHECK_TIMEOUT_S)

    def check() -> None:
        inspector.partitions_of(topic)

    return check
