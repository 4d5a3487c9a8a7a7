"""mq.key_columns and masked key columns against the schema history's table definitions:
checked at start and after each DDL (``bridge.instance.instance.check_keys``)."""

from __future__ import annotations

import pytest

from bridge.instance.instance import check_keys
from bridge.schema.definitions import ColumnDefinition, Schemas, TableDefinition
from bridge.sink import ColumnShaper, KeyColumns, MaskedKeyColumn, MissingKeyColumn


def schemas(*columns: str) -> Schemas:
    events = TableDefinition("shop", "events", tuple(ColumnDefinition(c, "int") for c in columns))
    other = TableDefinition("shop", "orders", (ColumnDefinition("id", "int"),), ("id",))
    return Schemas(tables={("shop", "events"): events, ("shop", "orders"): other})


def test_definitions_holding_every_named_column_pass() -> None:
    check_keys(KeyColumns(r"shop\.events:tenant/SEQ"), None, schemas("tenant", "seq", "what"))


def test_a_definition_without_a_named_column_stops_in_one_line() -> None:
    with pytest.raises(MissingKeyColumn) as raised:
        check_keys(KeyColumns(r"shop\.events:tenant/seq"), None, schemas("tenant", "what"))
    assert str(raised.value).startswith("shop.events has no column seq, which mq.key_columns")


def test_a_masked_primary_key_or_named_key_is_refused_before_any_row() -> None:
    masked = ColumnShaper(mask="shop.orders:id")
    with pytest.raises(MaskedKeyColumn) as raised:
        check_keys(KeyColumns(), masked, schemas("tenant"))
    assert str(raised.value).startswith("shop.orders.id is a key column")
    hashed = ColumnShaper(hash_columns="shop.events:seq", salt="s")
    with pytest.raises(MaskedKeyColumn):
        check_keys(KeyColumns("shop.events:seq"), hashed, schemas("tenant", "seq"))


def test_mask_keys_truncation_and_overridden_keys_pass() -> None:
    check_keys(KeyColumns(), ColumnShaper(mask="shop.orders:id", mask_keys=True), schemas("a"))
    check_keys(KeyColumns(), ColumnShaper(truncate="shop.orders:id=2"), schemas("a"))
    # events keyed by seq: masking tenant masks no key
    keys, masked = KeyColumns("shop.events:seq"), ColumnShaper(mask="shop.events:tenant")
    check_keys(keys, masked, schemas("tenant", "seq"))
