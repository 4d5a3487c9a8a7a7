"""The binlog reader process ``ParserProcess.preflight`` starts ahead, before the source is
checked: kept while the source cannot be reached, replaced when it died or belongs to another
thread, ended by ``stop()``, and gone with the bridge. No server: the source is a closed port."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading

import pytest

from bridge import childproc
from bridge.config import SourceConfig
from bridge.parse.child import ParserProcess
from bridge.parse.exceptions import SourceUnreachable
from tests.processes import gone_within

CLOSED_PORT = "127.0.0.1:1"


def _parser() -> ParserProcess:
    return ParserProcess(
        SourceConfig(address=CLOSED_PORT, username="canal", password="canal", slave_id=7001)
    )


def test_a_failed_preflight_keeps_one_waiting_child_and_stop_ends_it() -> None:
    parser = _parser()
    try:
        with pytest.raises(SourceUnreachable):
            parser.preflight()
        standby = parser._standby
        assert standby is not None and standby.poll() is None
        with pytest.raises(SourceUnreachable):
            parser.preflight()  # the instance's next attempt
        assert parser._standby is standby
    finally:
        parser.stop()
    assert standby.poll() is not None and parser._standby is None  # killed and reaped
    with pytest.raises(SourceUnreachable):
        parser.preflight()
    assert parser._standby is None  # a stopped reader starts no child


def test_a_waiting_child_that_died_or_belongs_to_another_thread_is_replaced() -> None:
    parser = _parser()
    try:
        with pytest.raises(SourceUnreachable):
            parser.preflight()
        died = parser._standby
        assert died is not None
        died.kill()
        died.wait(10)
        with pytest.raises(SourceUnreachable):
            parser.preflight()
        mine = parser._standby
        assert mine is not None and mine is not died and mine.poll() is None

        def elsewhere() -> None:
            with contextlib.suppress(SourceUnreachable):
                parser.preflight()

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(30)
        # Its death signal would follow this thread: the other thread gets a child of its own.
        assert parser._standby is not mine and mine.poll() is not None
    finally:
        parser.stop()


def test_a_waiting_child_ends_quietly_when_its_stdin_does() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "bridge.parse.child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=childproc.child_environment(),
    )
    out, err = child.communicate(timeout=30)
    assert (child.returncode, out, err) == (0, b"", b"")


_PARENT = f"""
import contextlib, time
from bridge.config import SourceConfig
from bridge.parse.child import ParserProcess
from bridge.parse.exceptions import SourceUnreachable
from tests.processes import gone_within

parser = ParserProcess(
    SourceConfig(address="{CLOSED_PORT}", username="canal", password="canal", slave_id=7002)
)
with contextlib.suppress(SourceUnreachable):
    parser.preflight()
print(parser._standby.pid, flush=True)
time.sleep(60)
"""


def test_a_waiting_child_is_gone_with_its_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, env=childproc.child_environment()
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)  # no chance to clean up
        parent.wait(10)
        assert gone_within(child), "the waiting child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
