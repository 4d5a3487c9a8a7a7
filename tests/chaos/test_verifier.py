"""The chaos verifier must be able to fail: streams with a gap, a reorder, a duplicate or a stale
final state are each reported, and a clean stream is not."""

from __future__ import annotations

from typing import Any

from tests.chaos.verifier import Record, verify

TABLE = "chain"


def rec(offset: int, kind: str, key: int, gen: int, version: int, *, partition: int = 0) -> Record:
    message: dict[str, Any] = {
        "table": TABLE,
        "type": kind,
        "isDdl": False,
        "data": [{"id": str(key), "gen": str(gen), "version": str(version), "payload": "p"}],
    }
    return (partition, offset, f"s.{TABLE}:{key}".encode(), message)


def chain(*steps: tuple[str, int, int], key: int = 1, partition: int = 0) -> list[Record]:
    return [rec(i, k, key, g, v, partition=partition) for i, (k, g, v) in enumerate(steps)]


CLEAN = [("INSERT", 1, 0), ("UPDATE", 1, 1), ("UPDATE", 1, 2), ("DELETE", 1, 2), ("INSERT", 2, 0)]
SOURCE = {(TABLE, "1"): (2, 0)}


def test_a_complete_chain_passes() -> None:
    report = verify(chain(*CLEAN), SOURCE, expected=5)
    assert report.ok, report.summary()
    assert (report.changes, report.duplicates, report.lost) == (5, 0, 0)


def test_a_gap_inside_a_generation_is_lost_changes() -> None:
    report = verify(chain(*CLEAN[:1], *CLEAN[2:]), SOURCE)
    assert report.lost == 1 and not report.ok
    assert "lost before" in report.examples[0]


def test_a_missing_generation_counts_its_insert_and_delete() -> None:
    steps = [("INSERT", 1, 0), ("DELETE", 1, 0), ("INSERT", 3, 0)]
    assert verify(chain(*steps), {(TABLE, "1"): (3, 0)}).lost == 2


def test_a_chain_not_starting_at_the_first_insert_lost_its_head() -> None:
    assert verify(chain(("UPDATE", 1, 2)), {(TABLE, "1"): (1, 2)}).lost == 2


def test_a_shortfall_against_the_written_total_is_lost() -> None:
    report = verify(chain(*CLEAN), SOURCE, expected=7)
    assert report.lost == 2 and not report.ok


def test_a_reorder_is_reported() -> None:
    steps = [CLEAN[0], CLEAN[2], CLEAN[1], *CLEAN[3:]]
    report = verify(chain(*steps), SOURCE)
    assert report.reordered == 1 and report.lost == 0 and not report.ok


def test_a_key_on_two_partitions_counts_as_reordered() -> None:
    moved = [rec(9 + i, k, 1, g, v, partition=1) for i, (k, g, v) in enumerate(CLEAN[2:])]
    records = [*chain(*CLEAN[:2]), *moved]
    assert verify(records, SOURCE).reordered == 1


def test_a_resent_run_is_duplicates_not_reorders() -> None:
    steps = [*CLEAN[:3], *CLEAN[1:]]
    report = verify(chain(*steps), SOURCE, expected=5)
    assert report.ok, report.summary()
    assert report.duplicates == 2


def test_a_stale_final_state_is_reported() -> None:
    report = verify(chain(*CLEAN[:3]), {(TABLE, "1"): (1, 3)})
    assert report.stale == 1 and not report.ok


def test_a_key_deleted_in_the_source_must_end_in_a_delete() -> None:
    assert verify(chain(*CLEAN[:3]), {}).stale == 1
    assert verify(chain(*CLEAN[:4]), {}).stale == 0


def test_a_source_row_never_seen_is_stale() -> None:
    assert verify([], {(TABLE, "5"): (1, 0)}).stale == 1


def test_ddl_and_markers_are_ignored() -> None:
    ddl: Record = (0, 99, None, {"isDdl": True, "type": "CREATE", "table": TABLE, "data": None})
    assert verify([*chain(*CLEAN), ddl], SOURCE).ok
