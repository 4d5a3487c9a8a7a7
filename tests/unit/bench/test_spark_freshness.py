"""``bench.spark_freshness``'s figures from commit and visibility times: percentiles, the
halves that show a mirror falling behind, the end lag and the verdict on keeping up."""

from __future__ import annotations

import pytest

from bench.spark_freshness import Latency, freshness, spark_interval


def test_percentiles_are_the_inclusive_ones_of_the_live_run() -> None:
    latency = Latency.of([float(s) for s in range(1, 101)])
    assert latency.p50 == pytest.approx(50.5)
    assert latency.p99 == pytest.approx(99.01)
    assert latency.max == 100.0
    assert Latency.of([]) == Latency(0.0, 0.0, 0.0)
    assert Latency.of([2.0]) == Latency(2.0, 2.0, 2.0)


def test_rows_visible_within_the_target_kept_up() -> None:
    commit_ms = [0.0, 1_000.0, 1_000.0, 2_000.0, 2_000.0]  # rows 1 to 4
    visible_ms = {-1: 500, 1: 2_000, 2: 2_000, 3: 3_500, 4: 3_500}  # -1: the warm-up row
    result = freshness(commit_ms, visible_ms, target_s=5.0)
    assert result.rows == 4 and result.missing == 0
    assert result.first_half.max == 1.0 and result.second_half.max == 1.5
    assert result.all_rows.max == 1.5
    assert result.end_lag_s == 1.5 and result.kept_up


def test_a_late_last_row_or_a_missing_one_did_not_keep_up() -> None:
    commit_ms = [0.0, 1_000.0, 2_000.0]
    late = freshness(commit_ms, {1: 2_000, 2: 9_000}, target_s=5.0)
    assert late.end_lag_s == 7.0 and not late.kept_up
    missing = freshness(commit_ms, {1: 2_000}, target_s=5.0)
    assert missing.missing == 1 and missing.end_lag_s is None and not missing.kept_up
    assert missing.all_rows == Latency(1.0, 1.0, 1.0)


def test_short_trigger_texts_become_spark_intervals() -> None:
    assert spark_interval("1s") == "1 seconds"
    assert spark_interval("500ms") == "500 milliseconds"
    assert spark_interval("10 seconds") == "10 seconds"
