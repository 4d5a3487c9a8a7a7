"""One ZooKeeper session per process (a kazoo client), shared by election, fencing and the
ZooKeeper meta store, so that "we own the running node" and "we may write the cursor" are
decided by the same session.

kazoo reconnects by itself: after SUSPENDED (connection lost, the session may survive) it
comes back CONNECTED with the same session, after LOST (session expired) with a new one, whose
ephemeral nodes must be created again. Listeners run on kazoo's connection thread and must
return at once: ours only set flags and wake the election loop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from bridge.ha.exceptions import CoordinatorUnavailable

log = logging.getLogger(__name__)
# kazoo's own lines (connection drops and retries).
kazoo_log = logging.getLogger("bridge.ha.kazoo")

StateListener = Callable[[str], None]

CONNECT_TIMEOUT_S = 15.0
# A bounded wait for one request: a half-dead connection must not hang a fence check.
REQUEST_TIMEOUT_S = 5.0


class ZkSession:
    def __init__(
        self,
        hosts: str,
        session_timeout_ms: int,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.hosts = hosts
        self.session_timeout_s = session_timeout_ms / 1000
        self.connect_timeout_s = connect_timeout_s
        self.client = KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_s,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            logger=kazoo_log,
        )
        self._listeners: list[StateListener] = []
        self._lock = threading.Lock()
        self._running = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            raise RuntimeError("ZooKeeper session already started")
        self.client.add_listener(self._on_state)
        try:
            self.client.start(timeout=self.connect_timeout_s)
        except KazooTimeoutError as exc:
            raise CoordinatorUnavailable(
                self.hosts, f"no connection within {self.connect_timeout_s:.0f}s"
            ) from exc
        self._running = True
        log.info("ZooKeeper session 0x%x on %s", self.session_id or 0, self.hosts)

    def stop(self) -> None:
        """Close the session: its ephemeral nodes (running, cluster) disappear at once."""
        if not self._running:
            return
        self._running = False
        with contextlib.suppress(KazooException):
            self.client.stop()
        self.client.close()

    @property
    def running(self) -> bool:
        return self._running

    # -- state -------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return bool(self.client.state == KazooState.CONNECTED)

    @property
    def session_id(self) -> int | None:
        client_id = self.client.client_id
        return int(client_id[0]) if client_id else None

    def add_listener(self, listener: StateListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:
            log.info("ZooKeeper connected (session 0x%x)", self.session_id or 0)
        else:
            log.warning("ZooKeeper connection %s", state)
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(str(state))
            except Exception:
                log.exception("ZooKeeper state listener failed")

    @contextlib.contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Translate kazoo's errors (not caught by the caller) into ``CoordinatorUnavailable``."""
        try:
            yield
        except (KazooException, KazooTimeoutError) as exc:
            raise CoordinatorUnavailable(
                self.hosts, f"{what}: {type(exc).__name__} {exc}".rstrip()
            ) from exc
