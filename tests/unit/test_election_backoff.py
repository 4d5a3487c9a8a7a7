"""The HA election loop after failed rounds (ZooKeeper in trouble): the waits grow with the
shared back-off, one line per attempt, and a round that works brings the tick back."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from bridge.ha.election import Election
from bridge.ha.exceptions import HaError
from bridge.ha.paths import ZkLayout

FAILURES = 6


def test_failed_rounds_wait_longer_each_time_and_say_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stub: Any = object()
    node: Any = SimpleNamespace(address="127.0.0.1:11112")
    election = Election(
        stub, ZkLayout("/otter/canal"), node, [], host=stub, fence=stub, tick_s=0.01
    )
    rounds: list[float] = []
    done = threading.Event()

    def round_() -> None:
        rounds.append(time.monotonic())
        if len(rounds) <= FAILURES:
            raise HaError("ZooKeeper session suspended")
        if len(rounds) >= FAILURES + 3:
            done.set()

    election._round = round_  # type: ignore[method-assign]
    loop = threading.Thread(target=election._loop)
    with caplog.at_level(logging.INFO, logger="bridge.ha"):
        loop.start()
        try:
            assert done.wait(20)
        finally:
            election._stopping.set()
            election._wake.set()
            loop.join(5)
    lines = [r for r in caplog.records if "HA round failed" in r.getMessage()]
    assert len(lines) == FAILURES
    assert all("ZooKeeper session suspended" in r.getMessage() and not r.exc_info for r in lines)
    gaps = [later - earlier for earlier, later in itertools.pairwise(rounds)]
    failing, healthy = gaps[: FAILURES - 1], gaps[FAILURES:]
    assert failing[-1] > 4 * failing[0], failing
    assert max(healthy) < failing[-1], (healthy, failing)
