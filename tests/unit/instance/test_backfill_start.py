"""A start whose filter differs from the coverage its cursor records (scripted binlog reader,
no source): the newly selected tables are planned and the coverage moves with the plan when
the marker is acknowledged, not before (a crash before plans them again); the same filter plans
nothing; an older cursor records the filter and backfills nothing."""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from bridge.config import DestinationConfig
from bridge.entry import Entry
from bridge.meta import FileCursorStore, MemoryMetaManager, PersistentMetaManager
from bridge.position import (
    EntryPosition,
    FilterCoverage,
    LogIdentity,
    LogPosition,
    SnapshotProgress,
    TableProgress,
)
from bridge.snapshot import coordinator as coordinator_module
from bridge.snapshot.backfill import coverage_of
from tests.unit.instance.test_server import CLIENT, DESTINATION, ScriptedParser, serve, transaction
from tests.unit.instance.test_snapshot_request import FakeReader

SOURCE_TABLES = [("db", "a"), ("db", "b"), ("db", "t")]
SCRIPT = transaction(1, 2, 4) + transaction(2, 1, 404)
END = 704  # where the script's last transaction ends
OLD = FilterCoverage("db\\.a,db\\.t")


def widened(regex: str = "db\\.a,db\\.b,db\\.t") -> DestinationConfig:
    return DestinationConfig.model_validate(
        {**DESTINATION.model_dump(mode="json"), "filter": {"regex": regex}}
    )


@pytest.fixture(autouse=True)
def no_source(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No connection is opened; the source's tables are SOURCE_TABLES; the reader is the fake.
    Yields a list that grows by one each time the tables are listed."""
    FakeReader.started = []
    listed: list[int] = []

    def base_tables(_conn: Any) -> list[tuple[str, str]]:
        listed.append(1)
        return SOURCE_TABLES

    monkeypatch.setattr(
        coordinator_module, "open_connection", lambda _source: contextlib.nullcontext()
    )
    monkeypatch.setattr(coordinator_module, "base_tables", base_tables)
    monkeypatch.setattr(coordinator_module, "SnapshotReader", FakeReader)
    return listed


def meta_at(tmp_path: Path) -> PersistentMetaManager:
    return PersistentMetaManager(MemoryMetaManager(), FileCursorStore(tmp_path))


def saved_cursor(tmp_path: Path) -> LogPosition | None:
    meta = meta_at(tmp_path)
    meta.start()
    try:
        return meta.get_cursor(CLIENT)
    finally:
        meta.stop()


def write_cursor(tmp_path: Path, snapshot: SnapshotProgress | None) -> None:
    meta = meta_at(tmp_path)
    meta.start()
    meta.subscribe(CLIENT)
    identity = LogIdentity(DESTINATION.source.address, DESTINATION.source.slave_id)
    meta.update_cursor(CLIENT, LogPosition(identity, EntryPosition("binlog.000001", 4), snapshot))
    meta.flush(raise_errors=True)
    meta.stop()


def run_until_acked(tmp_path: Path, config: DestinationConfig, *, ack: bool) -> int:
    """Serve ``config`` from the saved cursor; get (and ack, if ``ack``) until the script's
    end is read, then stop as a crash would: whatever was not acked is not in the cursor.
    Returns how many tables the start backfilled (what the metrics export)."""
    server = serve(ScriptedParser(list(SCRIPT)), meta_at(tmp_path), config)
    try:
        seen: list[Entry] = []
        stop = threading.Event()
        for _ in range(100):  # bounded
            message = server.get_without_ack(CLIENT, 64, 0.05)
            seen += message.entries
            if ack and not message.empty:
                server.ack(CLIENT, message.batch_id)
            if seen and seen[-1].header.logfile_offset + seen[-1].header.event_length == END:
                break
            stop.wait(0.01)
        backfilled = server.instance(config.name).snapshots.backfilled
    finally:
        server.stop_all()
    return backfilled


def test_a_widened_filter_plans_its_new_tables_and_the_ack_moves_the_coverage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_cursor(tmp_path, SnapshotProgress((), OLD))
    config = widened()
    with caplog.at_level(logging.INFO, "bridge.snapshot.backfill"):
        assert run_until_acked(tmp_path, config, ack=True) == 1
    plan = SnapshotProgress((TableProgress("db.b"),), coverage_of(config))
    (reader,) = FakeReader.started
    assert reader.handoff.progress == plan  # db.a, db.t: covered, never read again
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.position.position == END
    assert cursor.snapshot == plan
    assert "the filter now selects db.b: snapshotting" in caplog.text


def test_a_crash_before_the_plan_is_acked_plans_it_again(tmp_path: Path) -> None:
    write_cursor(tmp_path, SnapshotProgress((), OLD))
    run_until_acked(tmp_path, widened(), ack=False)
    assert len(FakeReader.started) == 1  # planned and its marker put, not acked
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.snapshot == SnapshotProgress((), OLD)
    FakeReader.started = []
    run_until_acked(tmp_path, widened(), ack=True)
    (reader,) = FakeReader.started
    assert [t.table for t in reader.handoff.progress.tables] == ["db.b"]


def test_the_same_filter_reads_nothing_and_lists_no_table(
    tmp_path: Path, no_source: list[int]
) -> None:
    config = widened("db\\.a,db\\.t")
    write_cursor(tmp_path, SnapshotProgress((), coverage_of(config)))
    assert run_until_acked(tmp_path, config, ack=True) == 0
    assert FakeReader.started == []
    assert no_source == []
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.snapshot == SnapshotProgress((), coverage_of(config))


def test_a_narrowed_filter_reads_nothing_and_records_the_narrower_coverage(
    tmp_path: Path,
) -> None:
    write_cursor(tmp_path, SnapshotProgress((), OLD))
    config = widened("db\\.t")
    run_until_acked(tmp_path, config, ack=True)
    assert FakeReader.started == []
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.snapshot == SnapshotProgress((), coverage_of(config))


def test_an_older_cursor_records_the_filter_and_backfills_nothing(
    tmp_path: Path, no_source: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    write_cursor(tmp_path, None)
    config = widened()
    with caplog.at_level(logging.INFO, "bridge.snapshot.backfill"):
        run_until_acked(tmp_path, config, ack=True)
    assert FakeReader.started == [] and no_source == []
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.snapshot == SnapshotProgress((), coverage_of(config))
    assert "written by an older version" in caplog.text


def test_a_first_start_records_the_filter_with_its_first_cursor(tmp_path: Path) -> None:
    config = widened()
    parser = ScriptedParser([])
    server = serve(parser, meta_at(tmp_path), config)
    try:
        for _ in range(100):  # bounded: the first cursor is written before reading starts
            if parser.starts:
                break
            threading.Event().wait(0.02)
    finally:
        server.stop_all()
    cursor = saved_cursor(tmp_path)
    assert cursor is not None and cursor.snapshot == SnapshotProgress((), coverage_of(config))
