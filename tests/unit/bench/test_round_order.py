"""``bench.measure.round_order`` (``bench.interleave``'s roots, ``bench.compare``'s systems):
over twice as many rounds as runs, each run takes each place equally often and comes right
after each other one equally often, so a box drifting through a round, or a run paying for the
one before it, does not favour the same one every time."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from bench.measure import round_order


def test_places_and_followers_balance_over_twice_as_many_rounds_as_runs() -> None:
    runs = ["bridge", "debezium", "canal"]
    orders = [round_order(runs, number) for number in range(1, 7)]
    assert orders[:3] == [
        ["bridge", "debezium", "canal"],
        ["debezium", "canal", "bridge"],
        ["canal", "bridge", "debezium"],
    ]
    for place in range(len(runs)):
        assert Counter(order[place] for order in orders) == dict.fromkeys(runs, 2)
    followers = Counter(pair for order in orders for pair in pairwise(order))
    assert set(followers.values()) == {2} and len(followers) == 6  # every ordered pair, twice
    assert [round_order(runs, number) for number in range(7, 13)] == orders  # and again
    assert runs == ["bridge", "debezium", "canal"]  # the caller's list is kept


def test_two_runs_go_a_b_b_a() -> None:
    assert [round_order(["old", "new"], n) for n in range(1, 5)] == [
        ["old", "new"],
        ["new", "old"],
        ["new", "old"],
        ["old", "new"],
    ]
    assert round_order([], 1) == []
