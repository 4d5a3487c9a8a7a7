"""The schema history in ZooKeeper, beside the destination's cursor, for HA: a process that
takes a destination over decodes its backlog with the history its previous owner kept.

Layout, below ``{root}/destinations/{destination}/schema``::

    current                 the generation in use (``g<ns>``)
    g<ns>/base/c0000...     the base document (``store.document_of``), zlib-compressed, cut
                            into chunks under ZooKeeper's 1 MB node limit
    g<ns>/log/r0000000001   one DDL record each, persistent sequential nodes, in binlog order

``replace`` writes a new generation and then points ``current`` at it (one write: a reader
sees the old history or the new one, never a mix), then deletes the old one. Writes happen
only while ``may_write`` says so (this process's session owns the destination's running
node): a process that lost the destination never changes its new owner's history.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from bridge.meta.exceptions import MetaStoreUnavailable
from bridge.schema.codec import DdlRecord, HistoryCodecError, record_from_json, record_to_json
from bridge.schema.exceptions import SchemaHistoryDamaged
from bridge.schema.store import StoredHistory, document_of, history_of, with_logged

log = logging.getLogger(__name__)

CHUNK_BYTES = 512 * 1024


class HistoryStoreUnavailable(MetaStoreUnavailable):
    """ZooKeeper did not answer: as for a cursor, the destination retries with back-off and
    its history stays as it was."""


class ZooKeeperHistoryStore:
    def __init__(
        self, client: Any, path: str, may_write: Callable[[], bool] = lambda: True
    ) -> None:
        """``client``: a started kazoo client; ``path``: the history's node."""
        self._client = client
        self.path = path.rstrip("/")
        self._may_write = may_write
        self._generation: str | None = None

    def __repr__(self) -> str:
        return f"ZooKeeperHistoryStore({self.path!r})"

    def load(self) -> StoredHistory | None:
        with self._errors("reading"):
            try:
                current, _ = self._client.get(f"{self.path}/current")
            except NoNodeError:
                return None
            generation = current.decode()
            base_path = f"{self.path}/{generation}/base"
            try:
                chunks = sorted(self._client.get_children(base_path))
                blob = b"".join(self._client.get(f"{base_path}/{c}")[0] for c in chunks)
                logged = sorted(self._client.get_children(f"{self.path}/{generation}/log"))
                records = [self._client.get(f"{self.path}/{generation}/log/{n}")[0] for n in logged]
            except NoNodeError as exc:
                raise SchemaHistoryDamaged(self.path, f"{generation} is incomplete") from exc
        try:
            base = history_of(json.loads(zlib.decompress(blob)))
            parsed = [record_from_json(json.loads(r)) for r in records]
        except (ValueError, zlib.error, HistoryCodecError) as exc:
            raise SchemaHistoryDamaged(f"{self.path}/{generation}", str(exc)) from exc
        self._generation = generation
        return with_logged(base, parsed)

    def replace(self, history: StoredHistory) -> None:
        if not self._may_write():
            log.info("%s: not written, this process no longer runs the destination", self.path)
            return
        blob = zlib.compress(json.dumps(document_of(history)).encode())
        generation = f"g{time.time_ns()}"
        with self._errors("writing"):
            for index in range(0, max(len(blob), 1), CHUNK_BYTES):
                self._client.create(
                    f"{self.path}/{generation}/base/c{index // CHUNK_BYTES:06d}",
                    blob[index : index + CHUNK_BYTES],
                    makepath=True,
                )
            self._client.ensure_path(f"{self.path}/{generation}/log")
            try:
                self._client.set(f"{self.path}/current", generation.encode())
            except NoNodeError:
                try:
                    self._client.create(f"{self.path}/current", generation.encode())
                except NodeExistsError:
                    self._client.set(f"{self.path}/current", generation.encode())
            for old in self._client.get_children(self.path):
                if old not in ("current", generation):
                    self._client.delete(f"{self.path}/{old}", recursive=True)
        self._generation = generation

    def append(self, record: DdlRecord) -> None:
        if not self._may_write():
            return
        if self._generation is None:
            self.load()
        with self._errors("writing"):
            self._client.create(
                f"{self.path}/{self._generation}/log/r",
                json.dumps(record_to_json(record)).encode(),
                sequence=True,
            )

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """kazoo's connection errors as ``HistoryStoreUnavailable`` naming the node."""
        try:
            yield
        except (KazooTimeoutError, KazooException) as exc:
            if isinstance(exc, NoNodeError):
                raise
            raise HistoryStoreUnavailable(
                self.path, f"{doing} the schema history: {exc!r}"
            ) from exc
