"""Per-system results of bench/compare and the table they are printed and recorded as (pure)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Round:
    """One system's run over the workload's binlog range."""

    rows: int  # counted in its topic
    span_s: float  # broker append time of the first record -> of the last
    cpu_s: float  # all its processes, spawn to the last row read back (start-up included)
    stream_cpu_s: float  # the same from when its first record was read back
    peak_rss_mb: float

    @property
    def rows_per_s(self) -> float:
        # One record (or all in one millisecond): no measurable span.
        return self.rows / self.span_s if self.span_s > 0 else float("inf")


@dataclass(frozen=True)
class Summary:
    system: str
    rows: int
    rows_per_s: float
    cpu_per_m: float  # CPU s per million rows, whole run
    stream_cpu_per_m: float
    peak_rss_mb: float
    cannot_run: str | None = None  # why the system could not run; no figures then


def cannot_run(system: str, why: str) -> Summary:
    """The summary of a system that could not run the workload: ``why`` instead of figures."""
    return Summary(system, 0, 0.0, 0.0, 0.0, 0.0, cannot_run=why)


def summarize(system: str, rounds: list[Round]) -> Summary:
    """Medians over the rounds (each round's rows are checked equal by the caller)."""
    return Summary(
        system=system,
        rows=rounds[0].rows,
        rows_per_s=statistics.median(r.rows_per_s for r in rounds),
        cpu_per_m=statistics.median(r.cpu_s / r.rows * 1e6 for r in rounds),
        stream_cpu_per_m=statistics.median(r.stream_cpu_s / r.rows * 1e6 for r in rounds),
        peak_rss_mb=statistics.median(r.peak_rss_mb for r in rounds),
    )


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs else "-"


def table(summaries: list[Summary], reference: str = "canal-bridge") -> list[str]:
    """A Markdown table, one line per system; the ratio columns are ``reference`` ÷ the
    system (rows/s: above 1 means the reference is faster; CPU and RSS: below 1 means it
    uses less). Without the reference among the systems the ratio columns show '-'."""
    base = next((s for s in summaries if s.system == reference), None)
    lines = [
        f"| system | rows | rows/s | CPU s / M rows (from first record) | peak RSS MB "
        f"| {reference} ÷ it: rows/s | CPU | RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        if s.cannot_run is not None:
            lines.append(f"| {s.system} | cannot run: {s.cannot_run} | - | - | - | - | - | - |")
            continue
        ratios = (
            [
                _ratio(base.rows_per_s, s.rows_per_s),
                _ratio(base.cpu_per_m, s.cpu_per_m),
                _ratio(base.peak_rss_mb, s.peak_rss_mb),
            ]
            if base is not None
            else ["-", "-", "-"]
        )
        lines.append(
            f"| {s.system} | {s.rows:,} | {s.rows_per_s:,.0f} "
            f"| {s.cpu_per_m:.1f} ({s.stream_cpu_per_m:.1f}) | {s.peak_rss_mb:.0f} "
            f"| {' | '.join(ratios)} |"
        )
    return lines
