"""``bench.delta_log``: a row is visible from the first Delta version whose added files hold
it, timed by that version's commitInfo; later versions that add the row again (a MERGE
rewriting its file, a deletion vector added to the file) do not move it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.delta_log import TableWatch, parse_commit, physical_name


def schema(physical: str | None) -> str:
    metadata = {"delta.columnMapping.physicalName": physical} if physical else {}
    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": metadata},
        {"name": "qty", "type": "integer", "nullable": True, "metadata": {}},
    ]
    return json.dumps({"type": "struct", "fields": fields})


def commit_text(timestamp: int | None, *paths: str, table_schema: str | None = None) -> str:
    lines: list[dict[str, object]] = []
    if timestamp is not None:
        lines.append({"commitInfo": {"timestamp": timestamp}})
    if table_schema is not None:
        lines.append({"metaData": {"schemaString": table_schema}})
    lines += [{"add": {"path": path, "dataChange": True}} for path in paths]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def write_version(
    table: Path,
    version: int,
    timestamp: int,
    files: dict[str, list[int | None]],
    table_schema: str | None = None,
) -> None:
    """A version adding ``files`` (written with ``id`` as column ``col-1``, its physical
    name, when not there yet)."""
    for path, ids in files.items():
        target = table / path.replace("%20", " ")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"col-1": ids, "qty": [0] * len(ids)}), target)
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    text = commit_text(timestamp, *files, table_schema=table_schema)
    (log / f"{version:020d}.json").write_text(text)


def test_a_commit_is_its_timestamp_and_added_paths_decoded() -> None:
    text = commit_text(1_000, "part-0.parquet", "d=1/part%201.parquet")
    text += json.dumps({"remove": {"path": "old.parquet"}}) + "\n"
    assert parse_commit(3, text).timestamp_ms == 1_000
    assert parse_commit(3, text).added == ("part-0.parquet", "d=1/part 1.parquet")


def test_a_commit_without_commit_info_is_refused() -> None:
    with pytest.raises(ValueError, match="version 7 has no commitInfo"):
        parse_commit(7, commit_text(None, "part-0.parquet"))


def test_a_mapped_column_is_read_by_its_physical_name() -> None:
    assert physical_name(schema("col-1"), "id") == "col-1"
    assert physical_name(schema(None), "id") == "id"
    with pytest.raises(KeyError, match="no column 'key'"):
        physical_name(schema(None), "key")
    assert parse_commit(0, commit_text(5, table_schema=schema(None))).schema == schema(None)


def test_each_key_keeps_the_first_version_that_added_it(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    watch = TableWatch(table)
    assert watch.poll() == 0  # no table yet
    write_version(table, 0, 1_000, {}, schema("col-1"))  # the table created, empty
    write_version(table, 1, 2_000, {"a.parquet": [1, 2]})
    assert watch.poll() == 2
    assert watch.visible_ms == {1: 2_000, 2: 2_000}
    # Row 2 rewritten into b, a added again (a deletion vector), then a file with a NULL key.
    write_version(table, 2, 3_000, {"b.parquet": [2, 3], "a.parquet": [1, 2]})
    write_version(table, 3, 4_000, {"c%20d.parquet": [None, 4]})
    assert watch.poll() == 2
    assert watch.visible_ms == {1: 2_000, 2: 2_000, 3: 3_000, 4: 4_000}
    assert watch.poll() == 0
