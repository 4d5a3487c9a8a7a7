"""Snapshot progress rides on the cursor: its JSON, each snapshot entry an ack point carrying
it, sticky across binlog transactions (store ranges, server acks, the exactly-once ledger)."""

from __future__ import annotations

import json

import pytest

from bridge.entry import Entry, EntryType, EventType, RowChange, RowData
from bridge.instance.instance import mq_client
from bridge.meta import MemoryMetaManager, MetaCodecError, dumps_log_position, loads_log_position
from bridge.mq.exactly_once import CommittedCursor, CursorLedger
from bridge.position import (
    EntryPosition,
    FilterCoverage,
    LogIdentity,
    LogPosition,
    SnapshotHeader,
    SnapshotProgress,
    TableProgress,
    ack_position_after,
    is_ack_point,
    resume_position_after,
)
from bridge.snapshot.backfill import coverage_of
from bridge.store import MemoryEventStore
from tests.unit.instance.test_server import DESTINATION, ScriptedParser, serve
from tests.unit.instance.test_server import transaction as server_transaction
from tests.unit.store.factories import BINLOG, IDENTITY, transaction

PLAN = SnapshotProgress(
    (TableProgress("shop.lines", [["int", "7"], ["str", "a"]], 7), TableProgress("shop.orders"))
)
AFTER_ROW = PLAN.with_table(TableProgress("shop.orders", [["int", "1"]], 1))
AFTER_END = PLAN.with_table(TableProgress("shop.orders", [["int", "1"]], 1, done=True))


def snapshot_entry(kind: EntryType, progress: SnapshotProgress | None, at: int = 500) -> Entry:
    header = SnapshotHeader(
        logfile_name=BINLOG,
        logfile_offset=at,
        server_id=1,
        execute_time=1_800_000_000_000,
        schema_name="shop",
        table_name="orders",
        event_type=EventType.INSERT if kind is EntryType.ROWDATA else None,
        chunk="shop.orders;0",
        progress=progress,
    )
    change = RowChange(EventType.INSERT, row_datas=(RowData(),))
    return Entry(header, kind, change if kind is EntryType.ROWDATA else None)


def chunk(at: int = 500) -> list[Entry]:
    return [
        snapshot_entry(EntryType.TRANSACTIONBEGIN, None, at),
        snapshot_entry(EntryType.ROWDATA, AFTER_ROW, at),
        snapshot_entry(EntryType.TRANSACTIONEND, AFTER_END, at),
    ]


# -- the cursor JSON ---------------------------------------------------------------------------


def test_the_progress_round_trips_in_the_cursor_json() -> None:
    cursor = LogPosition(IDENTITY, EntryPosition(BINLOG, 500), PLAN)
    text = dumps_log_position(cursor)
    assert loads_log_position(text) == cursor
    document = json.loads(text)
    assert document["snapshot"]["tables"][0] == {
        "table": "shop.lines",
        "lastKey": [["int", "7"], ["str", "a"]],
        "rows": 7,
        "done": False,
    }
    assert set(document) == {"@type", "identity", "postion", "snapshot"}  # canal's, plus one


def test_a_cursor_without_progress_has_no_snapshot_key() -> None:
    text = dumps_log_position(LogPosition(IDENTITY, EntryPosition(BINLOG, 4)))
    assert "snapshot" not in json.loads(text)
    assert loads_log_position(text).snapshot is None


def test_the_covered_filter_round_trips_and_an_older_cursor_loads_without_it() -> None:
    covered = SnapshotProgress(PLAN.tables, FilterCoverage("shop\\..*", "shop\\.tmp_.*"))
    cursor = LogPosition(IDENTITY, EntryPosition(BINLOG, 500), covered)
    text = dumps_log_position(cursor)
    assert json.loads(text)["snapshot"]["filter"] == {
        "regex": "shop\\..*",
        "blackRegex": "shop\\.tmp_.*",
    }
    assert loads_log_position(text) == cursor
    # As an older version wrote it: the plan alone.
    older = json.loads(text)
    del older["snapshot"]["filter"]
    assert loads_log_position(json.dumps(older)).snapshot == PLAN


def test_the_covered_filter_rides_with_every_step_of_the_plan() -> None:
    covered = SnapshotProgress(PLAN.tables, FilterCoverage("shop\\..*"))
    step = covered.with_table(TableProgress("shop.orders", [["int", "1"]], 1))
    assert step.covers == covered.covers and step.tables == AFTER_ROW.tables


@pytest.mark.parametrize(
    ("snapshot", "where"),
    [
        ({"tables": [], "filter": {"blackRegex": ""}}, "$.snapshot.filter.regex"),
        ({"tables": [], "filter": {"regex": 1}}, "$.snapshot.filter.regex"),
        ({"tables": [], "filter": "x"}, "$.snapshot.filter"),
        ({"tables": {}}, "$.snapshot.tables"),
        ({"tables": [{"rows": 1}]}, "$.snapshot.tables[0].table"),
        ({"tables": [{"table": "a.b", "rows": -1}]}, "$.snapshot.tables[0].rows"),
        ({"tables": [{"table": "a.b", "done": "yes"}]}, "$.snapshot.tables[0].done"),
    ],
)
def test_damaged_progress_is_refused_with_its_path(snapshot: object, where: str) -> None:
    document = json.loads(dumps_log_position(LogPosition(IDENTITY, EntryPosition(BINLOG, 4))))
    document["snapshot"] = snapshot
    with pytest.raises(MetaCodecError, match=where.replace("$", r"\$").replace("[", r"\[")):
        loads_log_position(json.dumps(document))


# -- ack points --------------------------------------------------------------------------------


def test_snapshot_rows_and_chunk_ends_are_ack_points_begins_are_not() -> None:
    begin, row, end = chunk()
    assert [is_ack_point(e) for e in (begin, row, end)] == [False, True, True]
    # Resuming after a snapshot entry resumes the stream where the chunk was put.
    assert resume_position_after(row).sort_key() == (BINLOG, 500)


def test_ack_positions_carry_the_entry_progress_or_keep_the_previous_one() -> None:
    _, row, end = chunk()
    binlog_end = transaction(600, 1)[-1]
    after_row = ack_position_after(IDENTITY, row, None)
    assert after_row.snapshot == AFTER_ROW
    after_txn = ack_position_after(IDENTITY, binlog_end, after_row)
    assert after_txn.snapshot == AFTER_ROW  # sticky
    assert after_txn.position.position == binlog_end.header.logfile_offset + 100
    assert ack_position_after(IDENTITY, end, after_txn).snapshot == AFTER_END
    assert ack_position_after(IDENTITY, binlog_end, None).snapshot is None


def test_a_store_batch_acks_with_the_newest_progress_before_its_last_ack_point() -> None:
    store = MemoryEventStore()
    store.start()
    store.put(IDENTITY, [*chunk(), *transaction(600, 2)])
    batch = store.get(100)
    assert batch.range is not None and batch.range.ack is not None
    assert batch.range.ack.snapshot == AFTER_END
    assert batch.range.ack.position.position == 600 + 4 * 100
    # A batch of binlog transactions only: no progress (the server keeps the cursor's).
    store.put(IDENTITY, transaction(1000, 1))
    only_binlog = store.get(100)
    assert only_binlog.range is not None and only_binlog.range.ack is not None
    assert only_binlog.range.ack.snapshot is None


def test_the_exactly_once_ledger_commits_the_progress_and_keeps_it() -> None:
    start = CommittedCursor(LogPosition(IDENTITY, EntryPosition(BINLOG, 400), PLAN))
    ledger = CursorLedger("d1", "offsets", IDENTITY, start)
    _, record = ledger.batch(1, chunk()[:2])  # cut inside the chunk, after its row
    committed = CommittedCursor.decode(record.value, "test")
    assert committed.cursor is not None and committed.cursor.snapshot == AFTER_ROW
    assert committed.rows_after == 0  # the row is an ack point: nothing to skip on resume
    ledger.acked(1)
    _, record = ledger.batch(2, transaction(600, 1))
    cursor = CommittedCursor.decode(record.value, "test").cursor
    assert cursor is not None and cursor.snapshot == AFTER_ROW


def test_the_exactly_once_offsets_record_keeps_the_covered_filter() -> None:
    covered = SnapshotProgress((), FilterCoverage("shop\\..*"))
    start = CommittedCursor(LogPosition(IDENTITY, EntryPosition(BINLOG, 400), covered))
    ledger = CursorLedger("d1", "offsets", IDENTITY, start)
    _, record = ledger.batch(1, transaction(600, 1))
    cursor = CommittedCursor.decode(record.value, "test").cursor
    assert cursor is not None and cursor.position.position > 400
    assert cursor.snapshot == covered


def test_the_server_ack_keeps_the_progress_across_binlog_batches() -> None:
    meta = MemoryMetaManager()
    meta.start()
    client = mq_client(DESTINATION.name)
    meta.subscribe(client)
    identity = LogIdentity(DESTINATION.source.address, DESTINATION.source.slave_id)
    # Covering the destination's filter: a start then plans nor puts anything more.
    plan = SnapshotProgress(PLAN.tables, coverage_of(DESTINATION))
    meta.update_cursor(client, LogPosition(identity, EntryPosition("binlog.000001", 4), plan))
    server = serve(ScriptedParser(server_transaction(1, 2, 4)), meta)
    try:
        batch = server.get_without_ack(client, 10, 2.0)
        server.ack(client, batch.batch_id)
        cursor = meta.get_cursor(client)
        assert cursor is not None and cursor.position.position == 404
        assert cursor.snapshot == plan
    finally:
        server.stop_all()
