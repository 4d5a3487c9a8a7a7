"""Where a destination's schema history is kept: beside its cursor.

A history is a base (every definition at one position) and the log of DDL records read after
it. ``FileHistoryStore`` keeps them in the destination's meta folder, next to ``meta.dat``:

- ``schema.dat``: the base and the records folded with it, replaced atomically
  (``bridge.meta.files.write_atomic``) when the history is compacted or begun;
- ``schema.log``: one JSON record per line, appended and fsynced as each DDL is read.

A crash between the two writes leaves records in the log that ``schema.dat`` already holds:
they are recognised by position and dropped at load. A last line cut short by a crash is a
record whose DDL was never delivered (the cursor is before it): it is dropped with a warning.
Anything else that does not parse is damage, refused with the file named: a history is
never guessed.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bridge.config import BridgeConfig
from bridge.meta import files
from bridge.schema.codec import (
    DdlRecord,
    HistoryCodecError,
    Mark,
    mark_from_json,
    mark_to_json,
    record_from_json,
    record_to_json,
    schemas_from_json,
    schemas_to_json,
)
from bridge.schema.definitions import Schemas
from bridge.schema.exceptions import SchemaHistoryDamaged

log = logging.getLogger(__name__)

BASE_FILE = "schema.dat"
LOG_FILE = "schema.log"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class StoredHistory:
    """``schemas`` hold at ``mark``; ``records`` follow it in binlog order."""

    mark: Mark
    schemas: Schemas
    records: tuple[DdlRecord, ...]


def document_of(history: StoredHistory) -> dict[str, Any]:
    """A history as one JSON document (a store's base)."""
    return {
        "version": FORMAT_VERSION,
        "at": mark_to_json(history.mark),
        "definitions": schemas_to_json(history.schemas),
        "records": [record_to_json(r) for r in history.records],
    }


def history_of(document: Any) -> StoredHistory:
    """``document_of`` read back; ``HistoryCodecError`` (a ValueError) when it is not one."""
    try:
        if document.get("version") != FORMAT_VERSION:
            raise HistoryCodecError(f"format version {document.get('version')!r}")
        return StoredHistory(
            mark_from_json(document["at"]),
            schemas_from_json(document["definitions"]),
            tuple(record_from_json(r) for r in document["records"]),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise HistoryCodecError(f"a history document without a valid {exc}") from exc


def with_logged(base: StoredHistory, logged: list[DdlRecord]) -> StoredHistory:
    """The base with the logged records it does not hold yet (a crash between writing a new
    base and emptying the log leaves records in both)."""
    last = base.records[-1].mark.sort_key() if base.records else base.mark.sort_key()
    fresh = tuple(r for r in logged if r.mark.sort_key() > last)
    return StoredHistory(base.mark, base.schemas, (*base.records, *fresh))


class HistoryStore(Protocol):
    """What the recorder needs of a store: read it all, replace it all, add one record."""

    def load(self) -> StoredHistory | None: ...

    def replace(self, history: StoredHistory) -> None: ...

    def append(self, record: DdlRecord) -> None: ...


class FileHistoryStore:
    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def __repr__(self) -> str:
        return f"FileHistoryStore({str(self.folder)!r})"

    @property
    def base_file(self) -> Path:
        return self.folder / BASE_FILE

    @property
    def log_file(self) -> Path:
        return self.folder / LOG_FILE

    def load(self) -> StoredHistory | None:
        files.remove_temp_files(self.base_file)
        if not self.base_file.exists():
            if self.log_file.exists() and self.log_file.stat().st_size:
                raise SchemaHistoryDamaged(
                    str(self.folder), f"{LOG_FILE} is there without {BASE_FILE}"
                )
            return None
        try:
            base = history_of(json.loads(self.base_file.read_bytes()))
        except (OSError, ValueError) as exc:
            raise SchemaHistoryDamaged(str(self.base_file), str(exc)) from exc
        return with_logged(base, self._logged())

    def _logged(self) -> list[DdlRecord]:
        if not self.log_file.exists():
            return []
        lines = self.log_file.read_bytes().split(b"\n")
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(record_from_json(json.loads(line)))
            except (ValueError, HistoryCodecError) as exc:
                if number >= len(lines) - 1:  # the last line, cut short by a crash
                    log.warning(
                        "%s: dropped its last record, cut short (a crash while it was "
                        "written; its statement is read again from the binlog)",
                        self.log_file,
                    )
                    continue
                raise SchemaHistoryDamaged(str(self.log_file), f"line {number}: {exc}") from exc
        return records

    def replace(self, history: StoredHistory) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        files.write_atomic(self.base_file, json.dumps(document_of(history)).encode())
        files.write_atomic(self.log_file, b"")

    def append(self, record: DdlRecord) -> None:
        line = json.dumps(record_to_json(record)).encode() + b"\n"
        with open(self.log_file, "ab") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())


class MemoryHistoryStore:
    """A history kept in this process only: for a destination whose cursor is in memory
    too (``meta.store: memory``), and for tests."""

    def __init__(self) -> None:
        self._history: StoredHistory | None = None
        self._log: list[DdlRecord] = []

    def load(self) -> StoredHistory | None:
        if self._history is None:
            return None
        history = self._history
        return StoredHistory(history.mark, history.schemas.copy(), (*history.records, *self._log))

    def replace(self, history: StoredHistory) -> None:
        self._history = StoredHistory(history.mark, history.schemas.copy(), history.records)
        self._log = []

    def append(self, record: DdlRecord) -> None:
        self._log.append(record)


def history_store(config: BridgeConfig, destination: str) -> HistoryStore | None:
    """Where a destination's history is kept without HA: beside its cursor file, or None
    for in memory (``meta.store: memory``, whose cursor is not kept either). With HA and
    ``meta.store: zookeeper`` it is in ZooKeeper (``bridge.ha.HaNode.history_store``)."""
    if config.meta.store == "memory":
        return None
    return FileHistoryStore(config.meta.dir / destination)
