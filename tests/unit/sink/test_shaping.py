"""Column shaping (``columns``): masked, hashed and truncated values in both row images, in
rows straight from the parser (which the compiled writer then still writes) and in rows of
Columns, with NULLs, types and keys kept, and a masked key refused unless ``mask_keys``."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from bridge.config import MqConfig
from bridge.entry import Column, Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.formats import record_builder
from bridge.parse.binlog.rows import Plan, decoded_row
from bridge.sink import ColumnShaper, InvalidFilter, MaskedKeyColumn
from tests.golden.flat_messages import canonical_entries
from tests.native_paths import CountingCompiled, compiled_module

SALT = "pepper-9f"
USERS = Plan.described(
    [
        (0, "id", True, "int(11)", 4),
        (1, "email", False, "varchar(64)", 12),
        (2, "ssn", False, "char(11)", 1),
        (3, "bio", False, "text", 2005),
    ]
)
TYPES = (4, 12, 1, 2005)


def sha(value: str) -> str:
    return hashlib.sha256((SALT + value).encode()).hexdigest()


def users(event_type: EventType, *rows: RowData) -> Entry:
    header = Header("mysql-bin.000001", 400, 1, 1_700_000_000_000, "shop", "users", event_type)
    return Entry(header, EntryType.ROWDATA, RowChange(event_type, row_datas=rows))


def shaper(**options: object) -> ColumnShaper:
    settings: dict[str, object] = {
        "mask": r"shop\.users:email",
        "hash_columns": "shop.users:ssn",
        "truncate": "shop.users:bio=3",
        "salt": SALT,
        **options,
    }
    return ColumnShaper(**settings)  # type: ignore[arg-type]


def data_and_old(entry: Entry, compiled: object = None) -> tuple[object, object]:
    (record,) = record_builder(MqConfig(topic="t"), compiled=compiled).build([entry], 1, 2)  # type: ignore[arg-type]
    assert record.value is not None
    message = orjson.loads(record.value)
    return message["data"], message["old"]


def test_an_update_of_parser_rows_is_shaped_in_data_and_old() -> None:
    before = ("1", "a@x.io", "123-45-6789", "hello")
    after = ("1", "b@x.io", "987-65-4321", "world")
    entry = users(EventType.UPDATE, decoded_row(USERS, before, TYPES, USERS, after, TYPES))
    shaped = shaper().apply(entry)
    assert shaped.row_change is not None
    assert type(shaped.row_change.row_datas[0]) is type(entry.row_change.row_datas[0])  # type: ignore[union-attr]
    data, old = data_and_old(shaped)
    assert data == [{"id": "1", "email": "********", "ssn": sha("987-65-4321"), "bio": "wor"}]
    # Two equal masks are no change: only the hashed and cut values show their old ones.
    assert old == [{"ssn": sha("123-45-6789"), "bio": "hel"}]


def test_a_null_stays_null_and_types_stay() -> None:
    entry = users(
        EventType.INSERT, decoded_row(None, (), (), USERS, ("2", None, None, None), TYPES)
    )
    (row,) = shaper().apply(entry).row_change.row_datas  # type: ignore[union-attr]
    assert [(c.value, c.is_null, c.sql_type, c.mysql_type) for c in row.after][1:] == [
        ("", True, 12, "varchar(64)"),
        ("", True, 1, "char(11)"),
        ("", True, 2005, "text"),
    ]


def test_rows_of_columns_are_shaped_alike() -> None:
    values = ("3", "c@x.io", "111-22-3333", "abcdef")
    decoded = decoded_row(None, (), (), USERS, values, TYPES)
    columns = RowData(after=decoded.after)  # the same row as Column objects
    from_columns = shaper().apply(users(EventType.INSERT, columns))
    from_parser = shaper().apply(users(EventType.INSERT, decoded))
    assert from_columns.row_change.row_datas == from_parser.row_change.row_datas  # type: ignore[union-attr]
    assert data_and_old(from_columns) == data_and_old(from_parser)


def test_the_same_value_hashes_the_same_in_every_shaper() -> None:
    entry = users(EventType.INSERT, decoded_row(None, (), (), USERS, ("4", "e", "s", "b"), TYPES))
    first, second = shaper().apply(entry), shaper(mask="", truncate="").apply(entry)
    assert data_and_old(first)[0][0]["ssn"] == data_and_old(second)[0][0]["ssn"] == sha("s")  # type: ignore[index]
    other = shaper(salt="another").apply(entry)
    assert data_and_old(other)[0][0]["ssn"] != sha("s")  # type: ignore[index]


def test_the_compiled_writer_still_writes_shaped_parser_rows() -> None:
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled module is not built")
    before = ("5", "a@x.io", "123", "hello")
    after = ("5", "b@x.io", "456", "world")
    entry = shaper().apply(
        users(EventType.UPDATE, decoded_row(USERS, before, TYPES, USERS, after, TYPES))
    )
    counting = CountingCompiled(module)
    assert data_and_old(entry, counting) == data_and_old(entry)
    assert counting.written == 1


def test_every_canonical_entry_gives_equal_records_both_ways_when_shaped() -> None:
    """The golden entries with every column of ``orders`` shaped (its key accepted)."""
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled module is not built")
    columns = "id/note/price/created/doc/flags"
    shaped_by = ColumnShaper(
        mask=f"shop.orders:{columns}",
        hash_columns="shop.order_lines:qty",
        truncate="shop.audit:what=2",
        salt=SALT,
        mask_keys=True,
    )
    entries = [shaped_by.apply(entry) for entry in canonical_entries()]
    python = record_builder(MqConfig(topic="t"), compiled=None).build(entries, 1, 2)
    counting = CountingCompiled(module)
    compiled = record_builder(MqConfig(topic="t"), compiled=counting).build(entries, 1, 2)
    assert compiled == python
    assert counting.written == 7 and counting.declined == 0
    assert b'"note":"********"' in python[0].value  # type: ignore[operator]


@pytest.mark.parametrize("rule", [{"mask": "shop.users:id"}, {"hash_columns": "shop.users:ID"}])
def test_a_masked_or_hashed_key_is_refused_in_one_line(rule: dict[str, str]) -> None:
    entry = users(EventType.INSERT, decoded_row(None, (), (), USERS, ("6", "e", "s", "b"), TYPES))
    with pytest.raises(MaskedKeyColumn) as raised:
        shaper(**rule).apply(entry)
    message = str(raised.value)
    assert "shop.users.id is a key column" in message and "columns.mask_keys: true" in message
    assert "\n" not in message and SALT not in message
    columns = RowData(after=entry.row_change.row_datas[0].after)  # type: ignore[union-attr]
    with pytest.raises(MaskedKeyColumn):
        shaper(**rule).apply(users(EventType.INSERT, columns))


def test_mask_keys_accepts_a_masked_key_and_truncating_a_key_is_no_masking() -> None:
    entry = users(EventType.INSERT, decoded_row(None, (), (), USERS, ("77", "e", "s", "b"), TYPES))
    accepted = shaper(mask="shop.users:id", mask_keys=True).apply(entry)
    assert data_and_old(accepted)[0][0]["id"] == "********"  # type: ignore[index]
    cut = shaper(truncate="shop.users:id=1").apply(entry)
    assert data_and_old(cut)[0][0]["id"] == "7"  # type: ignore[index]


def test_other_tables_ddl_and_an_empty_shaper_are_left_alone() -> None:
    other = Entry(
        Header("f", 4, 1, 0, "shop", "orders", EventType.INSERT),
        EntryType.ROWDATA,
        RowChange(
            EventType.INSERT,
            row_datas=(RowData(after=(Column(0, 12, "email", False, False, False, "x", "t"),)),),
        ),
    )
    assert shaper().apply(other) is other
    assert not ColumnShaper()
    assert SALT not in repr(shaper())


def test_bad_rules_are_refused() -> None:
    with pytest.raises(InvalidFilter):
        ColumnShaper(truncate="shop.t:body")
    with pytest.raises(InvalidFilter):
        ColumnShaper(hash_columns="shop.t:ssn")  # no salt


def test_protobuf_records_carry_the_shaped_values() -> None:
    before = ("8", "a@x.io", "123", "hello")
    after = ("8", "b@x.io", "456", "world")
    entry = shaper().apply(
        users(EventType.UPDATE, decoded_row(USERS, before, TYPES, USERS, after, TYPES))
    )
    protobuf = MqConfig(topic="t", format="protobuf")
    (record,) = record_builder(protobuf, compiled=None).build([entry], 1, 2)
    assert record.value is not None
    assert b"********" in record.value and sha("456").encode() in record.value
    for original in (b"a@x.io", b"b@x.io", b"hello", b"world", b"456"):
        assert original not in record.value.replace(sha("456").encode(), b"")
