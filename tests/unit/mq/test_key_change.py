"""mq.key_change: a key-changing UPDATE goes out as DELETE(old key) + INSERT(new key), each on
its own key's partition (split), or as canal's one UPDATE hashed by the new key (update)."""

from __future__ import annotations

import functools
from typing import Any, Literal

import orjson
import pytest

from bridge.config import MqConfig
from bridge.entry import (
    AheadEncoding,
    Column,
    Entry,
    EntryType,
    EventType,
    Header,
    RowChange,
    RowData,
    row_images,
)
from bridge.mq.flat_encoder import RenderedRows
from bridge.mq.formats import ENCODERS, format_name, placement_of, record_builder, rows_encoder
from bridge.mq.key_change import KeyChangeSplitter, split_key_changes
from bridge.mq.records import OutgoingRecord
from bridge.mq.rendering import render_rows
from bridge.parse.binlog.rows import Plan, decoded_row
from tests.native_paths import records_both_ways
from tests.unit.mq.conftest import EntryMaker

PK_HASH = r"shop\..*:$pk$"
PARTITIONS = 3
BATCH, TS = 3, 1_700_000_000_999


def mq(
    key_change: Literal["split", "update"] = "split",
    partition_hash: str = PK_HASH,
    partitions: int = PARTITIONS,
) -> MqConfig:
    return MqConfig(
        topic="t", partition_hash=partition_hash, partitions=partitions, key_change=key_change
    )


def build(entries: list[Entry], config: MqConfig) -> list[OutgoingRecord]:
    return record_builder(config, compiled=None).build(entries, BATCH, TS)


def update_row(make: EntryMaker, old: tuple[str, str], new: tuple[str, str]) -> RowData:
    """An ``orders`` UPDATE row from ``(id, region)`` to ``(id, region)``, ``updated`` set as
    the parser sets it (on the columns whose value changed)."""
    before = make.order(old[0], region=old[1])
    after = tuple(
        Column(
            c.index,
            c.sql_type,
            c.name,
            c.is_key,
            c.value != b.value,
            c.is_null,
            c.value,
            c.mysql_type,
        )
        for c, b in zip(make.order(new[0], region=new[1]), before, strict=True)
    )
    return RowData(before=before, after=after)


def update(make: EntryMaker, *changes: tuple[tuple[str, str], tuple[str, str]]) -> Entry:
    return make.rows(EventType.UPDATE, [update_row(make, old, new) for old, new in changes])


def messages(records: list[OutgoingRecord]) -> list[dict[str, Any]]:
    return [orjson.loads(r.value) for r in records]


def summary(records: list[OutgoingRecord]) -> list[tuple[str, list[str], list[str] | None]]:
    """Per record: its type, the ``id, region`` of its ``data`` rows and of its ``old`` rows'
    changed columns (None when the message has no ``old``)."""
    return [
        (
            m["type"],
            [f"{row['id']},{row['region']}" for row in m["data"]],
            [",".join(f"{k}={v}" for k, v in row.items() if k != "note") for row in m["old"]]
            if m["old"]
            else None,
        )
        for m in messages(records)
    ]


def partition_of(key_id: str, partitions: int = PARTITIONS) -> int:
    placement = placement_of(mq(partitions=partitions))
    row = {"id": key_id}
    return placement.partitions.partition_for("shop", "orders", row, ("id",), partitions)


def ids_on_distinct_partitions(count: int) -> list[str]:
    """``count`` ids whose rows hash to ``count`` different partitions."""
    chosen: dict[int, str] = {}
    for number in range(1, 200):
        chosen.setdefault(partition_of(str(number)), str(number))
        if len(chosen) == count:
            return list(chosen.values())
    raise AssertionError(f"no {count} ids on distinct partitions")


def test_a_key_changing_update_becomes_delete_then_insert(make: EntryMaker) -> None:
    entry = update(make, (("1", "eu"), ("2", "eu")))
    records = build([make.begin(), entry, make.end()], mq())
    assert summary(records) == [("DELETE", ["1,eu"], None), ("INSERT", ["2,eu"], None)]
    delete, insert = messages(records)
    assert delete["data"] == [{"id": "1", "region": "eu", "note": "n"}]
    assert insert["data"] == [{"id": "2", "region": "eu", "note": "n"}]
    assert [r.key for r in records] == [b"shop.orders:1", b"shop.orders:2"]
    # Both halves are at the UPDATE's transaction position: same binlog headers, batch, es.
    assert records[0].headers == records[1].headers
    assert delete["es"] == insert["es"] == entry.header.execute_time
    assert delete["pkNames"] == insert["pkNames"] == ["id"]


def test_each_half_lands_on_its_own_keys_partition(make: EntryMaker) -> None:
    first, second, third = ids_on_distinct_partitions(3)
    entries = [
        make.insert(first),
        update(make, ((first, "eu"), (second, "eu"))),
        update(make, ((second, "eu"), (third, "eu"))),
        make.rows(EventType.DELETE, [RowData(before=make.order(third))]),
    ]
    records = build(entries, mq())
    placed = [
        (m["type"], m["data"][0]["id"], r.partition)
        for m, r in zip(messages(records), records, strict=True)
    ]
    assert placed == [
        ("INSERT", first, partition_of(first)),
        ("DELETE", first, partition_of(first)),
        ("INSERT", second, partition_of(second)),
        ("DELETE", second, partition_of(second)),
        ("INSERT", third, partition_of(third)),
        ("DELETE", third, partition_of(third)),
    ]
    # Every key's events are on one partition, which is what keeps them in order.
    assert len({partition_of(first), partition_of(second), partition_of(third)}) == 3


def test_update_mode_sends_canals_update_on_the_new_keys_partition(make: EntryMaker) -> None:
    old, new = ids_on_distinct_partitions(2)
    (record,) = build([update(make, ((old, "eu"), (new, "eu")))], mq("update"))
    assert summary([record]) == [("UPDATE", [f"{new},eu"], [f"id={old}"])]
    assert record.partition == partition_of(new) != partition_of(old)


def test_a_multi_row_update_splits_only_its_key_changing_rows_in_row_order(
    make: EntryMaker,
) -> None:
    # Hashed by region: a row's id never moves it, its region does.
    config = mq(partition_hash=r"shop\..*:region")
    entry = update(
        make,
        (("1", "eu"), ("1", "eu")),
        (("2", "eu"), ("2", "us")),
        (("3", "us"), ("30", "us")),
        (("4", "us"), ("4", "us")),
        (("5", "us"), ("5", "eu")),
        (("6", "eu"), ("6", "ap")),
        (("7", "ap"), ("7", "ap")),
    )
    assert summary(build([entry], config)) == [
        ("UPDATE", ["1,eu"], [""]),
        ("DELETE", ["2,eu"], None),
        ("INSERT", ["2,us"], None),
        ("UPDATE", ["30,us", "4,us"], ["id=3", ""]),
        ("DELETE", ["5,us"], None),
        ("INSERT", ["5,eu"], None),
        ("DELETE", ["6,eu"], None),
        ("INSERT", ["6,ap"], None),
        ("UPDATE", ["7,ap"], [""]),
    ]


def test_updates_that_keep_their_key_are_left_as_they_are(make: EntryMaker) -> None:
    entry = update(make, (("1", "eu"), ("1", "us")), (("2", "eu"), ("2", "eu")))
    placement = placement_of(mq())
    assert split_key_changes(entry, placement) == (entry,)
    split = build([entry], mq())
    assert split == build([entry], mq("update"))
    assert [m["type"] for m in messages(split)] == ["UPDATE"] * len(split)


@pytest.mark.parametrize(
    ("partition_hash", "partitions"),
    [
        ("", PARTITIONS),  # no hash: the fixed partition
        (r"shop\..*", PARTITIONS),  # hashed by table name
        (PK_HASH, 1),  # one partition
        (r"other\..*:$pk$", PARTITIONS),  # no rule for this table: partition 0
    ],
)
def test_no_split_where_a_tables_rows_share_one_partition(
    make: EntryMaker, partition_hash: str, partitions: int
) -> None:
    old, new = ids_on_distinct_partitions(2)
    config = mq(partition_hash=partition_hash, partitions=partitions)
    records = build([update(make, ((old, "eu"), (new, "eu")))], config)
    assert summary(records) == [("UPDATE", [f"{new},eu"], [f"id={old}"])]


def test_a_hashed_column_counts_only_when_both_images_hold_it_and_it_hashes_differently(
    make: EntryMaker,
) -> None:
    """NULL and '' hash alike (no split); a MINIMAL after image without the column says
    nothing about it (no split)."""
    config = mq(partition_hash=r"shop\..*:note")
    to_empty = RowData(before=make.order("1", note=None), after=make.order("1", note=""))
    minimal = RowData(before=make.order("2", note="a"), after=make.order("2", note="b")[:2])
    changed = RowData(before=make.order("3", note="a"), after=make.order("3", note="b"))
    entry = make.rows(EventType.UPDATE, [to_empty, minimal, changed])
    types = [m["type"] for m in messages(build([entry], config))]
    assert types[-2:] == ["DELETE", "INSERT"] and "DELETE" not in types[:-2]


def test_the_halves_are_a_delete_of_the_before_image_and_an_insert_of_the_after_image(
    make: EntryMaker,
) -> None:
    entry = update(make, (("1", "eu"), ("2", "eu")))
    delete, insert = split_key_changes(entry, placement_of(mq()))
    (deleted,) = row_images(changed(delete))
    (inserted,) = row_images(changed(insert))
    assert deleted.after == () and deleted.before == row_images(changed(entry))[0].before
    assert inserted.before == ()
    assert [c.value for c in inserted.after] == ["2", "eu", "n"]
    assert all(c.updated for c in inserted.after)  # as on an INSERT: every column is set
    assert (delete.header.event_type, insert.header.event_type) == (
        EventType.DELETE,
        EventType.INSERT,
    )
    assert (delete.header.logfile_offset, insert.header.logfile_offset) == (
        entry.header.logfile_offset,
    ) * 2


def changed(entry: Entry) -> RowChange:
    assert entry.row_change is not None
    return entry.row_change


def _decoded_update(changes: list[tuple[str, str]]) -> Entry:
    plan = Plan.described([(0, "id", True, "bigint(20)", -5), (1, "note", False, "text", 12)])
    rows = tuple(
        decoded_row(plan, (old, "n"), (-5, 12), plan, (new, "m"), (-5, 12)) for old, new in changes
    )
    header = Header("mysql-bin.000003", 400, 1, 1000, "shop", "orders", EventType.UPDATE, "", 60)
    return Entry(header, EntryType.ROWDATA, RowChange(EventType.UPDATE, row_datas=rows))


def test_parser_rows_split_as_their_columns_do() -> None:
    """Rows straight from the parser (``DecodedRow``) read their decoded images; the records
    equal those of the same rows given as Columns."""
    decoded = _decoded_update([("1", "1"), ("2", "5"), ("3", "3")])
    columns = tuple(RowData(row.before, row.after) for row in row_images(changed(decoded)))
    plain = Entry(
        decoded.header, decoded.entry_type, RowChange(EventType.UPDATE, row_datas=columns)
    )
    records = build([decoded], mq())
    assert [m["type"] for m in messages(records)][-3:] == ["DELETE", "INSERT", "UPDATE"]
    assert records == build([plain], mq())


def test_split_records_are_the_same_both_ways() -> None:
    """The compiled path writes no record whose partition depends on its rows, so with a
    key hash it steps aside for every rows event; both encoders then agree."""
    entries = [_decoded_update([("1", "2"), ("4", "4")]), _decoded_update([("2", "3")])]
    python, compiled, counting = records_both_ways(entries, mq())
    assert compiled == python
    assert counting.written == 0
    assert [m["type"] for m in messages(python)].count("DELETE") == 2


def test_split_is_installed_for_every_format_only_where_it_can_apply() -> None:
    assert isinstance(rows_encoder(mq(), compiled=None), KeyChangeSplitter)
    assert not isinstance(rows_encoder(mq("update"), compiled=None), KeyChangeSplitter)
    assert not isinstance(rows_encoder(mq(partition_hash=""), compiled=None), KeyChangeSplitter)
    # The split reads row images: nothing may be rendered ahead without them.
    assert rows_encoder(mq(), compiled=None).ahead() is None


class RecordingEncoder:
    """A stand-in format: remembers the entries it is given, writes one record per entry."""

    rows_only = False

    def __init__(self) -> None:
        self.seen: list[Entry] = []

    def encode(self, entry: Entry, batch_id: int, ts: int) -> list[OutgoingRecord]:
        self.seen.append(entry)
        return [OutgoingRecord("t", 0, b"", entry.header.table_name.encode(), ())]

    def finish(self, batch_id: int, ts: int) -> list[OutgoingRecord]:
        return [OutgoingRecord("t", 0, b"", b"finished", ())]

    def ahead(self) -> AheadEncoding | None:
        return AheadEncoding(functools.partial(render_rows, limit=1000), RenderedRows)


def test_any_registered_format_is_given_the_halves(
    make: EntryMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = RecordingEncoder()
    monkeypatch.setitem(ENCODERS, format_name(mq()), lambda config, placement, compiled: fake)
    entry = update(make, (("1", "eu"), ("2", "eu")))
    records = record_builder(mq(), compiled=None).build([entry], BATCH, TS)
    assert [e.row_change.event_type for e in fake.seen if e.row_change] == [
        EventType.DELETE,
        EventType.INSERT,
    ]
    assert records[-1].value == b"finished"  # the format's batch end still reaches it
    assert rows_encoder(mq(), compiled=None).ahead() is None
    assert rows_encoder(mq("update"), compiled=None).ahead() is not None
