"""The main loop of ``canal-bridge run``: start the runner, wait for a signal, stop it."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from bridge import native
from bridge.collector import tune_garbage_collector
from bridge.config import BridgeConfig
from bridge.runner.runner import Runner

log = logging.getLogger(__name__)


def run_until_signalled(config: BridgeConfig) -> int:
    """Run until SIGINT/SIGTERM or until every destination has stopped (``initial_only`` ones
    once their snapshot is delivered); the exit code is 1 if any destination stopped on an
    error."""
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop_requested.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    runner = Runner(config)
    log.info("record path: %s", native.describe())
    try:
        runner.start()
        tune_garbage_collector()
        while not stop_requested.wait(0.5):
            runner.retire_finished()
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
