"""Cursors in files (the store of canal's FileMixedMetaManager).

Layout: ``<directory>/<destination>/meta.dat`` (JSON, see ``bridge.meta.codec``), holding each
subscribed client of the destination with its acked cursor, replaced atomically on every save
(``bridge.meta.files``). ``open`` names every destination folder, so all ``meta.dat`` files are
read at start; one that does not parse raises ``CorruptMetaFile`` naming it, never a silent
reset.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from bridge.meta import codec, files
from bridge.meta.base import ClientCursor
from bridge.meta.exceptions import CorruptMetaFile, MetaCodecError, MetaError, MetaWriteFailed

META_FILE = "meta.dat"

log = logging.getLogger(__name__)


class FileCursorStore:
    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"FileCursorStore({str(self.directory)!r})"

    def meta_file(self, destination: str) -> Path:
        return self.directory / _checked_destination(destination) / META_FILE

    def open(self) -> list[str]:
        """Create the directory; every folder in it that can name a destination is loaded."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return sorted(
            folder.name
            for folder in self.directory.iterdir()
            if folder.is_dir() and _is_destination(folder.name)
        )

    def load(self, destination: str) -> list[ClientCursor]:
        path = self.meta_file(destination)
        for leftover in files.remove_temp_files(path):
            log.warning("removed %s, left by an interrupted meta write", leftover)
        if not path.exists():
            return []
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

    def save(self, destination: str, cursors: Sequence[ClientCursor]) -> None:
        path = self.meta_file(destination)
        data = codec.dumps_meta_file(destination, cursors)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            files.write_atomic(path, data)
        except OSError as exc:
            raise MetaWriteFailed(path, str(exc)) from exc


def _is_destination(name: str) -> bool:
    """Destinations name directories: one plain path component, not hidden."""
    return bool(name) and not name.startswith(".") and not any(c in name for c in "/\\\0")


def _checked_destination(destination: str) -> str:
    if not _is_destination(destination):
        raise MetaError(f"destination {destination!r} cannot name a meta directory")
    return destination
