"""One log line per micro-batch: offsets done of offsets to go, changes per second, ETA.

``ProgressLog.update(query)`` is called while a query runs (``stream.run_query`` polls it);
it logs each new batch once, from Spark's own progress report: the Kafka source's start, end
and latest offsets summed over partitions (the records a batch read are the offsets it
advanced) and the batch's duration. "Done" counts
from where this run started; "to go" is what the topics hold beyond the batch's end offsets,
and the ETA divides it by the rate since this run's first batch.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from pyspark.sql.streaming.listener import StreamingQueryProgress
from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("spark_jobs.progress")


def offset_total(text: str | None) -> int | None:
    """The sum of the partitions' offsets in a Kafka source offset (``{"t": {"0": 5}}``);
    None when there is none (the first batch's start, a source that is not Kafka)."""
    if not text or text == "null":
        return None
    try:
        offsets = json.loads(text)
    except ValueError:
        return None
    if not isinstance(offsets, dict):
        return None
    return sum(
        int(o)
        for partitions in offsets.values()
        if isinstance(partitions, dict)
        for o in partitions.values()
    )


@dataclass(frozen=True, slots=True)
class BatchLine:
    batch_id: int
    records: int
    duration_s: float
    done: int | None
    to_go: int | None
    rate_since_start: float | None

    def text(self) -> str:
        rate = self.records / self.duration_s if self.duration_s > 0 else 0.0
        parts = [f"batch {self.batch_id}: {self.records:,} records in {self.duration_s:.1f} s "]
        parts.append(f"({rate:,.0f}/s)")
        if self.done is not None and self.to_go is not None:
            parts.append(f"; offsets {self.done:,} done, {self.to_go:,} to go")
        if self.rate_since_start:
            parts.append(f"; {self.rate_since_start:,.0f}/s since start")
            if self.to_go:
                parts.append(f", ETA {_duration(self.to_go / self.rate_since_start)}")
        return "".join(parts)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class ProgressLog:
    """Logs each batch of one query once; ``lines`` keeps what was logged."""

    def __init__(self) -> None:
        self._last_batch: int | None = None
        self._first_start: int | None = None
        self._started = time.monotonic()
        self._records = 0
        self.lines: list[BatchLine] = []

    def update(self, query: StreamingQuery) -> BatchLine | None:
        progress = query.lastProgress
        if progress is None or progress.batchId == self._last_batch:
            return None
        self._last_batch = progress.batchId
        if progress.numInputRows == 0 and self.lines:
            return None  # an idle trigger: nothing new to say
        line = self._line(progress)
        self.lines.append(line)
        log.info("%s", line.text())
        return line

    def _line(self, progress: StreamingQueryProgress) -> BatchLine:
        start = end = latest = None
        if progress.sources:
            source = progress.sources[0]
            start, end = offset_total(source.startOffset), offset_total(source.endOffset)
            latest = offset_total(source.latestOffset)
        if self._first_start is None:
            self._first_start = start if start is not None else 0
            duration = progress.batchDuration / 1000
            self._started = time.monotonic() - duration
        # The offsets the batch advanced, not numInputRows: a plan that scans its source twice
        # (the changelog's union of row changes and DDL) counts every record twice there.
        if end is not None:
            records = end - (start if start is not None else self._first_start)
        else:
            records = progress.numInputRows
        self._records += records
        elapsed = time.monotonic() - self._started
        return BatchLine(
            batch_id=progress.batchId,
            records=records,
            duration_s=progress.batchDuration / 1000,
            done=end - self._first_start if end is not None else None,
            to_go=max(0, latest - end) if latest is not None and end is not None else None,
            rate_since_start=self._records / elapsed if elapsed > 0 else None,
        )
