"""``bench.measure.percentiles``: the one percentile every benchmark reports."""

from __future__ import annotations

import random

import pytest

from bench.live_many import Latency
from bench.measure import percentiles


def test_inclusive_percentiles_whatever_the_order() -> None:
    samples = [float(s) for s in range(1, 101)]
    random.Random(7).shuffle(samples)
    assert percentiles(samples, 50, 95, 99) == pytest.approx((50.5, 95.05, 99.01))


def test_one_sample_is_every_percentile_and_none_gives_zeros() -> None:
    assert percentiles([3.0], 50, 99) == (3.0, 3.0)
    assert percentiles([], 50, 99) == (0.0, 0.0)


def test_answer_latencies_use_them() -> None:
    latency = Latency.of([float(s) for s in range(100, 0, -1)])
    assert (latency.p50, latency.p95, latency.slowest) == pytest.approx((50.5, 95.05, 100.0))
