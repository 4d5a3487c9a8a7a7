"""The REST API's destination documents: ``/status``'s fields of each destination
(``destination_fields``) plus its rate of rows per second.

A rate needs two samples of the row count, so the API keeps the last sample of each
destination (``RowRates``) and answers the rate between it and the newest one. A restarted
destination's count starts again at 0: that sample starts over instead of answering a
negative rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bridge.admin.base import DestinationSnapshot
from bridge.admin.probes import Verdict
from bridge.admin.status_document import destination_fields

# Samples closer together than this keep the previous rate (many clients polling at once
# would otherwise measure a few milliseconds and answer noise).
MIN_SAMPLE_INTERVAL_S = 0.5


class RowRates:
    """Rows per second of each destination over the last sampling interval; shared by the
    server's worker threads, hence the lock."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        min_interval_s: float = MIN_SAMPLE_INTERVAL_S,
    ) -> None:
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._samples: dict[str, tuple[float, int]] = {}
        self._rates: dict[str, float] = {}

    def rate(self, destination: str, rows: int) -> float | None:
        """The rate with ``rows`` as the newest count; None until two samples are apart."""
        now = self._clock()
        with self._lock:
            previous = self._samples.get(destination)
            if previous is None or rows < previous[1]:
                self._samples[destination] = (now, rows)
                self._rates.pop(destination, None)
                return None
            since, counted = previous
            if now - since >= self._min_interval_s:
                self._rates[destination] = (rows - counted) / (now - since)
                self._samples[destination] = (now, rows)
            return self._rates.get(destination)

    def keep_only(self, destinations: set[str]) -> None:
        """Forget destinations no longer configured (a reload removed them)."""
        with self._lock:
            for gone in self._samples.keys() - destinations:
                del self._samples[gone]
                self._rates.pop(gone, None)


def destination_documents(
    snapshots: Sequence[DestinationSnapshot], verdicts: Sequence[Verdict], rates: RowRates
) -> list[dict[str, Any]]:
    """Every destination's document, in configuration order."""
    by_name = {v.destination: v for v in verdicts}
    documents = []
    for snapshot in snapshots:
        document = destination_fields(snapshot, by_name.get(snapshot.destination))
        rate = rates.rate(snapshot.destination, document["rows"])
        document["rows_per_s"] = None if rate is None else round(rate, 1)
        documents.append(document)
    rates.keep_only({s.destination for s in snapshots})
    return documents
