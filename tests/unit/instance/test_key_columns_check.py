"""mq.key_columns against the table definitions of the schema history: checked at start and
after each DDL on a named table (``bridge.instance.instance.check_key_columns``)."""

from __future__ import annotations

import pytest

from bridge.instance.instance import check_key_columns
from bridge.schema.definitions import ColumnDefinition, Schemas, TableDefinition
from bridge.sink import KeyColumns, MissingKeyColumn


def schemas(*columns: str) -> Schemas:
    events = TableDefinition("shop", "events", tuple(ColumnDefinition(c, "int") for c in columns))
    other = TableDefinition("shop", "orders", (ColumnDefinition("id", "int"),), ("id",))
    return Schemas(tables={("shop", "events"): events, ("shop", "orders"): other})


def test_definitions_holding_every_named_column_pass() -> None:
    check_key_columns(KeyColumns(r"shop\.events:tenant/SEQ"), schemas("tenant", "seq", "what"))


def test_a_definition_without_a_named_column_stops_in_one_line() -> None:
    with pytest.raises(MissingKeyColumn) as raised:
        check_key_columns(KeyColumns(r"shop\.events:tenant/seq"), schemas("tenant", "what"))
    assert str(raised.value).startswith("shop.events has no column seq, which mq.key_columns")
