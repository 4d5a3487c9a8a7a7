"""The REST API's destination documents: ``/status``'s fields of each destination
(``destination_fields``) plus its rate of rows per second.

A rate needs two samples of the row count, so the API keeps the last sample of each
destination (``RowRates``) and answers the rate between it and the newest one. A restarted
destination's count starts again at 0: that sample starts over instead of answering a
negative rate.

The documents are kept fresh by a thread of their own while clients read them
(``RecentDocuments``), so that a read copies bytes on the event loop instead of computing:
with 100 busy destinations in one process, every thread handing a computed answer over waits
its turn for the interpreter behind theirs (bench/live_many.py measured a p95 of 301 ms and
answers of several seconds computing per request; docs/operations.md has the figures now).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bridge.admin.base import DestinationSnapshot
from bridge.admin.probes import Verdict
from bridge.admin.status_document import destination_fields

# How often the documents are computed while clients read them: the console polls once a
# second, and a write should show on it within two.
REFRESH_S = 0.5
# Documents older than this are computed for the read instead (the refresher fell behind).
STALE_AFTER_S = 2 * REFRESH_S
# The refresher computes only while someone read this recently: an idle bridge stays idle.
READ_RECENTLY_S = 10.0

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


Documents = list[dict[str, Any]]


class RecentDocuments:
    """The destinations' documents as of at most ``STALE_AFTER_S`` ago, refreshed by ``tick``
    (the admin server calls it every ``REFRESH_S`` on a thread of its own)."""

    def __init__(
        self, compute: Callable[[], Documents], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._compute = compute
        self._clock = clock
        self._kept: tuple[float, Documents] | None = None
        self._read_at: float | None = None

    def latest(self) -> Documents | None:
        """The kept documents, or None when there are none fresh enough: the caller computes
        them (``refresh``) off the event loop."""
        now = self._read_at = self._clock()
        kept = self._kept
        if kept is None or now - kept[0] > STALE_AFTER_S:
            return None
        return kept[1]

    def refresh(self) -> Documents:
        documents = self._compute()
        self._kept = (self._clock(), documents)
        return documents

    def forget(self) -> None:
        """Drop the kept documents: an action changed what they say."""
        self._kept = None

    def tick(self) -> None:
        read_at = self._read_at
        if read_at is not None and self._clock() - read_at < READ_RECENTLY_S:
            self.refresh()
