"""``canal-bridge run``: one instance and one MQ worker per destination (canal's CanalMQStarter).

Start order per destination: instance (meta -> store -> sink -> parser), then its worker.
Shutdown on SIGINT/SIGTERM: workers stop first (each rolls back its in-flight batch), then
the instances stop, which flushes the acked cursors. A restart resumes from those cursors.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from types import FrameType

from bridge.config import BridgeConfig, DestinationConfig
from bridge.instance import EmbeddedServer, Instance
from bridge.meta import FileMixedMetaManager, MemoryMetaManager, MetaManager
from bridge.mq.worker import MqWorker

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 30.0


def build_meta(config: BridgeConfig) -> MetaManager:
    if config.meta.store == "memory":
        return MemoryMetaManager()
    return FileMixedMetaManager(MemoryMetaManager(), config.meta.dir, config.meta.flush_period_ms)


def build_instance(config: BridgeConfig, destination: DestinationConfig) -> Instance:
    return Instance(destination, build_meta(config))


class Runner:
    def __init__(self, config: BridgeConfig) -> None:
        self.config = config
        self.server = EmbeddedServer()
        self.workers: dict[str, MqWorker] = {}

    def start(self) -> None:
        for destination in self.config.destinations:
            self.server.start(build_instance(self.config, destination))
            worker = MqWorker.from_config(destination, self.config.kafka, self.server)
            self.workers[destination.name] = worker
            worker.start()
            log.info("destination %s started", destination.name)

    def alive(self) -> bool:
        return any(not worker.join(0) for worker in self.workers.values())

    def failed(self) -> list[str]:
        return [name for name, worker in self.workers.items() if worker.error is not None]

    def stop(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        for worker in self.workers.values():
            worker.stop()
        for name, worker in self.workers.items():
            if not worker.join(max(0.1, deadline - time.monotonic())):
                log.error("MQ worker of %s did not stop within %.0fs", name, timeout_s)
        self.server.stop_all()


def run_until_signalled(config: BridgeConfig) -> int:
    """Run until SIGINT/SIGTERM or until every destination has stopped; the exit code is 1 if
    any destination stopped on an error."""
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop_requested.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    runner = Runner(config)
    try:
        runner.start()
        while not stop_requested.wait(0.5):
            if not runner.alive():
                break
    finally:
        runner.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    failed = runner.failed()
    if failed:
        log.error("stopped with errors in: %s", ", ".join(failed))
        return 1
    return 0
