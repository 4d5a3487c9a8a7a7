"""The stored schema history: what a start decodes with, crash leftovers, damage, compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.entry import Entry, EntryType, EventType, Header, RowChange
from bridge.position import EntryPosition
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition
from bridge.schema.exceptions import SchemaHistoryDamaged
from bridge.schema.recorder import HistoryNotCovering, SchemaRecorder
from bridge.schema.store import FileHistoryStore, MemoryHistoryStore

JOURNAL = "mysql-bin.000001"


def _schemas() -> Schemas:
    schemas = Schemas(Dialect(), {"shop": "utf8mb4"}, {})
    schemas.tables[("shop", "t")] = TableDefinition(
        "shop",
        "t",
        (
            ColumnDefinition("id", "int", False),
            ColumnDefinition("a", "varchar(10)", True, "utf8mb4"),
        ),
        ("id",),
        "utf8mb4",
    )
    return schemas


def _ddl(offset: int, sql: str) -> Entry:
    header = Header(JOURNAL, offset, 1, 0, "shop", "t", EventType.ALTER, "")
    return Entry(header, EntryType.ROWDATA, RowChange(EventType.ALTER, True, sql, "shop"))


def _at(offset: int) -> EntryPosition:
    return EntryPosition(journal_name=JOURNAL, position=offset)


def _names(schemas: Schemas | None) -> list[str]:
    assert schemas is not None
    table = schemas.table("shop", "t")
    assert table is not None
    return [c.name for c in table.columns]


def test_a_start_decodes_with_the_ddl_before_it_and_drops_the_rest(tmp_path: Path) -> None:
    recorder = SchemaRecorder(FileHistoryStore(tmp_path))
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    recorder.record(_ddl(200, "ALTER TABLE t ADD COLUMN b INT"))
    recorder.record(_ddl(300, "ALTER TABLE t RENAME COLUMN a TO aa"))
    reopened = SchemaRecorder(FileHistoryStore(tmp_path))
    assert _names(reopened.schemas_at(_at(250))) == ["id", "a", "b"]
    # The statement at 300 was dropped by the start at 250: it is read again from there.
    again = SchemaRecorder(FileHistoryStore(tmp_path))
    assert _names(again.schemas_at(_at(400))) == ["id", "a", "b"]
    stored = again.stored()
    assert stored is not None and [r.mark.offset for r in stored.records] == [200]
    # A start at the base drops every record.
    assert _names(SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(100))) == ["id", "a"]
    assert FileHistoryStore(tmp_path).load().records == ()  # type: ignore[union-attr]


def test_a_start_before_the_history_is_not_covered(tmp_path: Path) -> None:
    recorder = SchemaRecorder(FileHistoryStore(tmp_path))
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    with pytest.raises(HistoryNotCovering):
        recorder.schemas_at(_at(50))
    assert recorder.schemas_at(_at(100)) is not None


def test_no_history_is_none(tmp_path: Path) -> None:
    assert SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(4)) is None


def test_a_record_cut_short_by_a_crash_is_dropped_other_damage_is_refused(
    tmp_path: Path,
) -> None:
    store = FileHistoryStore(tmp_path)
    recorder = SchemaRecorder(store)
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    recorder.record(_ddl(200, "ALTER TABLE t ADD COLUMN b INT"))
    with open(store.log_file, "ab") as log:
        log.write(b'{"at": {"journal": "mysql-bin.0000')
    assert _names(SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(300))) == [
        "id",
        "a",
        "b",
    ]
    store.log_file.write_bytes(b"not json\n" + b'{"at": {}}\n')
    with pytest.raises(SchemaHistoryDamaged, match=r"schema\.log"):
        SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(300))
    store.base_file.write_bytes(b"{")
    with pytest.raises(SchemaHistoryDamaged, match=r"schema\.dat"):
        FileHistoryStore(tmp_path).load()


def test_a_log_without_its_base_is_damage(tmp_path: Path) -> None:
    (tmp_path / "schema.log").write_bytes(b'{"x": 1}\n')
    with pytest.raises(SchemaHistoryDamaged, match=r"without schema\.dat"):
        FileHistoryStore(tmp_path).load()


def test_records_already_folded_into_the_base_are_not_applied_twice(tmp_path: Path) -> None:
    """A crash between writing the base and emptying the log leaves both holding a record."""
    store = FileHistoryStore(tmp_path)
    recorder = SchemaRecorder(store)
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    recorder.record(_ddl(200, "ALTER TABLE t ADD COLUMN b INT"))
    leftover = store.log_file.read_bytes()
    recorder.compact()  # no acked cursor: nothing folded
    acked = _at(250)
    folding = SchemaRecorder(store, acked=lambda: acked)
    folding.compact()
    store.log_file.write_bytes(leftover)  # the log as it was before the fold
    assert _names(SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(300))) == [
        "id",
        "a",
        "b",
    ]


def test_the_history_stays_bounded_and_equal_to_its_replay() -> None:
    store = MemoryHistoryStore()
    acked: list[EntryPosition] = [_at(100)]
    recorder = SchemaRecorder(store, acked=lambda: acked[-1], compact_after=50)
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    for step in range(1, 2001):
        offset = 100 + step * 10
        column = f"c{step % 7}"
        sql = (
            f"ALTER TABLE t ADD COLUMN {column} INT"
            if step % 2
            else f"ALTER TABLE t DROP COLUMN c{(step - 1) % 7}"
        )
        recorder.record(_ddl(offset, sql))
        acked.append(_at(offset - 30))  # the worker acks a little behind the reader
    stored = store.load()
    assert stored is not None
    assert len(stored.records) < 50
    assert _names(recorder.schemas_at(_at(100 + 2001 * 10))) == ["id", "a"]


def test_a_reload_record_replaces_the_table_from_its_position(tmp_path: Path) -> None:
    recorder = SchemaRecorder(FileHistoryStore(tmp_path))
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    reloaded = TableDefinition("shop", "t", (ColumnDefinition("id", "int", False),), ("id",))
    recorder.add(DdlRecord(Mark(JOURNAL, 200), "shop", table=reloaded))
    assert _names(SchemaRecorder(FileHistoryStore(tmp_path)).schemas_at(_at(300))) == ["id"]
