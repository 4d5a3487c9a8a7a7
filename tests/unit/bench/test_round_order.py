"""``bench.measure.round_order`` (``bench.interleave``'s roots, ``bench.compare``'s systems):
each run takes each place once every few rounds, so a box drifting through a round, or a run
paying for the one before it, does not favour the same one every time."""

from __future__ import annotations

from bench.measure import round_order


def test_each_run_takes_each_place_once_every_len_rounds() -> None:
    runs = ["bridge", "debezium", "canal"]
    orders = [round_order(runs, number) for number in range(1, 7)]
    assert orders[:3] == [
        ["bridge", "debezium", "canal"],
        ["debezium", "canal", "bridge"],
        ["canal", "bridge", "debezium"],
    ]
    assert orders[3:] == orders[:3]
    for place in range(len(runs)):
        assert sorted(order[place] for order in orders[:3]) == sorted(runs)
    assert runs == ["bridge", "debezium", "canal"]  # the caller's list is kept


def test_two_runs_alternate() -> None:
    assert [round_order(["old", "new"], n) for n in range(1, 4)] == [
        ["old", "new"],
        ["new", "old"],
        ["old", "new"],
    ]
    assert round_order([], 1) == []
