"""Cursors in ZooKeeper (the store of canal's ZooKeeperMetaManager), in canal's layout and JSON
(``bridge.meta.codec``)::

    {root}/destinations/{destination}/{client_id}           persistent: the subscription
    {root}/destinations/{destination}/{client_id}/filter    persistent: its filter, if any
    {root}/destinations/{destination}/{client_id}/cursor    persistent: the acked LogPosition

A cursor written by canal reads back here and vice versa. Nothing is read at ``open``: a
destination is loaded on first use, so a process that takes it over resumes from the last
cursor its previous owner wrote.

``save`` writes only what differs from what this store last read or wrote: new or removed
subscriptions, changed filters, changed cursors. A cursor is written only while
``may_write(destination)`` says yes: in HA mode that is "this process's session owns the
destination's running node" (``bridge.ha.ZkFence.holds``), so a process that lost a
destination never moves the new owner's cursor. A refused cursor is dropped (the new owner has
its own).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from bridge.meta import codec
from bridge.meta.base import ClientCursor, ClientIdentity
from bridge.meta.exceptions import CorruptCursor, MetaCodecError, MetaError, MetaStoreUnavailable
from bridge.position import LogPosition

DEFAULT_ROOT = "/otter/canal"
REQUEST_TIMEOUT_S = 5.0

log = logging.getLogger(__name__)


def _always(_destination: str) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class _Known:
    """A client's nodes as this store last read or wrote them."""

    filter: str
    cursor: LogPosition | None


class ZooKeeperCursorStore:
    def __init__(
        self,
        client: Any,  # a started kazoo KazooClient (kazoo has no type hints)
        root: str = DEFAULT_ROOT,
        may_write: Callable[[str], bool] | None = None,
    ) -> None:
        self._client = client
        self.root = root.rstrip("/")
        self._may_write = may_write or _always
        self._known: dict[str, dict[int, _Known]] = {}  # destination -> client id -> nodes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ZooKeeperCursorStore({self.root!r})"

    # -- paths -------------------------------------------------------------------------------

    def destination_path(self, destination: str) -> str:
        if not destination or "/" in destination or destination in (".", ".."):
            raise MetaError(f"destination {destination!r} cannot name a ZooKeeper node")
        return f"{self.root}/destinations/{destination}"

    def client_path(self, client: ClientIdentity) -> str:
        return f"{self.destination_path(client.destination)}/{client.client_id}"

    def cursor_path(self, client: ClientIdentity) -> str:
        return f"{self.client_path(client)}/cursor"

    # -- CursorStore -------------------------------------------------------------------------

    def open(self) -> list[str]:
        return []

    def load(self, destination: str) -> list[ClientCursor]:
        path = self.destination_path(destination)
        with self._lock:
            clients: list[ClientCursor] = []
            try:
                children = self._call(self._client.get_children_async(path))
            except NoNodeError:
                children = []
            except (KazooException, KazooTimeoutError) as exc:
                raise MetaStoreUnavailable(path, _reason(exc)) from exc
            for child in sorted(c for c in children if c.isdigit()):
                filter_text = self._get(f"{path}/{child}/filter")
                client = ClientIdentity(
                    destination, int(child), filter_text.decode() if filter_text else ""
                )
                data = self._get(f"{path}/{child}/cursor")
                cursor = None
                if data:
                    try:
                        cursor = codec.loads_log_position(data)
                    except MetaCodecError as exc:
                        raise CorruptCursor(f"{path}/{child}/cursor", str(exc)) from exc
                clients.append((client, cursor))
            self._known[destination] = {c.client_id: _Known(c.filter, p) for c, p in clients}
            return clients

    def save(self, destination: str, cursors: Sequence[ClientCursor]) -> None:
        self.destination_path(destination)
        with self._lock:
            known = self._known.setdefault(destination, {})
            wanted = {client.client_id for client, _ in cursors}
            for client_id in sorted(set(known) - wanted):
                self._delete(ClientIdentity(destination, client_id))
                del known[client_id]
            allowed: bool | None = None
            for client, cursor in cursors:
                node = known.get(client.client_id)
                if node is None or node.filter != client.filter:
                    self._write_subscription(client, created=node is not None)
                    node = known[client.client_id] = _Known(
                        client.filter, None if node is None else node.cursor
                    )
                if cursor is None or cursor == node.cursor:
                    continue
                if allowed is None:
                    allowed = self._may_write(destination)
                if not allowed:
                    log.warning(
                        "cursor of %s not written: this process no longer owns the destination",
                        destination,
                    )
                    continue
                self._write_cursor(client, cursor)
                known[client.client_id] = _Known(client.filter, cursor)

    # -- writes ------------------------------------------------------------------------------

    def _write_subscription(self, client: ClientIdentity, *, created: bool) -> None:
        """The client's node (unless ``created``) and its filter node, set or deleted."""
        path = self.client_path(client)
        try:
            if not created:
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

    def _write_cursor(self, client: ClientIdentity, cursor: LogPosition) -> None:
        path = self.cursor_path(client)
        data = codec.dumps_log_position(cursor)
        try:
            try:
                self._call(self._client.set_async(path, data))
            except NoNodeError:
                self._call(self._client.create_async(path, data, makepath=True))
        except (KazooException, KazooTimeoutError) as exc:
            raise MetaStoreUnavailable(path, _reason(exc)) from exc

    def _delete(self, client: ClientIdentity) -> None:
        """The client's cursor, then its node with whatever is left below it."""
        path = self.client_path(client)
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

    # -- reads -------------------------------------------------------------------------------

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


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__} {exc}".rstrip()
