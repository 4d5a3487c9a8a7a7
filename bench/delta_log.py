"""When each row of a Delta table became visible, read from the table's log outside Spark.

A reader sees a row from the first table version whose added files hold it: that version's
commit (``_delta_log/<version>.json``: a ``commitInfo`` line with the commit's wall-clock
``timestamp`` in milliseconds and one ``add`` line per file). ``TableWatch`` reads the
versions as they appear and the Parquet files they add (with pyarrow, key column only) and
keeps, per key, the timestamp of the first version that added it. Reading outside Spark keeps
the measurement off the job's JVM and its clock off Spark's scheduling: the job under test
pays nothing for being watched but the file reads.

A file added again (a deletion vector added to it) or rewritten by a later MERGE does not
move a key's time: only the first version counts. Files name their columns by the physical
names of Delta's column mapping when the table uses it (the mirror's tables do), taken from
the schema of the last ``metaData`` action. A key in a file counts whatever its row holds (a
mirror's tombstone too): time inserts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq  # type: ignore[import-untyped]


@dataclass(frozen=True, slots=True)
class Commit:
    version: int
    timestamp_ms: int
    added: tuple[str, ...]  # the data files added, relative to the table's folder
    schema: str | None = None  # the table's schema (JSON) when this version sets it


def parse_commit(version: int, text: str) -> Commit:
    """The commit of ``version`` from its log file's ``text`` (one JSON action per line).
    Raises ``ValueError`` when it has no ``commitInfo`` timestamp: a table written without
    one (``delta.commitInfo`` disabled) cannot be timed this way."""
    timestamp: int | None = None
    schema: str | None = None
    added: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            timestamp = int(action["commitInfo"]["timestamp"])
        elif "add" in action:
            added.append(unquote(action["add"]["path"]))
        elif "metaData" in action:
            schema = action["metaData"]["schemaString"]
    if timestamp is None:
        raise ValueError(f"version {version} has no commitInfo timestamp")
    return Commit(version, timestamp, tuple(added), schema)


def physical_name(schema: str, column: str) -> str:
    """The name ``column`` has in the data files: its column-mapping physical name when the
    schema gives one, else its own. Raises ``KeyError`` when the schema has no such column."""
    for field in json.loads(schema)["fields"]:
        if field["name"] == column:
            mapped = field.get("metadata", {}).get("delta.columnMapping.physicalName")
            return str(mapped or column)
    raise KeyError(f"no column {column!r} in the table's schema")


class TableWatch:
    """The keys of one Delta table and when each first became visible, read as the table
    grows: ``poll`` reads the versions committed since the last call."""

    def __init__(self, table: Path, key: str = "id") -> None:
        self.table = table
        self.key = key
        self.visible_ms: dict[int, int] = {}
        self.key_in_files = key
        self.next_version = 0
        self._read_files: set[str] = set()

    def poll(self) -> int:
        """Read the new versions (none while the table does not exist yet); returns how many.
        A version's file is read once it exists: Delta writes it atomically (rename or
        put-if-absent), so a file present is complete."""
        count = 0
        while (log := self._log_file(self.next_version)).exists():
            commit = parse_commit(self.next_version, log.read_text())
            if commit.schema is not None:
                self.key_in_files = physical_name(commit.schema, self.key)
            for path in commit.added:
                for key in self._keys_of(path):
                    self.visible_ms.setdefault(key, commit.timestamp_ms)
            self.next_version += 1
            count += 1
        return count

    def _log_file(self, version: int) -> Path:
        return self.table / "_delta_log" / f"{version:020d}.json"

    def _keys_of(self, path: str) -> list[int]:
        if path in self._read_files:
            return []
        self._read_files.add(path)
        name = self.key_in_files
        column = pq.read_table(self.table / path, columns=[name]).column(name)
        return [int(k) for k in column.to_pylist() if k is not None]
