"""Which existing tables a changed filter newly selects, against the coverage a cursor records:
regex and black filters compared with the sink's rules (anchored, case-insensitive), older
cursors recording nothing, ``snapshot.backfill: false``, and the plan that results."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bridge.config import DestinationConfig
from bridge.position import FilterCoverage, SnapshotProgress, TableProgress
from bridge.snapshot.backfill import (
    CoverageChange,
    backfill_plan,
    coverage_change,
    coverage_of,
    log_change,
    newly_selected,
)

NAMES = [("db", "a"), ("db", "b"), ("db", "ab"), ("DB", "C"), ("crm", "users")]


def destination(**extra: Any) -> DestinationConfig:
    return DestinationConfig.model_validate(
        {
            "name": "d",
            "source": {"address": "db:3306", "username": "canal", "slave_id": 9},
            "mq": {"topic": "t"},
            **extra,
        }
    )


def covering(regex: str, black_regex: str = "") -> SnapshotProgress:
    return SnapshotProgress((), FilterCoverage(regex, black_regex))


def names_never_asked() -> list[tuple[str, str]]:
    raise AssertionError("the source's tables were listed for nothing")


def test_a_widened_regex_selects_only_the_tables_the_recorded_one_did_not() -> None:
    config = destination(filter={"regex": "db\\.a,db\\.b"})
    change = coverage_change(config, covering("db\\.a"), lambda: NAMES)
    # db.ab: the recorded item is anchored, so it never selected db.ab; nor does the new one.
    assert change == CoverageChange(FilterCoverage("db\\.a"), ("db.b",))


def test_names_compare_ignoring_case_as_the_sink_does() -> None:
    config = destination(filter={"regex": "db\\..*"})
    # The recorded filter spelled DB\.A selected db.a already; DB.C is new whatever its case.
    assert newly_selected(config, FilterCoverage("DB\\.A"), NAMES) == ["DB.C", "db.ab", "db.b"]


def test_a_table_leaving_the_black_filter_is_newly_selected() -> None:
    config = destination(filter={"regex": "db\\..*"})
    recorded = FilterCoverage("db\\..*", "db\\.b,db\\.c")
    assert newly_selected(config, recorded, NAMES) == ["DB.C", "db.b"]


def test_a_narrowed_filter_selects_nothing_new() -> None:
    config = destination(filter={"regex": "db\\..*", "black_regex": "db\\.b"})
    change = coverage_change(config, covering("db\\..*"), lambda: NAMES)
    assert change == CoverageChange(FilterCoverage("db\\..*"), ())


def test_snapshot_tables_narrows_the_backfill_as_any_automatic_snapshot() -> None:
    config = destination(filter={"regex": ".*\\..*"}, snapshot={"tables": "crm\\..*"})
    assert newly_selected(config, FilterCoverage("db\\..*"), NAMES) == ["crm.users"]


def test_the_same_filter_changes_nothing_and_lists_no_table() -> None:
    config = destination(filter={"regex": "db\\.a", "black_regex": "db\\.b"})
    assert coverage_change(config, covering("db\\.a", "db\\.b"), names_never_asked) is None


def test_a_cursor_without_coverage_records_the_filter_and_backfills_nothing() -> None:
    config = destination(filter={"regex": "db\\..*"})
    old_plan = SnapshotProgress((TableProgress("db.a"),))  # written by an older version
    for saved in (None, old_plan):
        assert coverage_change(config, saved, names_never_asked) == CoverageChange(None)


def test_backfill_off_moves_the_coverage_without_reading() -> None:
    config = destination(filter={"regex": "db\\..*"}, snapshot={"backfill": False})
    change = coverage_change(config, covering("db\\.a"), names_never_asked)
    assert change == CoverageChange(FilterCoverage("db\\.a"), ())


def test_the_plan_keeps_unfinished_progress_drops_unselected_tables_and_adds_new_ones() -> None:
    config = destination(filter={"regex": "db\\..*", "black_regex": "db\\.gone"})
    unfinished = SnapshotProgress(
        (TableProgress("db.a", [["int", "7"]], 7), TableProgress("db.gone", None, 3)),
        FilterCoverage("db\\.a,db\\.gone"),
    )
    plan = backfill_plan(config, unfinished, ("db.c", "db.a"))
    assert plan == SnapshotProgress(
        (TableProgress("db.a", [["int", "7"]], 7), TableProgress("db.c")), coverage_of(config)
    )


def test_nothing_to_read_is_no_plan() -> None:
    config = destination(filter={"regex": "db\\.a"})
    done = SnapshotProgress((TableProgress("db.a", None, 1, done=True),))
    assert backfill_plan(config, None, ()) is None
    assert backfill_plan(config, done, ()) is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            CoverageChange(FilterCoverage("db\\.a"), ("db.b", "db.c")),
            "destination d: the filter now selects db.b, db.c: snapshotting their existing "
            "rows while streaming",
        ),
        (CoverageChange(None), "written by an older version"),
        (CoverageChange(FilterCoverage("db\\.a")), "selects no existing table"),
    ],
)
def test_one_line_says_what_the_start_does(
    change: CoverageChange, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "bridge.snapshot.backfill"):
        log_change(destination(), change)
    (record,) = caplog.records
    assert expected in record.getMessage()


def test_a_long_list_of_tables_is_cut_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    tables = tuple(f"db.t{i:03}" for i in range(60))
    with caplog.at_level(logging.INFO, "bridge.snapshot.backfill"):
        log_change(destination(), CoverageChange(FilterCoverage("x"), tables))
    assert "db.t049 and 10 more: snapshotting" in caplog.records[0].getMessage()
