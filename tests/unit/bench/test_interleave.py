"""``bench.interleave`` alternates the order of its roots, so a box drifting through a round
does not favour the same one every time."""

from __future__ import annotations

from pathlib import Path

from bench.interleave import round_order


def test_every_other_round_runs_the_roots_in_reverse() -> None:
    roots = [Path("old"), Path("new"), Path("other")]
    orders = [round_order(roots, number) for number in range(1, 5)]
    assert orders == [roots, roots[::-1], roots, roots[::-1]]
    assert roots == [Path("old"), Path("new"), Path("other")]  # the caller's list is kept
