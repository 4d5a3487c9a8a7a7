"""Looking at processes a test started, through ``/proc`` and signal 0: shared by the tests
of the binlog reader's child process (no child may outlive what should end it)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` still exists (a zombie not yet reaped counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone_within(pid: int, seconds: float = 10) -> bool:
    """Waits up to ``seconds`` for ``pid`` to be gone; whether it is."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def running_children(module: str) -> list[int]:
    """This process's children running ``python -m module`` (zombies, whose command line is
    empty, left out)."""
    found = []
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue  # ended meanwhile
            if module.encode() in command:
                found.append(int(pid))
    return found
