"""Recorded Spark runs land under their own heading of docs/spark.md, whichever heading comes
last in the file (``bench.spark_catchup.insert_section``), and a standalone cluster's status
tells which workers run executors (``bench.spark_cluster``)."""

from __future__ import annotations

from bench.spark_catchup import insert_section
from bench.spark_cluster import alive_workers, busy_workers

DOC = """# Spark

## Recorded catch-up runs

Intro.

### Catch-up, 1M

table 1

## Recorded freshness runs

Freshness intro.

### Freshness, 20,000 changes/s

table 2
"""


def test_a_run_goes_at_the_end_of_its_heading_not_of_the_file() -> None:
    added = insert_section(DOC, "## Recorded catch-up runs", "", "### Catch-up, 10M\n\ntable 3\n")
    assert added == DOC.replace("table 1\n", "table 1\n\n### Catch-up, 10M\n\ntable 3\n")
    last = insert_section(DOC, "## Recorded freshness runs", "", "### Freshness, 2\n\nt 4\n")
    assert last == DOC + "\n### Freshness, 2\n\nt 4\n"


def test_a_missing_heading_is_added_at_the_end_with_its_intro() -> None:
    doc = "# Spark\n\ntext\n"
    added = insert_section(doc, "## Recorded freshness runs", "Why.", "### Run\n\nt\n")
    assert added == "# Spark\n\ntext\n\n## Recorded freshness runs\n\nWhy.\n\n### Run\n\nt\n"


def test_busy_workers_are_the_alive_ones_with_cores_in_use() -> None:
    status = {
        "workers": [
            {"state": "ALIVE", "coresused": 1},
            {"state": "ALIVE", "coresused": 0},
            {"state": "DEAD", "coresused": 1},
        ]
    }
    assert len(alive_workers(status)) == 2
    assert busy_workers(status) == 1
    assert busy_workers({}) == 0
