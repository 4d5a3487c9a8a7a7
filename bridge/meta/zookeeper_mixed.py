"""canal's PeriodMixedMetaManager over ZooKeeperMetaManager: any in-memory manager plus
cursors persisted to ZooKeeper, in canal's layout and JSON (``bridge.meta.codec``)::

    {root}/destinations/{destination}/{client_id}           persistent: the subscription
    {root}/destinations/{destination}/{client_id}/filter    persistent: its filter, if any
    {root}/destinations/{destination}/{client_id}/cursor    persistent: the acked LogPosition

A cursor written by canal reads back here and vice versa. Batches stay in memory only.

When ZooKeeper is written:

* subscribe/unsubscribe at once (rare, and must not be lost);
* cursor updates mark their client dirty; a background thread writes dirty cursors every
  ``flush_period_ms`` (so a crash loses at most that much acked progress: the tail after it
  is delivered again, nothing is skipped);
* ``stop()`` writes whatever is still dirty.

A write happens only while ``may_write(destination)`` says yes: in HA mode that is "this
process's session owns the destination's running node", so a process that lost a
destination never moves the new owner's cursor. A refused cursor is dropped (the new owner
has its own). A failed periodic write is logged and retried next period; ``stop()`` raises it
if the final write fails too.

A destination's subscriptions and cursors are read from ZooKeeper on first use, so a process
that takes a destination over resumes from the last cursor its previous owner wrote.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from bridge.meta import codec
from bridge.meta.base import ClientIdentity, MetaManager
from bridge.meta.exceptions import (
    CorruptCursor,
    MetaAlreadyStarted,
    MetaCodecError,
    MetaError,
    MetaNotRunning,
    MetaStoreUnavailable,
)
from bridge.meta.flushing import MixedMetaManager, PeriodicFlusher
from bridge.position import LogPosition

DEFAULT_ROOT = "/otter/canal"
REQUEST_TIMEOUT_S = 5.0

log = logging.getLogger(__name__)


def _always(_destination: str) -> bool:
    return True


class ZooKeeperMixedMetaManager(MixedMetaManager):
    def __init__(
        self,
        delegate: MetaManager,
        client: Any,  # a started kazoo KazooClient (kazoo has no type hints)
        root: str = DEFAULT_ROOT,
        flush_period_ms: int = 1000,
        may_write: Callable[[str], bool] | None = None,
    ) -> None:
        self._delegate = delegate
        self._client = client
        self.root = root.rstrip("/")
        self._may_write = may_write or _always
        self._running = False
        self._loaded: set[str] = set()
        self._load_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._flusher: PeriodicFlusher[ClientIdentity] = PeriodicFlusher(
            self._write_cursor,
            flush_period_ms,
            f"meta-flush:zk{self.root}",
            order=lambda c: (c.destination, c.client_id),
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            raise MetaAlreadyStarted()
        self._delegate.start()
        self._loaded.clear()
        self._running = True
        self._flusher.start()

    # -- paths -------------------------------------------------------------------------------

    def destination_path(self, destination: str) -> str:
        if not destination or "/" in destination or destination in (".", ".."):
            raise MetaError(f"destination {destination!r} cannot name a ZooKeeper node")
        return f"{self.root}/destinations/{destination}"

    def client_path(self, client: ClientIdentity) -> str:
        return f"{self.destination_path(client.destination)}/{client.client_id}"

    def cursor_path(self, client: ClientIdentity) -> str:
        return f"{self.client_path(client)}/cursor"

    # -- persistence -------------------------------------------------------------------------

    def _write_cursor(self, client: ClientIdentity) -> None:
        with self._write_lock:
            if not self._delegate.has_subscribe(client):
                return  # unsubscribed meanwhile
            cursor = self._delegate.get_cursor(client)
            if cursor is None:
                return
            if not self._may_write(client.destination):
                log.warning(
                    "cursor of %s not written: this process no longer owns the destination",
                    client.destination,
                )
                return
            path = self.cursor_path(client)
            data = codec.dumps_log_position(cursor)
            try:
                try:
                    self._call(self._client.set_async(path, data))
                except NoNodeError:
                    self._call(self._client.create_async(path, data, makepath=True))
            except (KazooException, KazooTimeoutError) as exc:
                raise MetaStoreUnavailable(path, _reason(exc)) from exc

    def _ensure_loaded(self, destination: str) -> None:
        """Read the destination's subscriptions and cursors once, on first use."""
        if destination in self._loaded:
            return
        with self._load_lock:
            if destination in self._loaded:
                return
            for client, cursor in self._read(destination):
                self._delegate.subscribe(client)
                if cursor is not None:
                    self._delegate.update_cursor(client, cursor)
            self._loaded.add(destination)

    def _read(self, destination: str) -> list[codec.ClientCursor]:
        path = self.destination_path(destination)
        clients: list[codec.ClientCursor] = []
        try:
            children = self._call(self._client.get_children_async(path))
        except NoNodeError:
            return clients
        except (KazooException, KazooTimeoutError) as exc:
            raise MetaStoreUnavailable(path, _reason(exc)) from exc
        for child in sorted(c for c in children if c.isdigit()):
            client = ClientIdentity(destination, int(child))
            filter_text = self._get(f"{path}/{child}/filter")
            if filter_text:
                client = ClientIdentity(destination, int(child), filter_text.decode())
            data = self._get(f"{path}/{child}/cursor")
            cursor = None
            if data:
                try:
                    cursor = codec.loads_log_position(data)
                except MetaCodecError as exc:
                    raise CorruptCursor(f"{path}/{child}/cursor", str(exc)) from exc
            clients.append((client, cursor))
        return clients

    def _get(self, path: str) -> bytes | None:
        try:
            data, _ = self._call(self._client.get_async(path))
        except NoNodeError:
            return None
        except (KazooException, KazooTimeoutError) as exc:
            raise MetaStoreUnavailable(path, _reason(exc)) from exc
        return bytes(data) if data else None

    @staticmethod
    def _call(result: Any) -> Any:
        return result.get(timeout=REQUEST_TIMEOUT_S)

    def _mark_dirty(self, client: ClientIdentity) -> None:
        self._flusher.mark(client)

    # -- MetaManager, delegated --------------------------------------------------------------

    def subscribe(self, client: ClientIdentity) -> None:
        self._check()
        path = self.client_path(client)
        self._ensure_loaded(client.destination)
        self._delegate.subscribe(client)
        try:
            with contextlib.suppress(NodeExistsError):
                self._call(self._client.create_async(path, b"", makepath=True))
            filter_path = f"{path}/filter"
            if client.filter:
                try:
                    self._call(self._client.set_async(filter_path, client.filter.encode()))
                except NoNodeError:
                    self._call(self._client.create_async(filter_path, client.filter.encode()))
            else:
                with contextlib.suppress(NoNodeError):
                    self._call(self._client.delete_async(filter_path))
        except (KazooException, KazooTimeoutError) as exc:
            raise MetaStoreUnavailable(path, _reason(exc)) from exc

    def unsubscribe(self, client: ClientIdentity) -> None:
        self._check()
        self._ensure_loaded(client.destination)
        self._delegate.unsubscribe(client)
        path = self.client_path(client)
        with self._write_lock:
            try:
                self._call(self._client.delete_async(f"{path}/cursor"))
            except NoNodeError:
                pass
            except (KazooException, KazooTimeoutError) as exc:
                raise MetaStoreUnavailable(path, _reason(exc)) from exc
            try:
                self._client.delete(path, recursive=True)
            except NoNodeError:
                pass
            except (KazooException, KazooTimeoutError) as exc:
                raise MetaStoreUnavailable(path, _reason(exc)) from exc

    def has_subscribe(self, client: ClientIdentity) -> bool:
        self._loaded_for(client.destination)
        return self._delegate.has_subscribe(client)

    def list_subscriptions(self, destination: str) -> list[ClientIdentity]:
        self._loaded_for(destination)
        return self._delegate.list_subscriptions(destination)

    def get_cursor(self, client: ClientIdentity) -> LogPosition | None:
        self._loaded_for(client.destination)
        return self._delegate.get_cursor(client)

    def update_cursor(self, client: ClientIdentity, position: LogPosition) -> None:
        self._loaded_for(client.destination)
        self._delegate.update_cursor(client, position)
        self._mark_dirty(client)  # after the update: a flush never misses it

    def _loaded_for(self, destination: str) -> None:
        if self._running:  # stopped: the delegate raises MetaNotRunning
            self._ensure_loaded(destination)

    def _check(self) -> None:
        if not self._running:
            raise MetaNotRunning()


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__} {exc}".rstrip()
