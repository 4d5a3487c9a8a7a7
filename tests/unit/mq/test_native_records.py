"""The compiled record path writes the same bytes (JSON value, key, headers, partition) as
the pure-Python FlatMessage path, and leaves to Python what only Python handles."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from bridge.config import MqConfig
from bridge.entry import Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.exceptions import RenderedRowsMisfit
from bridge.mq.flat_encoder import RenderedRecords, RenderedRows
from bridge.mq.formats import record_builder
from bridge.mq.records import HEADER_GTID, HEADER_SNAPSHOT, RECORD_OVERHEAD
from bridge.mq.rendering import render_rows, render_rows_apart
from bridge.parse.binlog.rows import Plan, RowDecoder, decoded_row
from bridge.position import SnapshotHeader
from tests.native_paths import (
    BATCH_ID,
    BUILD_TS,
    DEFAULT_MQ,
    compiled_module,
    records_both_ways,
    records_rendered,
)
from tests.unit.parse.test_decoded_rows import CASES
from tests.unit.parse.test_rows import TABLE

NAMES = ("id", "k2", "note", 'q"uote', "wide\\col", "émoji")
TEXTS = ("", "a", "0", "-12.50", 'say "hi"\\', "tab\there\nnew\r", "\x00\x01\x1f\x7f", "é😀\u2028")


def _plan(present: tuple[int, ...], keys: tuple[str, ...]) -> Plan:
    return Plan.described(
        [(i, NAMES[i], NAMES[i] in keys, f"varchar({i + 1})", 12) for i in present]
    )


def _entry(event_type: EventType, rows: tuple[RowData, ...], table: str = "orders") -> Entry:
    header = Header("mariadb-bin.000001", 4, 1, 1000, "shop", table, event_type, "0-1-2", 50)
    return Entry(header, EntryType.ROWDATA, RowChange(event_type, row_datas=rows))


def _random_entry(rng: random.Random) -> Entry:
    keys = rng.choice([(), ("id",), ("id", "k2")])
    full = _plan(tuple(range(len(NAMES))), keys)
    plans = [full, _plan((0, 2, 3), keys), _plan((0, 1, 4, 5), keys)]
    event_type = rng.choice([EventType.INSERT, EventType.UPDATE, EventType.DELETE])
    key_pool = [rng.choice(["1", "2", None]) for _ in range(2)]

    def values(plan: Plan) -> tuple[str | None, ...]:
        return tuple(
            rng.choice(key_pool) if name in ("id", "k2") else rng.choice((*TEXTS, None))
            for name in plan.names
        )

    def types(plan: Plan) -> tuple[int, ...]:
        return tuple(rng.choice((12, 12, 4, -5)) for _ in plan.names)

    rows = []
    for _ in range(rng.choice((1, 1, 2, 5))):
        old = rng.choice(plans) if event_type is not EventType.INSERT else None
        new = rng.choice(plans) if event_type is not EventType.DELETE else None
        old_values = values(old) if old else ()
        new_values = values(new) if new else ()
        if old and new is old and rng.random() < 0.5:  # some columns unchanged
            new_values = tuple(
                v if rng.random() < 0.5 else o for v, o in zip(new_values, old_values, strict=True)
            )
        rows.append(
            decoded_row(
                old,
                old_values,
                types(old) if old else (),
                new,
                new_values,
                types(new) if new else (),
            )
        )
    return _entry(event_type, tuple(rows), table=rng.choice(["orders", ""]))


def test_random_rows_events_give_the_same_records_both_ways() -> None:
    rng = random.Random(20261122)
    entries = [_random_entry(rng) for _ in range(500)]
    python, compiled, counting = records_both_ways(entries)
    assert compiled == python
    assert counting.written == len(entries) and counting.declined == 0
    assert {r.key.count(b"[") for r in python} == {0, 1}  # composite / null keys were covered


@pytest.mark.parametrize(("kind", "event_type", "body"), CASES)
def test_decoded_rows_of_real_row_images_give_the_same_records(
    kind: str, event_type: EventType, body: bytes
) -> None:
    entry = _entry(event_type, RowDecoder(TABLE).decode(kind, body))  # type: ignore[arg-type]
    python, compiled, counting = records_both_ways([entry])
    assert compiled == python and counting.written == 1


def test_rows_without_decoded_images_and_ddl_stay_on_the_python_path() -> None:
    (row,) = RowDecoder(TABLE).decode(*CASES[0][::2])[:1]  # type: ignore[misc]
    plain = _entry(EventType.INSERT, (RowData(before=row.before, after=row.after),))
    header = Header("f", 4, 1, 1000, "shop", "orders", EventType.ALTER, "", 50)
    ddl = Entry(header, EntryType.ROWDATA, RowChange(EventType.ALTER, is_ddl=True, sql="alter x"))
    python, compiled, counting = records_both_ways([plain, ddl])
    assert compiled == python and len(python) == 2
    assert counting.written == 0


def test_hashed_partitions_and_oversize_records_are_left_to_python() -> None:
    rng = random.Random(7)
    entries = [_random_entry(rng) for _ in range(50)]
    hashed = MqConfig(topic="t", partitions=3, partition_hash=".*\\..*:$pk$")
    python, compiled, counting = records_both_ways(entries, hashed)
    assert compiled == python and counting.written == 0
    assert len({r.partition for r in python}) > 1

    one_partition = MqConfig(topic="t", partitions=1, partition_hash=".*\\..*:$pk$")
    python, compiled, counting = records_both_ways(entries, one_partition)
    assert compiled == python and counting.written == len(entries)

    small = MqConfig(topic="t", oversize="split")
    python, compiled, counting = records_both_ways(entries, small, max_record_bytes=1200)
    assert compiled == python
    assert len(python) > len(entries)  # some messages were too large and split


def test_records_rendered_by_the_reader_process_are_the_same_bytes() -> None:
    """Rendered in the child without batch id and build time, carried as bytes, finished by
    the builder: the same records as both other paths, for every random rows event."""
    rng = random.Random(11)
    entries = [_random_entry(rng) for _ in range(300)]
    python, _, _ = records_both_ways(entries)
    rendered, count = records_rendered(entries)
    assert rendered == python and count == len(entries)


def test_records_over_the_render_limit_keep_their_rows_for_the_oversize_policy() -> None:
    rng = random.Random(7)
    entries = [_random_entry(rng) for _ in range(50)]
    small = MqConfig(topic="t", oversize="split")
    python, _, _ = records_both_ways(entries, small, max_record_bytes=1200)
    rendered, count = records_rendered(entries, small, max_record_bytes=1200, limit=600)
    assert rendered == python
    assert 0 < count < len(entries)
    assert len(python) > len(entries)  # the unrendered large ones were split as usual


def test_rendered_rows_that_the_destination_would_hash_are_refused_loudly() -> None:
    compiled_module()
    entry = _random_entry(random.Random(13))
    assert entry.row_change is not None
    parts = render_rows(entry.header, entry.row_change, 1 << 20)
    assert parts is not None and parts[0] == len(entry.row_change.row_datas)
    rendered = RenderedRows(*parts)
    hashed = record_builder(
        MqConfig(topic="t", partitions=4, partition_hash=".*\\..*:id"), compiled=compiled_module()
    )
    arrived = Entry(
        entry.header, entry.entry_type, RowChange(entry.row_change.event_type, row_datas=rendered)
    )
    with pytest.raises(RenderedRowsMisfit, match="hashed over partitions"):
        hashed.build([arrived], 1, 2)


def test_rendered_rows_are_refused_exactly_where_placement_fits_refuses_them() -> None:
    """The builder tests a rendered record's size inline, not with ``Placement.fits`` (a
    quarter of a microsecond per record). Rendered for a larger limit than the destination's
    (a bug), a record is refused at exactly the sizes ``fits`` refuses, long file names and
    GTIDs included (they take the inline test's other branch)."""
    builder = record_builder(DEFAULT_MQ, compiled=compiled_module())
    base = _random_entry(random.Random(3))
    assert base.row_change is not None
    wide = "\U0001f600" * 700  # four bytes a character in the headers: ``fits``'s worst case
    # The largest position and server id: the headers then use all the digits ``fits``
    # allows for, and the test leaves no slack an error in the inline bound could hide in.
    streamed = dataclasses.replace(base.header, logfile_offset=2**64 - 1, server_id=2**32 - 1)
    snapshot = SnapshotHeader(**dataclasses.asdict(streamed), chunk="c" * 3000)
    cases = [
        (streamed, "mariadb-bin.000001", "0-1-2"),
        (streamed, "f" * 3000, ""),
        (streamed, "f", wide),
        (streamed, wide, "0-1-2"),
        (streamed, wide, wide),  # every byte ``fits`` counts is there
        (snapshot, "mariadb-bin.000001", "0-1-2"),  # its chunk header counts too
    ]
    for at, name, gtid in cases:
        header = dataclasses.replace(at, logfile_name=name, gtid=gtid)
        parts = render_rows(header, base.row_change, 1 << 20)
        assert parts is not None
        change = RowChange(base.row_change.event_type, row_datas=RenderedRows(*parts))
        arrived = Entry(header, base.entry_type, change)
        (record,) = builder.build([arrived], BATCH_ID, BUILD_TS)
        least = len(record.value) + len(record.key) + RECORD_OVERHEAD
        refused = []
        for limit in range(least - 2, least + 4 * (len(name) + len(gtid)) + 12_200):
            small = record_builder(DEFAULT_MQ, max_record_bytes=limit, compiled=compiled_module())
            placement = small.encoder.placement
            fits = placement.fits(record.value, record.key, header, record.headers)
            try:
                assert small.build([arrived], BATCH_ID, BUILD_TS) == [record]
                refused.append(False)
            except RenderedRowsMisfit:
                refused.append(True)
            assert refused[-1] is not fits, (name[:20], gtid[:20], limit)
        assert refused[0] and not refused[-1]


def test_a_snapshot_rows_message_carries_no_gtid_its_headers_name_where_it_went_in() -> None:
    """A snapshot row comes from no binlog transaction: its FlatMessage's gtid is empty on
    every path (Python, compiled, rendered ahead by a snapshot reader's process), while its
    Kafka headers name the stream position its chunk was put at, GTID included. A streamed
    row keeps its transaction's GTID (the comparison can tell the two apart)."""
    row = decoded_row(None, (), (), _plan((0, 2), ("id",)), ("1", "a"), (4, 12))
    at = dict(logfile_name="mariadb-bin.000001", logfile_offset=4, server_id=1, gtid="0-1-2")
    snapshot = SnapshotHeader(
        **at, execute_time=1000, schema_name="shop", table_name="orders",
        event_type=EventType.INSERT, chunk="shop.orders;0",
    )  # fmt: skip
    streamed = Header(**at, execute_time=1000, schema_name="shop", table_name="orders")
    entries = [
        Entry(header, EntryType.ROWDATA, RowChange(EventType.INSERT, row_datas=(row,)))
        for header in (snapshot, streamed)
    ]
    python, compiled, _ = records_both_ways(entries)
    rendered, count = records_rendered(entries)
    assert count == 2
    for records in (python, compiled, rendered):
        assert [json.loads(r.value)["gtid"] for r in records] == ["", "0-1-2"]
    assert [r.value for r in compiled] == [r.value for r in python] == [r.value for r in rendered]
    assert (HEADER_GTID, b"0-1-2") in python[0].headers
    assert (HEADER_SNAPSHOT, b"shop.orders;0") in python[0].headers


def _snapshot_entry(rows: tuple[RowData, ...] | RenderedRecords) -> Entry:
    header = SnapshotHeader(
        "mariadb-bin.000001", 4, 1, 1000, "shop", "orders", EventType.INSERT, "0-1-2",
        chunk="shop.orders;3",
    )  # fmt: skip
    return Entry(header, EntryType.ROWDATA, RowChange(EventType.INSERT, row_datas=rows))


def test_snapshot_rows_rendered_apart_are_the_records_of_each_row_alone() -> None:
    """A snapshot entry's rows become a record each, keyed by the row's key, on every path:
    pure Python, compiled, and rendered apart in one call by a snapshot reader's process
    (``render_rows_apart``), whole or with rows left out (``pick``)."""
    compiled_module()
    rng = random.Random(5)
    plan = _plan(tuple(range(len(NAMES))), ("id",))
    # Equal sql types in distinct tuples (as decoded rows carry them): the compiled path
    # writes every row's record after the first from its head alone.
    rows = tuple(
        decoded_row(
            None, (), (), plan, (str(i), *(rng.choice(TEXTS) for _ in NAMES[1:])),
            tuple([4, *(12 for _ in NAMES[1:])]),
        )
        for i in range(6)
    )  # fmt: skip
    entry = _snapshot_entry(rows)
    python, compiled, _ = records_both_ways([entry])
    assert compiled == python
    assert [r.key for r in python] == [f"shop.orders:{i}".encode() for i in range(6)]
    assert [json.loads(r.value)["data"] for r in python] == [
        [dict(zip(NAMES, row.new_values, strict=True))] for row in rows
    ]
    change = entry.row_change
    assert change is not None
    parts = render_rows_apart(entry.header, change, 1 << 20)
    assert parts is not None
    rendered = RenderedRecords(*parts)
    builder = record_builder(DEFAULT_MQ, compiled=compiled_module())
    assert builder.build([_snapshot_entry(rendered)], BATCH_ID, BUILD_TS) == python
    picked = builder.build([_snapshot_entry(rendered.pick([0, 4]))], BATCH_ID, BUILD_TS)
    assert picked == [python[0], python[4]]
    # Rendered for another destination's limit (a bug): refused, not sent over the limit.
    small = record_builder(DEFAULT_MQ, max_record_bytes=400, compiled=compiled_module())
    with pytest.raises(RenderedRowsMisfit, match="over the size limit"):
        small.build([_snapshot_entry(rendered)], BATCH_ID, BUILD_TS)
    # A row over the limit, or rows of two plans (their messages differ after the head),
    # are not rendered apart: the rows cross as rows.
    assert render_rows_apart(entry.header, change, 100) is None
    other = decoded_row(None, (), (), _plan((0, 2), ("id",)), ("9", "x"), (4, 12))
    mixed = RowChange(EventType.INSERT, row_datas=(*rows, other))
    assert render_rows_apart(entry.header, mixed, 1 << 20) is None
    retyped = decoded_row(None, (), (), plan, rows[0].new_values, (-5, *(12 for _ in NAMES[1:])))
    mixed = RowChange(EventType.INSERT, row_datas=(*rows, retyped))
    assert render_rows_apart(entry.header, mixed, 1 << 20) is None
