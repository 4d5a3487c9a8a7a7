"""Tables a destination's filter newly selects (docs/snapshots.md, "Tables newly selected by
the filter").

A widened ``filter`` makes the sink stream the new tables' changes, but their existing rows
were never read. The cursor's snapshot progress records the filter the destination covers
(``FilterCoverage``); at a start whose filter differs, the existing base tables the current
filter selects and the recorded one did not are snapshotted like an on-demand request, while
the stream goes on. Tables the recorded filter already selected are never read again (their
rows were streamed or snapshotted); tables the filter no longer selects leave the plan (the
sink drops their changes already). This module is the pure part: the comparison and the plan.

The comparison uses the sink's ``TableFilter`` for both filters, so a name is "selected"
exactly when the stream would send its rows (anchored regexes, case-insensitive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from bridge.config import DestinationConfig
from bridge.position import FilterCoverage, SnapshotProgress, TableProgress
from bridge.sink.filters import TableFilter
from bridge.snapshot.planner import selected_tables

log = logging.getLogger(__name__)

# Table names a log line lists before it says how many more there are.
NAMES_LOGGED = 50


def coverage_of(config: DestinationConfig) -> FilterCoverage:
    """The filter ``config`` streams, as a cursor records it."""
    return FilterCoverage(config.filter.regex, config.filter.black_regex)


@dataclass(frozen=True, slots=True)
class CoverageChange:
    """What a start finds against the coverage its cursor records: ``recorded`` (None in a
    cursor written before coverage was recorded) and the existing tables to backfill."""

    recorded: FilterCoverage | None
    tables: tuple[str, ...] = ()


def newly_selected(
    config: DestinationConfig, recorded: FilterCoverage, names: list[tuple[str, str]]
) -> list[str]:
    """``schema.table`` of each of ``names`` the destination's filter (narrowed by
    ``snapshot.tables``, as any automatic snapshot) selects and ``recorded`` did not, sorted."""
    before = TableFilter(recorded.regex, recorded.black_regex)
    return [name for name in selected_tables(config, names) if not before.accepts_name(name)]


def coverage_change(
    config: DestinationConfig,
    saved: SnapshotProgress | None,
    names: Callable[[], list[tuple[str, str]]],
) -> CoverageChange | None:
    """None when the cursor's ``saved`` progress covers the current filter; else what
    changed. ``names`` lists the source's base tables, asked only when a wider filter with
    ``snapshot.backfill`` on needs them. An older cursor (no coverage) backfills nothing: what
    its filter was is unknown, so every table would have to be read again."""
    current = coverage_of(config)
    recorded = saved.covers if saved is not None else None
    if recorded == current:
        return None
    if recorded is None or not config.snapshot.backfill:
        return CoverageChange(recorded)
    return CoverageChange(recorded, tuple(newly_selected(config, recorded, names())))


def backfill_plan(
    config: DestinationConfig, unfinished: SnapshotProgress | None, tables: tuple[str, ...]
) -> SnapshotProgress | None:
    """The plan after a coverage change: the ``unfinished`` one without the tables the filter
    no longer selects, plus ``tables`` from their first row (a table already planned keeps its
    progress); sorted by name as a fresh plan is. None when nothing is left to read."""
    stream = TableFilter(config.filter.regex, config.filter.black_regex)
    kept = {
        step.table: step
        for step in (unfinished.tables if unfinished is not None else ())
        if stream.accepts_name(step.table)
    }
    for name in tables:
        kept.setdefault(name, TableProgress(name))
    if not kept or all(step.done for step in kept.values()):
        return None
    return SnapshotProgress(tuple(kept[name] for name in sorted(kept)), coverage_of(config))


def log_change(config: DestinationConfig, change: CoverageChange) -> None:
    """One line saying what the start does about the filter it found changed."""
    destination = config.name
    if change.recorded is None:
        log.info(
            "destination %s: its cursor records no table filter (written by an older version); "
            "recording the current one, nothing is backfilled (snapshot a table whose existing "
            "rows are missing with: canal-bridge snapshot --tables schema.table)",
            destination,
        )
    elif not config.snapshot.backfill:
        log.info(
            "destination %s: the filter changed; snapshot.backfill is false, so tables it now "
            "selects stream their changes without their existing rows",
            destination,
        )
    elif change.tables:
        shown = ", ".join(change.tables[:NAMES_LOGGED])
        more = len(change.tables) - NAMES_LOGGED
        log.info(
            "destination %s: the filter now selects %s%s: snapshotting their existing rows "
            "while streaming",
            destination,
            shown,
            f" and {more} more" if more > 0 else "",
        )
    else:
        log.info(
            "destination %s: the filter changed; it selects no existing table it did not "
            "select before, so nothing is backfilled",
            destination,
        )
