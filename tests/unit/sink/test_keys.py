"""mq.key_columns: the named columns key a table's records (record key, $pk$ partition,
pkNames) in rows straight from the parser and rows of Columns alike, in the pure-Python and the
compiled writers; a named column a table lacks is refused in one line."""

from __future__ import annotations

import orjson
import pytest

from bridge.config import MqConfig
from bridge.entry import Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.formats import record_builder
from bridge.mq.records import OutgoingRecord
from bridge.mq.routing import java_string_hash
from bridge.parse.binlog.rows import Plan, decoded_row
from bridge.sink import KeyColumns, MissingKeyColumn
from tests.native_paths import CountingCompiled, compiled_module

EVENTS = Plan.described(
    [
        (0, "tenant", False, "int(11)", 4),
        (1, "seq", False, "int(11)", 4),
        (2, "what", False, "varchar(20)", 12),
    ]
)
TYPES = (4, 4, 12)
KEYED = KeyColumns(r"shop\.events:seq/tenant")


def events(event_type: EventType, *rows: RowData) -> Entry:
    header = Header("mysql-bin.000001", 400, 1, 1_700_000_000_000, "shop", "events", event_type)
    return Entry(header, EntryType.ROWDATA, RowChange(event_type, row_datas=rows))


def inserted(*values: tuple[str, str, str]) -> Entry:
    return events(EventType.INSERT, *(decoded_row(None, (), (), EVENTS, v, TYPES) for v in values))


def build(mq: MqConfig, entry: Entry, compiled: object = None) -> list[OutgoingRecord]:
    return record_builder(mq, compiled=compiled).build([entry], 1, 2)  # type: ignore[arg-type]


def test_a_keyless_table_is_keyed_by_the_named_columns_in_table_order() -> None:
    entry = inserted(("7", "42", "x"))
    assert [r.key for r in build(MqConfig(topic="t"), entry)] == [b"shop.events"]
    (record,) = build(MqConfig(topic="t"), KEYED.apply(entry))
    assert record.key == b'shop.events:["7","42"]'
    assert record.value is not None
    assert orjson.loads(record.value)["pkNames"] == ["tenant", "seq"]


def test_pk_partitioning_hashes_the_named_columns() -> None:
    mq = MqConfig(topic="t", partitions=5, partition_hash=r"shop\..*:$pk$")
    rows = [(str(t), str(s), "x") for t in range(3) for s in range(4)]
    for values in rows:
        (record,) = build(mq, KEYED.apply(inserted(values)))
        expected = java_string_hash("shop") ^ java_string_hash(values[0])
        expected ^= java_string_hash(values[1])
        assert record.partition == abs(expected) % 5


def test_an_existing_primary_key_is_overridden() -> None:
    keyed = Plan.described([(0, "id", True, "int(11)", 4), (1, "seq", False, "int(11)", 4)])
    entry = events(EventType.INSERT, decoded_row(None, (), (), keyed, ("1", "9"), (4, 4)))
    (record,) = build(MqConfig(topic="t"), KeyColumns("shop.events:seq").apply(entry))
    assert record.key == b"shop.events:9"


def test_rows_of_columns_are_keyed_alike_and_compiled_records_equal_python() -> None:
    decoded = decoded_row(EVENTS, ("1", "2", "a"), TYPES, EVENTS, ("1", "2", "b"), TYPES)
    columns = RowData(before=decoded.before, after=decoded.after)
    from_parser = KEYED.apply(events(EventType.UPDATE, decoded))
    from_columns = KEYED.apply(events(EventType.UPDATE, columns))
    mq = MqConfig(topic="t")
    assert build(mq, from_parser) == build(mq, from_columns)
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled module is not built")
    counting = CountingCompiled(module)
    assert build(mq, from_parser, counting) == build(mq, from_parser)
    assert counting.written == 1


def test_other_tables_are_left_alone() -> None:
    other = Header("f", 4, 1, 0, "shop", "orders", EventType.INSERT)
    entry = Entry(other, EntryType.ROWDATA, inserted(("1", "2", "x")).row_change)
    assert KEYED.apply(entry) is entry
    assert not KeyColumns("")


def test_a_missing_named_column_is_refused_in_one_line() -> None:
    with pytest.raises(MissingKeyColumn) as raised:
        KeyColumns("shop.events:tenant/region").apply(inserted(("1", "2", "x")))
    assert str(raised.value) == (
        "shop.events has no column region, which mq.key_columns names as its key: add the "
        "column back or change mq.key_columns"
    )
    assert KEYED.missing("shop", "events", ["TENANT", "what"]) == "SEQ"
    assert KEYED.missing("shop", "other", ["x"]) is None
