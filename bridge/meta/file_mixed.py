"""canal's FileMixedMetaManager: any in-memory manager plus cursors persisted to files.

Layout: ``<directory>/<destination>/meta.dat`` (JSON, see ``bridge.meta.codec``), holding each
subscribed client of the destination with its acked cursor. Batches stay in memory only: after
a restart, unacked batches are simply delivered again from the cursor.

When files are written:

* cursor updates mark their destination dirty; a background thread writes dirty destinations
  every ``flush_period_ms`` (so a cursor written at most that long ago may be lost on a crash:
  the tail after it is delivered again, nothing is skipped);
* subscribe/unsubscribe write their destination at once (rare, and must not be lost);
* ``stop()`` writes whatever is still dirty.

A failed periodic write is logged and retried next period; ``stop()`` raises it if the final
write fails too. On ``start`` every existing ``meta.dat`` is loaded; one that does not parse
raises ``CorruptMetaFile`` naming it, never a silent reset.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from bridge.meta import codec, files
from bridge.meta.base import ClientIdentity, MetaManager
from bridge.meta.exceptions import (
    CorruptMetaFile,
    MetaAlreadyStarted,
    MetaCodecError,
    MetaError,
    MetaNotRunning,
    MetaWriteFailed,
)
from bridge.meta.flushing import MixedMetaManager, PeriodicFlusher
from bridge.position import LogPosition

META_FILE = "meta.dat"

log = logging.getLogger(__name__)


class FileMixedMetaManager(MixedMetaManager):
    def __init__(
        self, delegate: MetaManager, directory: Path | str, flush_period_ms: int = 1000
    ) -> None:
        self._delegate = delegate
        self.directory = Path(directory)
        self._running = False
        self._write_lock = threading.Lock()  # one writer at a time: no older content wins
        self._flusher: PeriodicFlusher[str] = PeriodicFlusher(
            self._write, flush_period_ms, f"meta-flush:{self.directory}"
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            raise MetaAlreadyStarted()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._delegate.start()
        try:
            self._load_all()
        except BaseException:
            self._delegate.stop()
            raise
        self._running = True
        self._flusher.start()

    # -- persistence -------------------------------------------------------------------------

    def meta_file(self, destination: str) -> Path:
        return self.directory / _checked_destination(destination) / META_FILE

    def _write(self, destination: str) -> None:
        path = self.meta_file(destination)
        with self._write_lock:
            clients = [
                (client, self._delegate.get_cursor(client))
                for client in self._delegate.list_subscriptions(destination)
            ]
            data = codec.dumps_meta_file(destination, clients)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                files.write_atomic(path, data)
            except OSError as exc:
                raise MetaWriteFailed(path, str(exc)) from exc

    def _load_all(self) -> None:
        for folder in sorted(p for p in self.directory.iterdir() if p.is_dir()):
            path = folder / META_FILE
            for leftover in files.remove_temp_files(path):
                log.warning("removed %s, left by an interrupted meta write", leftover)
            if not path.exists():
                continue
            destination = folder.name
            for client, cursor in self._read(path, destination):
                self._delegate.subscribe(client)
                if cursor is not None:
                    self._delegate.update_cursor(client, cursor)

    @staticmethod
    def _read(path: Path, destination: str) -> list[codec.ClientCursor]:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorruptMetaFile(path, f"unreadable: {exc}") from exc
        if not data.strip():
            raise CorruptMetaFile(path, "the file is empty")
        try:
            named, clients = codec.loads_meta_file(data)
        except MetaCodecError as exc:
            raise CorruptMetaFile(path, str(exc)) from exc
        if named != destination:
            raise CorruptMetaFile(path, f"it belongs to destination {named!r}, not {destination!r}")
        return clients

    def _mark_dirty(self, destination: str) -> None:
        self._flusher.mark(destination)

    # -- MetaManager, delegated --------------------------------------------------------------

    def subscribe(self, client: ClientIdentity) -> None:
        self._check()
        _checked_destination(client.destination)
        self._delegate.subscribe(client)
        self._mark_dirty(client.destination)
        self.flush(raise_errors=True)

    def unsubscribe(self, client: ClientIdentity) -> None:
        self._check()
        self._delegate.unsubscribe(client)
        self._mark_dirty(client.destination)
        self.flush(raise_errors=True)

    def has_subscribe(self, client: ClientIdentity) -> bool:
        return self._delegate.has_subscribe(client)

    def list_subscriptions(self, destination: str) -> list[ClientIdentity]:
        return self._delegate.list_subscriptions(destination)

    def get_cursor(self, client: ClientIdentity) -> LogPosition | None:
        return self._delegate.get_cursor(client)

    def update_cursor(self, client: ClientIdentity, position: LogPosition) -> None:
        self._delegate.update_cursor(client, position)
        self._mark_dirty(client.destination)  # after the update: a flush never misses it

    def _check(self) -> None:
        if not self._running:
            raise MetaNotRunning()


def _checked_destination(destination: str) -> str:
    """Destinations name directories: refuse anything that is not one plain path component."""
    if (
        not destination
        or destination in (".", "..")
        or any(c in destination for c in "/\\\0")
        or destination.startswith(".")
    ):
        raise MetaError(f"destination {destination!r} cannot name a meta directory")
    return destination
