"""The binlog reader in its own process (``ParserProcess``) on real MariaDB and MySQL servers: the
same entries as the in-process parser, errors raised as themselves, and no child left behind."""

from __future__ import annotations

import functools
import itertools
import marshal
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from bridge.entry import Entry, EntryType
from bridge.mq.rendering import EventRenderer, render_rows
from bridge.parse.child import ParserProcess
from bridge.parse.entry_codec import (
    FLAT_ENTRY_TYPE,
    FLAT_SCHEMA_NAME,
    FLAT_TABLE_NAME,
    EntryEncoder,
    FlatEntry,
    binlog_end,
)
from bridge.parse.exceptions import BinlogPurged, ParserProcessFailed
from bridge.parse.parser import BinlogParser
from bridge.position import EntryPosition
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import (
    Connection,
    execute,
    master_position,
    read_entries,
    source_config,
    stop_after,
)
from tests.processes import alive, gone_within

pytestmark = pytest.mark.both_servers


def _child_pid(parser: ParserProcess) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        child = parser._child
        if child is not None:
            return child.pid
        time.sleep(0.05)
    raise AssertionError("no child process started")


def test_same_entries_as_the_parser_in_this_process(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    t = f"`{scratch_schema}`.t"
    start = master_position(admin_connection)
    execute(
        admin_connection,
        f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, q INT UNSIGNED, note VARCHAR(20), "
        "price DECIMAL(12,2), at DATETIME(6), ts TIMESTAMP(3) NULL, doc JSON, bin VARBINARY(4))",
        f"INSERT INTO {t} VALUES (1, 4294967295, 'a ✓', 12.50, '2024-05-17 12:34:56.000001', "
        "'2024-05-17 12:34:56.123', '{\"k\": [1, 2]}', x'00ff'), "
        "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        f"UPDATE {t} SET note = 'b', price = -0.01 WHERE id = 1",
        f"ALTER TABLE {t} ADD COLUMN extra INT DEFAULT 7",
        f"UPDATE {t} SET extra = 8 WHERE id = 2",
        f"DELETE FROM {t} WHERE id = 1",
    )
    end = master_position(admin_connection)
    source = source_config(mysql)
    here = read_entries(source, start, end, time_zone="+00:00")
    there = read_entries(source, start, end, time_zone="+00:00", reader=ParserProcess)
    mine = [e for e in there if e.header.schema_name == scratch_schema]
    assert there == here
    assert len([e for e in mine if e.entry_type is EntryType.ROWDATA]) == 6
    # A FlatMessage destination's reader leaves the BEGINs out (MariaDB's GTID event and
    # MySQL's QUERY BEGIN alike), here and in the child; every other entry comes as it was.
    assert len([e for e in here if e.entry_type is EntryType.TRANSACTIONBEGIN]) >= 3
    for reader in (BinlogParser, ParserProcess):
        lean = functools.partial(reader, begins=False)
        assert read_entries(source, start, end, time_zone="+00:00", reader=lean) == [
            e for e in here if e.entry_type is not EntryType.TRANSACTIONBEGIN
        ]


def _sent(
    mysql: MysqlEndpoint, start: EntryPosition, end: EntryPosition, *, flat: bool
) -> tuple[Any, list[Entry | FlatEntry]]:
    """What the binlog reader's process sends of the entries from ``start`` to ``end``
    (heartbeats aside), rows written ahead as FlatMessage records (``EntryEncoder``'s data,
    unmarshalled), and the entries as the parser handed them over."""
    limit = 1_000_000
    parser = BinlogParser(
        source_config(mysql),
        time_zone="+00:00",
        heartbeat_period_s=1,
        encode_event=EventRenderer(limit),
    )
    taken: list[Entry | FlatEntry] = []
    with stop_after(parser, 30):
        flat_entries = itertools.chain.from_iterable(parser.flat_batches(start))
        for entry in flat_entries if flat else parser.entries(start):
            if not isinstance(entry, tuple) and entry.entry_type is EntryType.HEARTBEAT:
                continue
            taken.append(entry)
            if binlog_end(entry) >= (end.journal_name, end.position):
                break
    encoder = EntryEncoder(functools.partial(render_rows, limit=limit))
    return marshal.loads(encoder.encode(taken)), taken


def test_entries_made_flat_from_their_bytes_cross_as_the_entries_would(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    # The binlog reader's process converts rows, XID and MariaDB GTID events straight to what
    # crosses the pipe (EventConverter.flat_entries): the same data as converting them to
    # entries and encoding those, for rows written ahead and for rows that are not (the
    # latin1 and ENUM columns are decoded in Python, then rendered; so is MySQL's JSON, left
    # out here).
    t, legacy = f"`{scratch_schema}`.t", f"`{scratch_schema}`.legacy"
    start = master_position(admin_connection)
    execute(
        admin_connection,
        f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, note VARCHAR(20), price DECIMAL(12,2), "
        "at DATETIME(6))",
        f"CREATE TABLE {legacy} (id INT PRIMARY KEY, name VARCHAR(10) CHARACTER SET latin1, "
        "kind ENUM('a', 'b'))",
        f"INSERT INTO {t} VALUES (1, 'a ✓', 12.50, '2024-05-17 12:34:56.000001'), "
        "(2, NULL, NULL, NULL)",
        f"INSERT INTO {t} VALUES (3, 'one row', -0.01, NULL)",
        f"UPDATE {t} SET note = 'b' WHERE id = 1",
        f"INSERT INTO {legacy} VALUES (1, 'caf\xe9', 'b')",
        f"DELETE FROM {t} WHERE id = 2",
    )
    end = master_position(admin_connection)
    sent, handed = _sent(mysql, start, end, flat=True)
    assert sent == _sent(mysql, start, end, flat=False)[0]
    rows = [
        (e[FLAT_TABLE_NAME], True) if isinstance(e, tuple) else (e.header.table_name, False)
        for e in handed
        if (e[FLAT_SCHEMA_NAME] if isinstance(e, tuple) else e.header.schema_name) == scratch_schema
        and (
            e[FLAT_ENTRY_TYPE] == "ROWDATA"
            if isinstance(e, tuple)
            else e.row_change and not e.is_ddl
        )
    ]
    assert rows == [("t", True)] * 3 + [("legacy", False), ("t", True)], "(table, flat)"
    ends = [e for e in handed if isinstance(e, tuple) and e[FLAT_ENTRY_TYPE] == "TRANSACTIONEND"]
    assert len(ends) >= 5, "each XID of the five changes crossed flat"


def test_the_batch_that_reaches_what_the_source_wrote_says_it_caught_up(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    t = f"`{scratch_schema}`.t"
    execute(admin_connection, f"CREATE TABLE {t} (id INT PRIMARY KEY)")
    start = master_position(admin_connection)
    # 1,500 one-row transactions: 4,500 entries, more than a batch holds (GROUP_ENTRIES).
    with admin_connection.cursor() as cur:
        for i in range(1500):  # one statement each (executemany would make it one INSERT)
            cur.execute(f"INSERT INTO {t} VALUES (%s)", (i,))
    end = master_position(admin_connection)
    parser = ParserProcess(source_config(mysql), heartbeat_period_s=30)
    flags: list[bool] = []
    with stop_after(parser, 60):
        for batch in parser.batches(start):
            flags.append(parser.caught_up)
            last = batch[-1].header
            if (last.logfile_name, last.logfile_offset + last.event_length) >= (
                end.journal_name,
                end.position,
            ):
                break
    assert flags[-1], "the batch ending at the source's last event is caught up"
    assert not all(flags), "a full batch read from a backlog is not"


def test_a_purged_start_raises_binlog_purged_from_the_child(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    base = (master_position(admin_connection).journal_name or "").rsplit(".", 1)[0]
    start = EntryPosition(f"{base}.999999", 4)  # the server's own file naming, never written
    parser = ParserProcess(source_config(mysql), heartbeat_period_s=1)
    with pytest.raises(BinlogPurged) as raised:
        next(parser.entries(start))
    with pytest.raises(BinlogPurged) as expected:
        next(BinlogParser(source_config(mysql), heartbeat_period_s=1).entries(start))
    assert str(raised.value) == str(expected.value)
    assert raised.value.position == start


def test_stop_ends_a_waiting_read_and_the_child(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    parser = ParserProcess(source_config(mysql), heartbeat_period_s=30)
    entries = parser.entries(master_position(admin_connection))
    ended = threading.Event()

    def consume() -> None:
        for _ in entries:
            pass
        ended.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    pid = _child_pid(parser)
    time.sleep(0.5)  # the child now waits for the source, which has nothing to send
    parser.stop()
    assert ended.wait(10), "entries() did not end after stop()"
    assert not alive(pid)


def test_a_child_that_dies_is_reported_with_its_exit_code(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    parser = ParserProcess(source_config(mysql), heartbeat_period_s=30)
    entries = parser.entries(master_position(admin_connection))
    failure: list[BaseException] = []

    def consume() -> None:
        try:
            for _ in entries:
                pass
        except ParserProcessFailed as exc:
            failure.append(exc)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    pid = _child_pid(parser)
    os.kill(pid, signal.SIGKILL)
    thread.join(10)
    assert failure, "a killed child went unnoticed"
    assert f"exit code {-signal.SIGKILL}" in str(failure[0])
    parser.stop()


def test_preflight_starts_the_child_that_then_reads(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    parser = ParserProcess(source_config(mysql), heartbeat_period_s=30)
    entries = parser.entries(master_position(admin_connection))
    standby: list[subprocess.Popen[bytes] | None] = []
    first: list[Entry] = []

    def read() -> None:  # preflight, then read, on one thread as the instance does
        parser.preflight()
        standby.append(parser._standby)
        first.append(next(entries))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        while not standby and thread.is_alive():
            time.sleep(0.01)
        execute(admin_connection, f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY)")
        thread.join(30)
        assert standby and standby[0] is not None, "preflight started no child"
        assert first, "the child started ahead read nothing"
        assert parser._child is standby[0] and parser._standby is None  # not a second child
    finally:
        parser.stop()
        thread.join(10)
        entries.close()  # reaps the child
    assert standby[0].poll() is not None


_PARENT = """
import sys, threading, time
from bridge.config import SourceConfig
from bridge.parse.child import ParserProcess
from bridge.position import EntryPosition

address, user, password, journal, position = sys.argv[1:6]
parser = ParserProcess(
    SourceConfig(address=address, username=user, password=password, slave_id=5999),
    heartbeat_period_s=30,
)
entries = parser.entries(EntryPosition(journal, int(position)))

def report():
    while parser._child is None:
        time.sleep(0.05)
    print(parser._child.pid, flush=True)

threading.Thread(target=report, daemon=True).start()
next(entries)  # blocks: nothing to read
"""


def test_the_child_is_in_its_own_session_and_dies_with_its_parent(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    start = master_position(admin_connection)
    where = [start.journal_name or "", str(start.position)]
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, mysql.address, mysql.user, mysql.password, *where],
        stdout=subprocess.PIPE,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert os.getsid(child) == child != os.getsid(0)  # Ctrl-C for the bridge skips it
        parent.kill()  # no chance to clean up
        parent.wait(10)
        assert gone_within(child), "the child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
