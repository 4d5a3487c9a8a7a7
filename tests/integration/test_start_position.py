"""Each start mode of canal's findStartPosition picks the right position on real MariaDB and
MySQL servers (file and position, timestamp, GTID: MariaDB's ``0-1-N``, MySQL's ``<uuid>:1-N``
sets)."""

from __future__ import annotations

import time

import pytest

from bridge.config import StartConfig
from bridge.entry import EntryType, EventType
from bridge.instance.start_position import StartPositionFinder
from bridge.parse.exceptions import BinlogPurged
from bridge.parse.source import preflight
from bridge.position import EntryPosition, LogIdentity, LogPosition
from tests.conftest import MysqlEndpoint, gtid_state_at
from tests.integration.binlog_helpers import (
    Connection,
    execute,
    master_position,
    read_entries,
    rows_of,
    source_config,
)

pytestmark = pytest.mark.both_servers


@pytest.fixture
def history(admin_connection: Connection, scratch_schema: str) -> dict[str, object]:
    """Three transactions in three different seconds of one binlog file, with their start
    positions and the second (epoch) each began in."""
    execute(admin_connection, "FLUSH BINARY LOGS")
    execute(admin_connection, f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, v INT)")
    marks = []
    for i in range(3):
        if i:  # into the next second, well clear of its start
            time.sleep(1.3 - time.time() % 1)
        before = master_position(admin_connection)
        second = int(time.time())  # binlog times have second resolution and never run back
        execute(
            admin_connection,
            "BEGIN",
            f"INSERT INTO `{scratch_schema}`.t VALUES ({i}, {i})",
            f"UPDATE `{scratch_schema}`.t SET v = v + 1 WHERE id = {i}",
            "COMMIT",
        )
        marks.append((before, second))
    return {"marks": marks, "end": master_position(admin_connection)}


def _finder(mysql: MysqlEndpoint, start: StartConfig, **kwargs: object) -> StartPositionFinder:
    source = source_config(mysql)
    return StartPositionFinder(source, preflight(source), start, **kwargs)  # type: ignore[arg-type]


def test_nothing_configured_starts_at_the_current_end(
    mysql: MysqlEndpoint, admin_connection: Connection, history: dict[str, object]
) -> None:
    assert _finder(mysql, StartConfig()).find(None) == master_position(admin_connection)


def test_configured_file_and_position_inside_a_transaction_realigns_to_its_start(
    mysql: MysqlEndpoint, history: dict[str, object]
) -> None:
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    second = marks[1][0]
    assert second.position is not None
    inside = StartConfig(journal_name=second.journal_name, position=second.position + 60)
    found = _finder(mysql, inside).find(None)
    assert (found.journal_name, found.position) == (second.journal_name, second.position)
    exact = StartConfig(journal_name=second.journal_name, position=second.position)
    assert _finder(mysql, exact).find(None).position == second.position


def test_timestamp_only_finds_the_first_transaction_at_or_after_it(
    mysql: MysqlEndpoint, history: dict[str, object]
) -> None:
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    second_position, second_time = marks[1]
    found = _finder(mysql, StartConfig(timestamp=second_time * 1000)).find(None)
    assert (found.journal_name, found.position) == (
        second_position.journal_name,
        second_position.position,
    )


def test_file_and_timestamp_searches_that_file(
    mysql: MysqlEndpoint, history: dict[str, object]
) -> None:
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    third_position, third_time = marks[2]
    start = StartConfig(journal_name=third_position.journal_name, timestamp=third_time * 1000)
    found = _finder(mysql, start).find(None)
    assert found.position == third_position.position


def test_gtid_configured_is_used_as_is(mysql: MysqlEndpoint, admin_connection: Connection) -> None:
    gtid = "0-1-5"
    if mysql.flavor == "mysql":
        with admin_connection.cursor() as cur:
            cur.execute("SELECT @@server_uuid")
            ((uuid,),) = cur.fetchall()
        gtid = f"{uuid}:1-5"
    assert _finder(mysql, StartConfig(gtid=gtid)).find(None) == EntryPosition(gtid=gtid)


def test_gtid_state_starts_the_dump_at_the_next_transaction(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    history: dict[str, object],
) -> None:
    """The GTID state right before the second transaction (MariaDB ``0-1-N``, MySQL
    ``<uuid>:1-N``), configured as the start: the dump begins with that transaction."""
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    second = marks[1][0]
    assert second.journal_name is not None and second.position is not None
    state = gtid_state_at(admin_connection, mysql, second.journal_name, second.position)
    start = _finder(mysql, StartConfig(gtid=state)).find(None)
    assert start == EntryPosition(gtid=state)
    end: EntryPosition = history["end"]  # type: ignore[assignment]
    entries = read_entries(source_config(mysql), start, end)
    first = entries[0]
    assert first.entry_type is EntryType.TRANSACTIONBEGIN
    assert (first.header.logfile_name, first.header.logfile_offset) >= (
        second.journal_name,
        second.position,
    )
    inserted = [
        e.row_change.row_datas[0].after[0].value
        for e in rows_of(entries)
        if e.header.schema_name == scratch_schema
        and e.header.event_type is EventType.INSERT
        and e.row_change
    ]
    assert inserted == ["1", "2"]  # the second and third transactions


def test_known_cursor_on_the_same_source_resumes_from_it(
    mysql: MysqlEndpoint, history: dict[str, object]
) -> None:
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    cursor = marks[2][0]
    known = LogPosition(LogIdentity(mysql.address, 1234), cursor)
    found = _finder(mysql, StartConfig(timestamp=0)).find(known)
    assert (found.journal_name, found.position) == (cursor.journal_name, cursor.position)


def test_known_cursor_from_another_source_searches_by_time_minus_fallback(
    mysql: MysqlEndpoint, history: dict[str, object]
) -> None:
    marks: list[tuple[EntryPosition, int]] = history["marks"]  # type: ignore[assignment]
    second_position, second_time = marks[1]
    third_time = marks[2][1]
    cursor = EntryPosition("other-bin.000042", 999, timestamp=third_time * 1000)
    known = LogPosition(LogIdentity("10.0.0.9:3306", 1234), cursor)
    fallback = third_time - second_time  # back to the second transaction
    found = _finder(mysql, StartConfig(), fallback_interval_s=fallback).find(known)
    assert (found.journal_name, found.position) == (
        second_position.journal_name,
        second_position.position,
    )


@pytest.mark.parametrize("on_purged", ["fail", "oldest", "latest"])
def test_purged_cursor_follows_on_purged(
    mysql: MysqlEndpoint, admin_connection: Connection, on_purged: str
) -> None:
    base = (master_position(admin_connection).journal_name or "").rsplit(".", 1)[0]
    gone = EntryPosition(f"{base}.000000", 4)  # the server's own file naming, never written
    known = LogPosition(LogIdentity(mysql.address, 1234), gone)
    finder = _finder(mysql, StartConfig(), on_purged=on_purged)
    if on_purged == "fail":
        with pytest.raises(BinlogPurged, match=rf"{base}\.000000:4 is no longer on the source"):
            finder.find(known)
        return
    found = finder.find(known)
    with admin_connection.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        oldest = cur.fetchall()[0][0]
    expected = (
        EntryPosition(oldest, 4) if on_purged == "oldest" else master_position(admin_connection)
    )
    assert (found.journal_name, found.position) == (expected.journal_name, expected.position)
