"""Watching the JVM a job's Python driver talks to: when it dies, the job ends at once.

A JVM that dies under a running query (killed for memory, exiting on an OutOfMemoryError)
leaves the Python driver blocked on the Py4J socket or sleeping in a poll: nothing tells it.
``JvmWatch`` checks every second whether the JVM is still there and, when it is not, logs one
line (its exit code, what to change) and ends the process with ``EXIT_JVM_DIED``; the batch in
flight was not committed and is redone from the checkpoint at the next start.

Where the JVM is: ``python -m spark_jobs.<job>`` starts it as a child (PySpark's launcher keeps
the ``Popen``, ``SparkContext._gateway.proc``: a private attribute, read only in
``launched_jvm``, which ``tests/spark/test_bounded_batches.py`` pins); under spark-submit the
JVM is this process's parent, gone when the parent changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from pyspark import SparkContext

EXIT_JVM_DIED = 3
SPARK_OOM_EXIT = 52  # SparkExitCode.OOM: an executor (local mode: the driver) ran out of heap


def launched_jvm() -> subprocess.Popen[bytes] | None:
    """The JVM PySpark started for this process, or None (spark-submit started it)."""
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    return proc if isinstance(proc, subprocess.Popen) else None


def jvm_exit_code() -> Callable[[], int | None]:
    """A function returning None while the JVM lives, else its exit code (-1 when unknown)."""
    proc = launched_jvm()
    if proc is not None:
        return proc.poll
    parent = os.getppid()
    return lambda: None if os.getppid() == parent else -1


def died_line(code: int) -> str:
    cause = {
        SPARK_OOM_EXIT: "out of memory",
        -9: "killed by SIGKILL, e.g. by the kernel's OOM killer",
    }.get(code, f"exit code {code}")
    return (
        f"the Spark JVM died ({cause}): stopping; the batch in flight is redone at the next "
        "start; give it more heap (--driver-memory, spark.executor.memory) or smaller batches "
        "(--max-offsets-per-trigger)"
    )


class JvmWatch:
    """A daemon thread ending the process (``os._exit``) when the JVM dies; ``check()`` does
    the same at once (a Py4J call that failed may mean the JVM is gone). ``stop()`` ends the
    thread."""

    def __init__(self, exit_code: Callable[[], int | None] | None = None) -> None:
        self._exit_code = exit_code or jvm_exit_code()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="jvm-watch", daemon=True)

    def start(self) -> JvmWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def check(self, grace_s: float = 2.0) -> None:
        """Ends the process when the JVM is gone or goes within ``grace_s`` (its socket can
        close a moment before the process is reaped); returns when it lives on."""
        deadline = time.monotonic() + grace_s
        while True:
            code = self._exit_code()
            if code is not None:
                _die(code)
            if time.monotonic() >= deadline:
                return
            time.sleep(0.1)

    def _watch(self) -> None:
        while not self._stopped.wait(1.0):
            code = self._exit_code()
            if code is not None and not self._stopped.is_set():
                _die(code)


def _die(code: int) -> None:
    print(died_line(code), file=sys.stderr, flush=True)
    os._exit(EXIT_JVM_DIED)
