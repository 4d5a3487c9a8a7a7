"""A binlog reader process started ahead (``ParserProcess.preflight``) that is never told what
to read: it leaves quietly once its stdin ends, as it does when the bridge is gone."""

from __future__ import annotations

import subprocess
import sys

from bridge import childproc


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
