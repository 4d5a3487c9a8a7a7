"""``bench.compare.cli.written``: the system's usage is taken when its topic's end last moved,
and the rows are counted only once the end stands still, again after a pause that fell short."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from bench.compare import cli
from bench.compare.tally import Tally
from bench.measure import Usage

# A watch's tick: sums of 0.1 s ticks land a tick late or early in binary floating point.
TICK = cli.WATCH_S + 1e-9


class Clock:
    """``time`` for ``cli``: ``sleep`` moves ``monotonic`` on, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Writer:
    """A topic written as ``schedule`` says: (from this time on, this many records, each one
    row); ``drain`` counts what is written at the time, as reading the topic would."""

    clock: Clock
    schedule: list[tuple[float, int]]
    tally: Tally = field(default_factory=Tally)
    drains: list[float] = field(default_factory=list)

    def appended(self) -> int:
        return max((n for at, n in self.schedule if at <= self.clock.now), default=0)

    def drain(self) -> None:
        self.drains.append(self.clock.now)
        self.tally.rows = self.appended()


class System:
    pid = 1
    topic = "t"

    def check_alive(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(cli, "time", clock)
    # The CPU a system has used is the time so far: the usage says when it was taken.
    monkeypatch.setattr(cli, "usage_of", lambda pid: Usage(clock.now, 100.0))
    return clock


def test_usage_is_taken_when_the_end_last_moved_and_rows_are_counted_after_the_quiet(
    clock: Clock,
) -> None:
    writer = Writer(clock, [(0.0, 10), (0.55, 60), (1.25, 100)])
    usage = cli.written(writer, System(), 100, deadline=60)  # type: ignore[arg-type]
    # The end last moved at 1.25 s, first seen at the watch of 1.3 s; counted a second on.
    assert usage.cpu_s == pytest.approx(1.3, abs=TICK)
    assert writer.drains == [pytest.approx(2.3, abs=TICK)]


def test_a_pause_short_of_the_rows_is_counted_and_watched_on(clock: Clock) -> None:
    writer = Writer(clock, [(0.0, 40), (3.0, 100)])
    usage = cli.written(writer, System(), 100, deadline=60)  # type: ignore[arg-type]
    assert usage.cpu_s == pytest.approx(3.0, abs=TICK)
    # Counted after each quiet second of the pause (40 rows), then after the last write.
    assert writer.drains == [pytest.approx(at, abs=TICK) for at in (1.0, 2.0, 4.0)]


def test_a_topic_that_never_holds_the_rows_times_out_naming_both_counts(clock: Clock) -> None:
    writer = Writer(clock, [(0.0, 40)])
    with pytest.raises(TimeoutError, match="40 records written, 40 of 100 rows counted"):
        cli.written(writer, System(), 100, deadline=5)  # type: ignore[arg-type]
