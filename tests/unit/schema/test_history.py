"""The reader's history: a DDL it cannot read stops it only on a table it holds, and a
definition reloaded for that statement's position replaces it, also after a restart."""

from __future__ import annotations

import pickle

import pytest

from bridge.entry import Entry, EntryType, EventType, Header, RowChange
from bridge.instance.schema_start import left_out
from bridge.parse.scan import DdlStatement
from bridge.position import EntryPosition
from bridge.schema.apply import apply_ddl
from bridge.schema.codec import DdlRecord, Mark
from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition
from bridge.schema.exceptions import UnreadableDdl
from bridge.schema.history import SchemaHistory
from bridge.schema.recorder import SchemaRecorder
from bridge.schema.store import MemoryHistoryStore
from bridge.sink import TableFilter

UNREADABLE = "ALTER TABLE {} CONVERT PARTITION p0 TO TABLE spare"
JOURNAL = "binlog.000002"


def _schemas() -> Schemas:
    schemas = Schemas(Dialect(), {"shop": "utf8mb4"}, {})
    apply_ddl(schemas, "CREATE TABLE t (id INT PRIMARY KEY, a INT)", "shop")
    return schemas


def _columns(history: SchemaHistory, table: str = "t") -> list[str]:
    definition = history.definition("shop", table)
    assert definition is not None
    return [c.name for c in definition.columns]


def test_an_unreadable_ddl_on_a_held_table_stops_with_its_position_and_the_fix() -> None:
    history = SchemaHistory(_schemas())
    with pytest.raises(UnreadableDdl) as stopped:
        history.apply(UNREADABLE.format("t"), "shop", f"{JOURNAL}:900")
    message = str(stopped.value)
    assert "shop.t" in message and f"{JOURNAL}:900" in message
    assert "canal-bridge schema reload" in message and f"--at {JOURNAL}:900" in message


def test_an_unreadable_ddl_on_another_table_costs_nothing_and_forgets_it() -> None:
    schemas = _schemas()
    apply_ddl(schemas, "CREATE TABLE other (id INT)", "shop")
    schemas.tables.pop(("shop", "other"))
    history = SchemaHistory(schemas)
    applied = history.apply(UNREADABLE.format("other"), "shop", f"{JOURNAL}:900")
    assert applied.unknown == (("shop", "other"),)
    assert _columns(history) == ["id", "a"]


def test_a_reloaded_definition_replaces_the_statement_at_its_position() -> None:
    reloaded = TableDefinition(
        "shop", "t", (ColumnDefinition("id", "int", False), ColumnDefinition("b", "int")), ("id",)
    )
    history = SchemaHistory(_schemas(), overrides={f"{JOURNAL}:900": (reloaded,)})
    history.apply(UNREADABLE.format("t"), "shop", f"{JOURNAL}:900")
    assert _columns(history) == ["id", "b"]


def _ddl_entry(offset: int, sql: str) -> Entry:
    header = Header(JOURNAL, offset, 1, 0, "shop", "t", EventType.ALTER, "")
    return Entry(header, EntryType.ROWDATA, RowChange(EventType.ALTER, True, sql, "shop"))


def test_a_reload_reaches_the_reader_and_a_later_replay() -> None:
    """The destination stopped at the statement at 900; the reload is kept there; a reader
    from the cursor (500) gets it as an override, and once the statement is recorded a start
    after it replays the reloaded definition, not the statement."""
    recorder = SchemaRecorder(MemoryHistoryStore())
    recorder.begin(Mark(JOURNAL, 100), _schemas())
    reloaded = TableDefinition("shop", "t", (ColumnDefinition("id", "int", False),), ("id",))
    recorder.reload(DdlRecord(Mark(JOURNAL, 900), "shop", table=reloaded))
    reader = recorder.history_at(EntryPosition(JOURNAL, 500))
    assert _columns(reader) == ["id", "a"]
    reader.apply(UNREADABLE.format("t"), "shop", f"{JOURNAL}:900")
    assert _columns(reader) == ["id"]
    recorder.record(_ddl_entry(900, UNREADABLE.format("t")))
    later = recorder.schemas_at(EntryPosition(JOURNAL, 1000))
    assert later is not None and [c.name for c in later.tables[("shop", "t")].columns] == ["id"]


def test_an_unreadable_ddl_on_a_held_table_the_filter_does_not_select_costs_nothing() -> None:
    history = SchemaHistory(_schemas(), selected=TableFilter(r"shop\.orders"))
    applied = history.apply(UNREADABLE.format("t"), "shop", f"{JOURNAL}:900")
    assert applied.unknown == (("shop", "t"),)


def test_the_selection_reaches_the_binlog_reader_process_whole() -> None:
    revived = pickle.loads(
        pickle.dumps(SchemaHistory(_schemas(), selected=TableFilter(r"shop\.o.*")))
    )
    assert revived.selects("SHOP", "orders") and not revived.selects("shop", "t")


def test_a_tools_history_reads_a_table_it_does_not_hold_once() -> None:
    """``BinlogParser`` without definitions reads live tables as it meets them."""
    fetched: list[tuple[str, str]] = []

    def fetch(schema: str, table: str) -> TableDefinition | None:
        fetched.append((schema, table))
        return TableDefinition(schema, table, (ColumnDefinition("id", "int", False),), ("id",))

    history = SchemaHistory(_schemas(), fetch)
    assert _columns(history, "live") == ["id"]
    assert _columns(history, "live") == ["id"]
    assert _columns(history) == ["id", "a"]  # held: never fetched
    assert fetched == [("shop", "live")]


def _ddl(sql: str) -> DdlStatement:
    return DdlStatement("binlog.000002", 500, "shop", sql)


def test_a_backlogs_ddl_sorts_the_captured_tables_into_created_and_uncertain() -> None:
    """What a first start from a past position makes of the DDL between it and the capture:
    a plain CREATE means the table did not exist at the start; anything else, a CREATE ... IF
    NOT EXISTS or a DROP DATABASE included, leaves its definition at the start unknown."""
    schemas = _schemas()
    for sql in (
        "CREATE TABLE made (id INT)",
        "CREATE TABLE maybe (id INT)",
        "CREATE TABLE o (i INT)",
    ):
        apply_ddl(schemas, sql, "shop")
    apply_ddl(schemas, "CREATE TABLE t2 (id INT)", "other")
    uncertain = left_out(
        schemas,
        [
            _ddl("CREATE TABLE made (id INT)"),
            _ddl("CREATE TABLE IF NOT EXISTS maybe (id INT)"),
            _ddl("ALTER TABLE o ADD COLUMN j INT"),
            _ddl("DROP DATABASE other"),
            _ddl("CREATE DATABASE other"),
            _ddl("CREATE TABLE other.t2 (id INT, k INT)"),
        ],
    )
    assert uncertain == {("shop", "maybe"), ("shop", "o"), ("other", "t2")}
    assert ("shop", "made") not in schemas.tables
    assert ("shop", "t") in schemas.tables  # untouched: the capture holds at the start
