"""A binlog reader that keeps failing (the source down at start) is restarted with growing,
jittered waits and one log line per attempt: no traceback for the bridge's own errors, one
traceback per unexpected kind."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator

import pytest

from bridge.entry import Entry
from bridge.instance import Instance
from bridge.meta import MemoryMetaManager
from bridge.parse.exceptions import SourceUnreachable
from bridge.parse.source import SourceFacts
from bridge.position import EntryPosition
from tests.unit.instance.test_server import DESTINATION, FACTS


class FailingParser:
    """Fails ``failures`` preflights in a row (each with the next of ``errors``), then runs."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.attempts = 0
        self.running = threading.Event()
        self._stopped = threading.Event()

    def preflight(self) -> SourceFacts:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return FACTS

    def stop(self) -> None:
        self._stopped.set()

    def batches(self, start: EntryPosition) -> Iterator[list[Entry]]:
        self.running.set()
        self._stopped.wait(10)
        yield from ()


def run_until_reading(parser: FailingParser) -> None:
    instance = Instance(
        DESTINATION,
        MemoryMetaManager(),
        parser_factory=lambda _: parser,  # type: ignore[arg-type,return-value]
        restart_delay_s=0.02,
        find_start=lambda _facts, _known: EntryPosition("binlog.000001", 4),
    )
    instance.start()
    try:
        assert parser.running.wait(10), "the reader never got going"
    finally:
        instance.stop(5)


def restarts(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "restarting in" in r.getMessage()]


def test_a_source_down_at_start_costs_one_line_per_attempt_and_waits_grow(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = SourceUnreachable("cannot reach 127.0.0.1:3306: connection refused")
    parser = FailingParser([down] * 6)
    with caplog.at_level(logging.INFO, logger="bridge.instance"):
        run_until_reading(parser)
    lines = restarts(caplog)
    assert len(lines) == 6 and parser.attempts == 7
    assert all(r.levelno == logging.WARNING and not r.exc_info for r in lines)
    assert "connection refused" in lines[0].getMessage()
    waits = [float(re.search(r"restarting in ([\d.]+)s", r.getMessage())[1]) for r in lines]  # type: ignore[index]
    assert waits == sorted(waits) and waits[-1] > waits[0], waits


def test_an_unexpected_error_gets_its_traceback_once(caplog: pytest.LogCaptureFixture) -> None:
    parser = FailingParser([RuntimeError("boom")] * 3)
    with caplog.at_level(logging.INFO, logger="bridge.instance"):
        run_until_reading(parser)
    lines = restarts(caplog)
    assert len(lines) == 3
    assert [bool(r.exc_info) for r in lines] == [True, False, False]
    assert "RuntimeError: boom" in lines[0].getMessage()


def test_thirty_seconds_of_outage_stay_a_handful_of_lines() -> None:
    """The waits of the default back-off (2 s, doubling to 60 s): a source down for 30 s at
    start costs at most five attempts."""
    instance = Instance(DESTINATION, MemoryMetaManager(), parser_factory=lambda _: None)  # type: ignore[arg-type,return-value]
    elapsed, attempts = 0.0, 0
    while elapsed < 30:
        elapsed += instance._restart_backoff.next()
        attempts += 1
    assert attempts <= 5
