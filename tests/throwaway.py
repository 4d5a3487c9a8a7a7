"""What the tests' throwaway servers (Kafka, ZooKeeper, ...) share: a child process started by
the test, polled until ready, and stopped by PID."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

import pytest


class ThrowawayProcess:
    """Subclasses set ``name`` and implement ``start()``, which launches ``self.process`` and
    calls ``wait_ready``."""

    name = "server"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        raise NotImplementedError

    def wait_ready(
        self, ready: Callable[[], bool], timeout_s: float, log: Path, poll_s: float = 0.1
    ) -> None:
        """Poll ``ready`` until it holds; fail (after stopping the process) if the process exits
        or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                pytest.fail(f"throwaway {self.name} exited: see {log}")
            if ready():
                return
            time.sleep(poll_s)
        self.stop(kill=True)
        pytest.fail(f"throwaway {self.name} not ready within {timeout_s} s: see {log}")

    def stop(self, *, kill: bool = False, timeout_s: float = 60) -> None:
        """Stop by PID: SIGKILL (a crash) or SIGTERM, then SIGKILL after ``timeout_s``."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(kill=True)
