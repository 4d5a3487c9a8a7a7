"""The main loop of ``canal-bridge run``: start the runner, reload its configuration file
when it changes (or on SIGHUP), stop on SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType

from bridge import native
from bridge.collector import tune_garbage_collector
from bridge.config import BridgeConfig
from bridge.runner.runner import Runner

log = logging.getLogger(__name__)

# How often the configuration file is read for a change (SIGHUP: at once).
POLL_S = 1.0


def run_until_signalled(config: BridgeConfig, path: Path | None = None) -> int:
    """Run until SIGINT/SIGTERM or until every destination has stopped (``initial_only`` ones
    once their snapshot is delivered); the exit code is 1 if any destination stopped on an
    error. ``path``, the file ``config`` was read from, is checked every ``POLL_S`` and on
    SIGHUP, and a new content applied (``bridge.runner.reload``)."""
    stop_requested = threading.Event()
    reload_requested = threading.Event()
    wake = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop_requested.set()
        wake.set()

    def request_reload(signum: int, _frame: FrameType | None) -> None:
        reload_requested.set()
        wake.set()

    handlers = {signal.SIGINT: request_stop, signal.SIGTERM: request_stop}
    handlers[signal.SIGHUP] = request_reload
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    runner = Runner(config, path)
    log.info("record path: %s", native.describe())
    try:
        runner.start()
        tune_garbage_collector()
        next_poll = time.monotonic() + POLL_S
        while not stop_requested.is_set():
            wake.wait(0.5)
            wake.clear()
            if reload_requested.is_set() or time.monotonic() >= next_poll:
                forced = reload_requested.is_set()
                reload_requested.clear()
                runner.live.poll(force=forced)
                next_poll = time.monotonic() + POLL_S
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
