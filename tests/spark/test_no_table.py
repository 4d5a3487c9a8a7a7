""" "No mirror table yet" is told by Spark's and Delta's error conditions, not by message text:
a path that does not exist, a folder without a Delta log, and SHOW TBLPROPERTIES or DESCRIBE
HISTORY of either."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from spark_jobs.mirror_table import MirrorTable, is_no_table
from spark_jobs.pending import PENDING, PendingActions
from spark_jobs.reconcile import read_mirror


def test_a_missing_path_and_a_folder_without_delta_log_are_no_table(
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    (tmp_path / "shop" / "plain").mkdir(parents=True)
    (tmp_path / "shop" / "plain" / "notes.txt").write_text("not a Delta table")
    for table in ("missing", "plain"):
        assert MirrorTable(spark, str(tmp_path), "shop", table).state is None
        assert read_mirror(spark, str(tmp_path / "shop" / table), "UTC") == ([], [])
    (tmp_path / "no-log" / PENDING).mkdir(parents=True)
    for root in (tmp_path / "missing", tmp_path / "no-log"):
        pending = PendingActions(spark, str(root))
        assert (pending.version(), pending.tables()) == (None, [])


def test_other_analysis_errors_are_not_taken_for_no_table(
    spark: SparkSession,
) -> None:
    with pytest.raises(AnalysisException) as caught:
        spark.sql("SELECT no_such_column FROM range(1)").collect()
    assert not is_no_table(caught.value)
