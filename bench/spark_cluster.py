"""A Spark standalone cluster on this machine, for measuring the jobs beyond ``local[N]``.

    with Standalone(workers=2, workdir=path) as cluster:
        ... SPARK_MASTER=cluster.url python -m spark_jobs.mirror ...
        cluster.busy_workers_seen  # how many workers ran the job's executors at once

A master and ``workers`` workers (one core each, so each runs one executor of one core)
from the pyspark in var/venv (``spark-class``), every port bound to 127.0.0.1 and chosen
free, each a child process under ``nice -n 10``. Entering waits until every worker has
registered with the master; leaving stops the workers (which stop their executors) and then
the master, by PID. While the cluster is up, a thread reads the master's JSON status every
second and keeps the most workers seen running an executor at once: the proof that a job's
tasks ran on the workers, not in its driver.

The executors run on the same box and file system as the driver, so the Delta and
checkpoint folders of a local path are theirs too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.measure import free_port, stop_process

ROOT = Path(__file__).resolve().parent.parent
SPARK_CLASS = ROOT / "var" / "venv" / "bin" / "spark-class"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def alive_workers(status: dict[str, Any]) -> list[dict[str, Any]]:
    """The workers the master's ``/json`` status lists as ALIVE."""
    return [w for w in status.get("workers", []) if w.get("state") == "ALIVE"]


def busy_workers(status: dict[str, Any]) -> int:
    """How many alive workers have cores in use (an executor running on them)."""
    return sum(1 for w in alive_workers(status) if int(w.get("coresused", 0)) > 0)


class Standalone:
    def __init__(
        self, workers: int, workdir: Path, worker_memory: str = "2g", timeout_s: float = 120
    ) -> None:
        self.workers = workers
        self.workdir = workdir
        self.worker_memory = worker_memory
        self.timeout_s = timeout_s
        self.port = free_port()
        self.ui_port = free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.busy_workers_seen = 0
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def status_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}/json"

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.status_url, timeout=5) as answer:
            status: dict[str, Any] = json.load(answer)
            return status

    def __enter__(self) -> Standalone:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn("master", MASTER_CLASS, "--port", str(self.port))
            self._wait(lambda: self.status() is not None, "the master's status page")
            for index in range(self.workers):
                self._spawn(
                    f"worker-{index}",
                    WORKER_CLASS,
                    "--cores",
                    "1",
                    "--memory",
                    self.worker_memory,
                    "--work-dir",
                    str(self.workdir / f"worker-{index}"),
                    self.url,
                )
            self._wait(
                lambda: len(alive_workers(self.status())) == self.workers,
                f"{self.workers} workers registered",
            )
        except BaseException:
            self.stop()
            raise
        self._watch = threading.Thread(target=self._note_busy, daemon=True)
        self._watch.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Workers first (each stops its executors), then the master; by PID, politely
        (SIGTERM), killed after 30 s."""
        self._stop.set()
        if self._watch is not None:
            self._watch.join(5)
        for process in reversed(self.processes):
            stop_process(process)
        self.processes.clear()

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
        # spark-class finds Spark (SPARK_HOME) with this Python, the one that has pyspark;
        # unset, it would ask the system's python3 and find nothing. Executors run it too.
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        ui_port = str(self.ui_port) if name == "master" else str(free_port())
        command = ["nice", "-n", "10", str(SPARK_CLASS), main_class, "--host", "127.0.0.1"]
        command += ["--webui-port", ui_port, *args]
        with (self.workdir / f"{name}.log").open("wb") as out:
            self.processes.append(
                subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
            )

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"a Spark process exited waiting for {what}: see {self.workdir}"
                    )
            try:
                if ready():
                    return
            except OSError:
                pass  # the master's page is not up yet
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {self.timeout_s:.0f} s: see {self.workdir}")
            time.sleep(0.5)

    def _note_busy(self) -> None:
        while not self._stop.wait(1.0):
            try:
                busy = busy_workers(self.status())
            except OSError:
                continue
            self.busy_workers_seen = max(self.busy_workers_seen, busy)


def add_master_arguments(parser: argparse.ArgumentParser) -> None:
    """``--master`` or ``--standalone N``: where a Spark bench runs its job (``spark_master``)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--master", help="the job's Spark master, e.g. 'local[4]' (default local[2])"
    )
    where.add_argument(
        "--standalone",
        type=int,
        metavar="WORKERS",
        help="run the job on a standalone cluster of this many one-core workers started here",
    )


@dataclass(frozen=True)
class SparkMaster:
    """Where a bench's job runs: ``url`` for ``SPARK_MASTER`` (None: the job's local[2])."""

    url: str | None
    description: str
    cluster: Standalone | None = None

    @property
    def busy_workers(self) -> int | None:
        """On a standalone cluster, the most workers seen running the job's executors."""
        return self.cluster.busy_workers_seen if self.cluster is not None else None


@contextmanager
def spark_master(
    master: str | None, standalone: int | None, workdir: Path
) -> Iterator[SparkMaster]:
    """The master ``add_master_arguments`` asked for; a standalone cluster is started in
    ``workdir`` for the ``with`` block and stopped after it."""
    if not standalone:
        yield SparkMaster(master, master or "local[2] (default)")
        return
    with Standalone(standalone, workdir) as cluster:
        yield SparkMaster(
            cluster.url, f"standalone, {standalone} workers of 1 core on this machine", cluster
        )
