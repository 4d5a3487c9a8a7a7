"""On-demand snapshot requests through ZooKeeper (docs/snapshots.md, "On demand").

In HA mode ``canal-bridge snapshot`` cannot know which process runs a destination, and that
process may change before the request is done. So the request is a persistent sequential node
``{root}/destinations/{dest}/snapshot-requests/req-N`` holding ``{"tables": [...]}``
(``write_request``); the process running the destination watches that folder
(``SnapshotRequestWatcher``), performs each request through its instance and deletes the node
once the cursor carries the plan. A fail-over before that leaves the node for the next active
process, which performs it again (a request is done at least once; its tables start again from
their first row either way).

A request the destination refuses (unknown or filtered-out tables) is not deleted: its node
gets ``"refused": "<the reason>"`` for the command to print; the command deletes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bridge.backoff import Backoff
from bridge.exceptions import BridgeError
from bridge.ha.paths import ZkLayout
from bridge.ha.session import ZkSession
from bridge.instance import UnknownDestination
from bridge.snapshot.exceptions import SnapshotRequestRefused
from bridge.snapshot.requests import RequestOutcome, parse_tables

log = logging.getLogger(__name__)

TICK_S = 1.0
RETRY_MAX_S = 30.0
# How long the watcher lets an instance take to get a request's plan into its cursor.
PERFORM_WAIT_S = 60.0


class SnapshotPerformer(Protocol):
    """What runs destinations here (``bridge.runner.Runner``)."""

    def request_snapshot(
        self, destination: str, tables: Sequence[str], timeout_s: float = ...
    ) -> RequestOutcome: ...


@dataclass(frozen=True, slots=True)
class RequestNode:
    """A request node's content: the tables and, once refused, why."""

    tables: tuple[str, ...]
    refused: str | None = None

    def dumps(self) -> bytes:
        document: dict[str, object] = {"tables": list(self.tables)}
        if self.refused is not None:
            document["refused"] = self.refused
        return json.dumps(document, separators=(",", ":")).encode()

    @classmethod
    def loads(cls, data: bytes) -> RequestNode:
        """Raises ``ValueError`` (one line) for content that is not a request."""
        try:
            document = json.loads(data)
        except ValueError:
            raise ValueError("not JSON") from None
        if not isinstance(document, dict):
            raise ValueError('not a JSON object {"tables": [...]}')
        tables = document.get("tables") or []
        if document.get("refused"):
            names = tables if isinstance(tables, list) else []
            return cls(tuple(str(name) for name in names), str(document["refused"]))
        return cls(parse_tables(tables))


def write_request(
    client: KazooClient, layout: ZkLayout, destination: str, tables: Sequence[str]
) -> str:
    """Create the request node; its path."""
    prefix = layout.snapshot_request_prefix(destination)
    path: str = client.create(
        prefix, RequestNode(tuple(tables)).dumps(), sequence=True, makepath=True
    )
    return path


def wait_for_request(
    client: KazooClient, path: str, timeout_s: float, poll_s: float = 0.2
) -> RequestNode | None:
    """Wait until the request at ``path`` is performed (None: its node is gone) or refused
    (the node, with ``refused``); after ``timeout_s`` the node as it stands (still pending)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            data, _ = client.get(path)
        except NoNodeError:
            return None
        node = RequestNode.loads(data)
        if node.refused is not None or time.monotonic() >= deadline:
            return node
        time.sleep(poll_s)


class SnapshotRequestWatcher:
    """Performs the request nodes of the destinations this process runs (``active``)."""

    def __init__(
        self,
        session: ZkSession,
        layout: ZkLayout,
        active: Callable[[], list[str]],
        performer: SnapshotPerformer,
        *,
        tick_s: float = TICK_S,
        perform_wait_s: float = PERFORM_WAIT_S,
    ) -> None:
        self._session = session
        self._layout = layout
        self._active = active
        self._performer = performer
        self.tick_s = tick_s
        self.perform_wait_s = perform_wait_s
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("snapshot request watcher already started")
        self._thread = threading.Thread(target=self._loop, name="ha-snapshot-requests", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.perform_wait_s + 5)

    def _watch(self, _event: object) -> None:
        self._wake.set()

    def _loop(self) -> None:
        """A round per tick or watch event; failed rounds back off with one line each."""
        retry = Backoff(self.tick_s, max(RETRY_MAX_S, self.tick_s))
        while not self._stopping.is_set():
            wait_s = self.tick_s
            try:
                if self._session.connected:
                    for destination in self._active():
                        self._perform_pending(destination)
                retry.reset()
            except Exception as exc:
                wait_s = retry.next()
                log.warning(
                    "snapshot requests: round failed, trying again in %.1f s: %s%s",
                    wait_s,
                    "" if isinstance(exc, BridgeError) else f"{type(exc).__name__}: ",
                    exc,
                )
            self._wake.wait(wait_s)
            self._wake.clear()

    def _perform_pending(self, destination: str) -> None:
        folder = self._layout.snapshot_requests(destination)
        client = self._session.client
        with self._session.errors(f"listing {folder}"):
            client.ensure_path(folder)
            children = sorted(client.get_children(folder, watch=self._watch))
        for child in children:
            if self._stopping.is_set():
                return
            self._perform(destination, f"{folder}/{child}")

    def _perform(self, destination: str, path: str) -> None:
        client = self._session.client
        with self._session.errors(f"reading {path}"):
            try:
                data, _ = client.get(path)
            except NoNodeError:
                return
        try:
            node = RequestNode.loads(data)
        except ValueError as exc:
            self._refuse(path, RequestNode(()), f"the request node holds no request ({exc})")
            return
        if node.refused is not None:
            return  # for the command to read and delete
        try:
            outcome = self._performer.request_snapshot(
                destination, node.tables, timeout_s=self.perform_wait_s
            )
        except SnapshotRequestRefused as exc:
            self._refuse(path, node, str(exc))
            return
        except UnknownDestination:
            return  # no longer ours: the next owner performs it
        if not outcome.persisted:
            log.warning(
                "destination %s: snapshot request %s planned, but not in the cursor after "
                "%.0f s; deleting it anyway (a crash before its acknowledgement loses it: ask "
                "again then)",
                destination,
                path.rsplit("/", 1)[-1],
                self.perform_wait_s,
            )
        with self._session.errors(f"deleting {path}"), contextlib.suppress(NoNodeError):
            client.delete(path)
        log.info(
            "destination %s: snapshot request %s performed: %s",
            destination,
            path.rsplit("/", 1)[-1],
            ", ".join(outcome.tables),
        )

    def _refuse(self, path: str, node: RequestNode, reason: str) -> None:
        log.error("snapshot request %s refused: %s", path, reason)
        with self._session.errors(f"writing {path}"), contextlib.suppress(NoNodeError):
            self._session.client.set(path, RequestNode(node.tables, reason).dumps())
