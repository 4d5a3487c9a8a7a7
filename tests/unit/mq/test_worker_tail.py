"""``canal-bridge tail``'s one-line rendering of the records a worker sends."""

from __future__ import annotations

import orjson

from bridge.entry import EventType, RowData
from bridge.mq.tail import format_record
from tests.unit.mq.conftest import EntryMaker
from tests.unit.mq.test_worker import builder


def test_rows_message_line(make: EntryMaker) -> None:
    before, after = make.order("7", note="old"), make.order("7", note="new")
    after = (*after[:2], make.col("note", "new", updated=True))
    entry = make.rows(EventType.UPDATE, [RowData(before=before, after=after)])
    (record,) = builder().build([entry], 3, 1)
    line = format_record(2, 41, record.value)
    assert line == (
        "2@41 UPDATE shop.orders es=2023-11-14T22:13:20.000Z id=3 "
        'data=[{"id":"7","region":"eu","note":"new"}] old=[{"note":"old"}]'
    )


def test_ddl_line_shows_the_sql(make: EntryMaker) -> None:
    (record,) = builder().build([make.ddl("ALTER TABLE orders ADD c INT")], 4, 1)
    assert format_record(0, 5, record.value) == (
        "0@5 ALTER shop.orders es=2023-11-14T22:13:20.000Z id=4 sql=ALTER TABLE orders ADD c INT"
    )


def test_dead_letter_notice_line() -> None:
    notice = orjson.dumps(
        {
            "reason": "oversize",
            "database": "shop",
            "table": "orders",
            "type": "INSERT",
            "rows": 20,
            "size": 9000,
            "limit": 2000,
            "binlogFile": "mysql-bin.000003",
            "binlogPosition": 404,
        }
    )
    assert format_record(0, 1, notice) == (
        "0@1 DEAD-LETTER shop.orders INSERT 20 rows, 9000 bytes > 2000, at mysql-bin.000003:404"
    )


def test_other_values_are_shown_raw() -> None:
    assert format_record(1, 2, b"hello") == "1@2 (not a FlatMessage) hello"
    assert format_record(1, 3, None) == "1@3 (not a FlatMessage) null"


def test_a_tombstone_line_names_its_key() -> None:
    assert format_record(0, 9, None, b"shop.orders:7") == "0@9 TOMBSTONE key=shop.orders:7"
