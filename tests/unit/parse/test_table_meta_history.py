"""``build_table_meta`` with the schema history's definition: names where the binlog has none,
a mismatch refused (never a misnamed row), what a NO_LOG map lacks taken from the definition."""

from __future__ import annotations

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_map import ColumnDef
from bridge.parse.binlog.table_meta import build_table_meta
from bridge.parse.exceptions import SchemaMismatch
from bridge.schema.definitions import ColumnDefinition as Col
from bridge.schema.definitions import TableDefinition

NULLABLE = b"\xff"
HISTORY = TableDefinition(
    "shop",
    "t",
    (
        Col("id", "int", False),
        Col("label", "varchar(20)", True, "utf8mb4"),
        Col("size", "enum('s','m','l')", True, "utf8mb4"),
    ),
    ("id",),
)


def _minimal(*, charsets: bool = True) -> list[ColumnDef]:
    """The TABLE_MAP of ``HISTORY`` without names (MINIMAL); without charsets (NO_LOG)."""
    utf8 = {"charset_id": 255, "collation_name": "utf8mb4_0900_ai_ci"} if charsets else {}
    return [
        ColumnDef(T.LONG),
        ColumnDef(T.VARCHAR, max_length=80, **utf8),  # type: ignore[arg-type]
        ColumnDef(T.ENUM, size=1, **utf8),  # type: ignore[arg-type]
    ]


def test_a_nameless_map_takes_names_types_and_key_from_the_history() -> None:
    meta = build_table_meta("shop", "t", _minimal(), NULLABLE, HISTORY)
    assert [(c.name, c.mysql_type, c.is_key) for c in meta.columns] == [
        ("id", "int", True),
        ("label", "varchar(20)", False),
        ("size", "enum('s','m','l')", False),
    ]


def test_a_no_log_map_takes_charsets_and_labels_from_the_history() -> None:
    meta = build_table_meta("shop", "t", _minimal(charsets=False), NULLABLE, HISTORY)
    assert [c.charset for c in meta.columns] == [None, "utf8mb4", "utf8mb4"]
    assert meta.columns[2].enum_values == ("s", "m", "l")


def test_a_nameless_map_without_a_definition_is_refused() -> None:
    with pytest.raises(SchemaMismatch, match="no definition of this table"):
        build_table_meta("shop", "t", _minimal(), NULLABLE, None)


@pytest.mark.parametrize(
    ("columns", "says"),
    [
        (_minimal()[:2], "the binlog has 2 columns, the schema history 3"),
        ([ColumnDef(T.LONG), ColumnDef(T.LONG), ColumnDef(T.ENUM)], "label"),
    ],
    ids=["a column fewer", "another type"],
)
def test_a_map_the_history_does_not_describe_stops_the_destination(
    columns: list[ColumnDef], says: str
) -> None:
    with pytest.raises(SchemaMismatch, match=says):
        build_table_meta("shop", "t", columns, NULLABLE, HISTORY)


def test_names_in_the_binlog_must_be_the_historys() -> None:
    named = [
        ColumnDef(T.LONG, name="id", is_primary=True),
        ColumnDef(T.VARCHAR, name="title", max_length=80, charset_id=255),
        ColumnDef(T.ENUM, name="size", size=1, charset_id=255),
    ]
    with pytest.raises(SchemaMismatch, match=r"title \(history: label\)"):
        build_table_meta("shop", "t", named, NULLABLE, HISTORY)
    renamed = TableDefinition(
        "shop",
        "t",
        (*HISTORY.columns[:1], Col("title", "varchar(20)"), HISTORY.columns[2]),
        ("id",),
    )
    meta = build_table_meta("shop", "t", named, NULLABLE, renamed)
    assert [c.name for c in meta.columns] == ["id", "title", "size"]


def test_a_table_the_destination_does_not_select_never_stops_the_reader() -> None:
    """Its rows are dropped by the sink: what does not fit is decoded from the binlog alone,
    unnamed columns by position."""
    meta = build_table_meta("other", "x", _minimal(), NULLABLE, None, strict=False)
    assert [c.name for c in meta.columns] == ["@1", "@2", "@3"]
    mismatched = build_table_meta("shop", "t", _minimal()[:2], NULLABLE, HISTORY, strict=False)
    assert [c.name for c in mismatched.columns] == ["@1", "@2"]


def test_mariadbs_compressed_columns_fit_their_declared_types() -> None:
    compressed = [
        ColumnDef(T.LONG),
        ColumnDef(T.VARCHAR_COMPRESSED, max_length=80, charset_id=255),
        ColumnDef(T.ENUM, size=1, charset_id=255),
    ]
    meta = build_table_meta("shop", "t", compressed, NULLABLE, HISTORY)
    assert [c.name for c in meta.columns] == ["id", "label", "size"]
