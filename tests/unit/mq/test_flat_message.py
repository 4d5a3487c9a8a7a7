"""FlatMessage building follows canal's MQMessageUtils.messageConverter / messagePartition."""

from __future__ import annotations

import itertools

import orjson
import pytest

from bridge.entry import EventType, RowData
from bridge.mq.flat_message import FlatMessage, build_flat_messages, partition_message, split_rows
from bridge.mq.routing import CanalPartitionRouter
from tests.unit.mq.conftest import EntryMaker

TS = 1_700_000_000_123


def one(make: EntryMaker, *entries: object) -> FlatMessage:
    built = build_flat_messages([make.begin(), *entries, make.end()], 7, TS)  # type: ignore[list-item]
    assert len(built) == 1
    return built[0].message


def test_insert_message_fields(make: EntryMaker) -> None:
    message = one(
        make, make.rows(EventType.INSERT, [RowData(after=make.order("1", None))], gtid="uuid:1-5")
    )
    assert message.to_dict() == {
        "data": [{"id": "1", "region": "eu", "note": None}],
        "database": "shop",
        "es": 1_700_000_000_000,
        "gtid": "uuid:1-5",
        "id": 7,
        "isDdl": False,
        "mysqlType": {"id": "bigint(20)", "region": "char(2)", "note": "varchar(64)"},
        "old": None,
        "pkNames": ["id"],
        "sql": "",
        "sqlType": {"id": -5, "region": 1, "note": 12},
        "table": "orders",
        "ts": TS,
        "type": "INSERT",
    }


def test_json_keys_in_canal_order_with_nulls_written(make: EntryMaker) -> None:
    value = one(make, make.insert("1")).to_json()
    keys = list(orjson.loads(value))
    assert keys == sorted(keys)  # fastjson's default: alphabetical
    assert value.startswith(b'{"data":[{"id":"1","region":"eu","note":"n"}],"database":"shop",')
    assert b'"old":null' in value


def test_update_old_holds_only_changed_columns_per_row(make: EntryMaker) -> None:
    row1 = RowData(
        before=make.order("1", "a"),
        after=(
            make.col("id", "1", key=True),
            make.col("region", "eu"),
            make.col("note", "b", updated=True),
        ),
    )
    row2 = RowData(
        before=make.order("2", "x", region="us"),
        after=(
            make.col("id", "2", key=True),
            make.col("region", "eu", updated=True),
            make.col("note", "x"),
        ),
    )
    message = one(make, make.rows(EventType.UPDATE, [row1, row2]))
    assert message.data == (
        {"id": "1", "region": "eu", "note": "b"},
        {"id": "2", "region": "eu", "note": "x"},
    )
    assert message.old == ({"note": "a"}, {"region": "us"})


def test_update_old_keeps_null_previous_values_and_aligns_rows(make: EntryMaker) -> None:
    row = RowData(
        before=make.order("1", None),
        after=(make.col("id", "1", key=True), make.col("note", "b", updated=True)),
    )
    unchanged = RowData(before=make.order("2"), after=make.order("2"))
    message = one(make, make.rows(EventType.UPDATE, [row, unchanged]))
    assert message.old == ({"note": None}, {})


def test_delete_uses_before_image_and_has_no_old(make: EntryMaker) -> None:
    message = one(make, make.rows(EventType.DELETE, [RowData(before=make.order("9"))]))
    assert message.type == "DELETE"
    assert message.data == ({"id": "9", "region": "eu", "note": "n"},)
    assert message.old is None
    assert message.pk_names == ("id",)


def test_ddl_message(make: EntryMaker) -> None:
    message = one(make, make.ddl("ALTER TABLE orders ADD c INT"))
    assert message.to_dict() | {"ts": 0} == {
        "data": None,
        "database": "shop",
        "es": 1_700_000_000_000,
        "gtid": "",
        "id": 7,
        "isDdl": True,
        "mysqlType": None,
        "old": None,
        "pkNames": None,
        "sql": "ALTER TABLE orders ADD c INT",
        "sqlType": None,
        "table": "orders",
        "ts": 0,
        "type": "ALTER",
    }


def test_table_without_primary_key_has_null_pk_names(make: EntryMaker) -> None:
    row = RowData(after=(make.col("a", "1"), make.col("b", "2")))
    assert one(make, make.rows(EventType.INSERT, [row])).pk_names is None


def test_pk_names_come_from_the_first_row(make: EntryMaker) -> None:
    rows = [RowData(after=(make.col("a", "1"),)), RowData(after=(make.col("a", "2", key=True),))]
    assert one(make, make.rows(EventType.INSERT, rows)).pk_names is None


def test_non_dml_row_change_has_no_data(make: EntryMaker) -> None:
    entry = make.rows(EventType.QUERY, [RowData(after=make.order("1"))])
    message = one(make, entry)
    assert (message.data, message.sql_type, message.type) == (None, None, "QUERY")


def test_one_message_per_entry_in_order_and_markers_skipped(make: EntryMaker) -> None:
    entries = [
        make.begin(),
        make.insert("1"),
        make.insert("2"),
        make.heartbeat(),
        make.insert("3", table="users"),
        make.end(),
    ]
    built = build_flat_messages(entries, 3, TS)
    assert [(s.message.table, (s.message.data or ({},))[0].get("id")) for s in built] == [
        ("orders", "1"),
        ("orders", "2"),
        ("users", "3"),
    ]
    assert [s.header for s in built] == [entries[1].header, entries[2].header, entries[4].header]
    assert {s.message.id for s in built} == {3}


class TestPartitionMessage:
    def test_rows_split_by_partition_in_ascending_order_keeping_row_order(
        self, make: EntryMaker
    ) -> None:
        ids = [str(i) for i in range(20)]
        message = one(make, make.insert(*ids))
        router = CanalPartitionRouter("shop.orders:id")
        parts = partition_message(message, router, 4)
        assert [p for p, _ in parts] == sorted({p for p, _ in parts})
        assert len(parts) > 1
        seen: list[str] = []
        for partition, part in parts:
            got = [str(row["id"]) for row in part.data or ()]
            assert got == sorted(got, key=int)
            for row in part.data or ():
                assert router.partition_for("shop", "orders", row, [], 4) == partition
            seen += got
            assert part.pk_names == ("id",)
            assert part.sql_type == message.sql_type
        assert sorted(seen, key=int) == ids

    def test_old_rows_follow_their_data_rows(self, make: EntryMaker) -> None:
        rows = [
            RowData(
                before=make.order(str(i), "a"),
                after=(make.col("id", str(i), key=True), make.col("note", f"b{i}", updated=True)),
            )
            for i in range(10)
        ]
        message = one(make, make.rows(EventType.UPDATE, rows))
        for _, part in partition_message(message, CanalPartitionRouter(".*\\..*:$pk$"), 3):
            assert len(part.data or ()) == len(part.old or ())
            assert all(o == {"note": "a"} for o in part.old or ())

    def test_single_partition_returns_the_message_itself(self, make: EntryMaker) -> None:
        message = one(make, make.insert("1", "2"))
        # Java: abs("orders".hashCode()) % 8 == 1008770331 % 8 == 3
        ((partition, same),) = partition_message(message, CanalPartitionRouter(".*\\..*"), 8)
        assert (partition, same) == (3, message)
        assert same is message
        assert partition_message(message, CanalPartitionRouter(), 8) == [(0, message)]
        (single,) = partition_message(message, CanalPartitionRouter(fixed_partition=5), 8)
        assert single[0] == 5

    def test_ddl_goes_to_partition_zero(self, make: EntryMaker) -> None:
        message = one(make, make.ddl("DROP TABLE orders", EventType.ERASE))
        assert partition_message(message, CanalPartitionRouter(".*\\..*:id"), 8) == [(0, message)]


class TestSplitRows:
    @pytest.mark.parametrize("limit", [450, 600, 1000, 5000])
    def test_chunks_fit_and_keep_all_rows_in_order(self, make: EntryMaker, limit: int) -> None:
        rows = [
            RowData(
                before=make.order(str(i), "x" * i),
                after=(make.col("id", str(i), key=True), make.col("note", "y" * i, updated=True)),
            )
            for i in range(30)
        ]
        message = one(make, make.rows(EventType.UPDATE, rows))
        chunks = split_rows(message, limit)
        assert all(len(c.to_json()) <= limit for c in chunks)
        assert [r for c in chunks for r in c.data or ()] == list(message.data or ())
        assert [r for c in chunks for r in c.old or ()] == list(message.old or ())
        # greedy: adding the next chunk's first row would have overflowed the limit
        for left, right in itertools.pairwise(chunks):
            merged = left.with_rows(
                [*(left.data or ()), (right.data or ())[0]],
                [*(left.old or ()), (right.old or ())[0]],
            )
            assert len(merged.to_json()) > limit

    def test_message_within_limit_is_untouched(self, make: EntryMaker) -> None:
        message = one(make, make.insert("1", "2"))
        assert split_rows(message, 10_000) == [message]

    def test_oversized_single_row_gets_its_own_chunk(self, make: EntryMaker) -> None:
        big = RowData(after=make.order("2", "z" * 2000))
        entry = make.rows(
            EventType.INSERT, [RowData(after=make.order("1")), big, RowData(after=make.order("3"))]
        )
        chunks = split_rows(one(make, entry), 1000)
        assert [[r["id"] for r in c.data or ()] for c in chunks] == [["1"], ["2"], ["3"]]
        assert len(chunks[1].to_json()) > 1000

    def test_ddl_is_never_split(self, make: EntryMaker) -> None:
        message = one(make, make.ddl("ALTER TABLE orders " + "x" * 500))
        assert split_rows(message, 100) == [message]
