"""The parser on real MariaDB and MySQL servers: transaction framing, GTIDs, XIDs, header
positions, the ``updated`` flags of row images, and a GTID start.

The local servers are shared with other tests running at the same time, so every check picks
this test's own transactions out of the stream (by schema or GTID) and reads the GTID a commit
got from the server (``last_gtid``).

Where the servers differ: MariaDB opens a transaction with its GTID event (``BEGIN GTID
0-1-N``), MySQL with a ``BEGIN`` query after its GTID event (``<uuid>:N``); MariaDB writes v1
rows events, MySQL v2 ones.
"""

from __future__ import annotations

import os
import re
import threading
import time

import pytest

from bridge.entry import Column, Entry, EntryType, EventType
from bridge.parse.parser import BinlogParser
from bridge.position import EntryPosition, resume_position_after
from tests.conftest import (
    GTID_EVENTS,
    MysqlEndpoint,
    declared,
    gtid_number,
    gtid_state_at,
    last_gtid,
)
from tests.integration.binlog_helpers import (
    Connection,
    execute,
    master_position,
    read_entries,
    rows_of,
    source_config,
)

pytestmark = pytest.mark.both_servers

# Rows of 1..3000 on both servers (recursive CTEs stop at 1000 rows by default on both).
_DIGITS = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
SEQ_1_TO_3000 = (
    f"SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 1 AS seq FROM ({_DIGITS}) a, "
    f"({_DIGITS}) b, ({_DIGITS}) c, (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2) e"
)


def _query(conn: Connection, sql: str) -> list[tuple[object, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _commit(conn: Connection, mysql: MysqlEndpoint, *statements: str) -> str:
    """Run ``statements`` as one transaction; its GTID."""
    conn.begin()
    execute(conn, *statements)
    conn.commit()
    gtid = last_gtid(conn, mysql)
    if mysql.flavor == "mariadb":  # later commits of other tests may follow
        ((binlog_pos,),) = _query(conn, "SELECT @@global.gtid_binlog_pos")
        assert _seq(str(binlog_pos)) >= _seq(gtid)
    else:
        assert _query(conn, f"SELECT GTID_SUBSET('{gtid}', @@global.gtid_executed)") == [(1,)]
    return gtid


def _seq(gtid: str) -> int:
    return gtid_number(gtid)


def _last_of(state: str) -> int:
    """The number of the last untagged transaction of a one-source GTID state: MariaDB's
    ``0-1-N``; MySQL's ``<uuid>:1-N``, maybe followed by tagged ranges (``:tag:1-2``)."""
    match = re.match(r"\d+-\d+-(\d+)$|[0-9a-f-]{36}((?::\d+(?:-\d+)?)+)", state)
    assert match, f"not a one-source GTID state: {state!r}"
    return int(match.group(1) or re.split("[:-]", match.group(2))[-1])


def _gtid_writing(conn: Connection, start: EntryPosition, schema: str, table: str) -> str:
    """The GTID of the transaction that wrote ``schema.table`` after ``start``, as the
    server lists its binlog (for writes whose session GTID a server does not keep)."""
    gtid = ""
    for _, kind, _, info in _binlog_events(conn, start):
        if kind in GTID_EVENTS:  # MariaDB: "BEGIN GTID 0-1-5"; MySQL: "SET ...= '<uuid>:5'"
            gtid = info.split()[-1] if info.startswith("BEGIN GTID") else info.split("'")[1]
        elif kind == "Table_map" and info.endswith(f"({schema}.{table})"):
            return gtid
    raise AssertionError(f"no write of {schema}.{table} after {start}")


def _binlog_events(conn: Connection, start: EntryPosition) -> list[tuple[int, str, int, str]]:
    """(Pos, Event_type, End_log_pos, Info) of every event from ``start`` in its file."""
    rows = _query(conn, f"SHOW BINLOG EVENTS IN '{start.journal_name}' FROM {start.position}")
    return [(int(r[1]), str(r[2]), int(r[4]), str(r[5])) for r in rows]  # type: ignore[call-overload]


def _transaction(entries: list[Entry], gtid: str) -> list[Entry]:
    return [e for e in entries if e.header.gtid == gtid]


def _shape(entries: list[Entry]) -> list[tuple[str, str, str]]:
    return [
        (
            e.entry_type.value,
            e.header.event_type.value if e.header.event_type else "",
            e.header.table_name,
        )
        for e in entries
    ]


def test_transactions_keep_boundaries_gtid_xid_and_offsets(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(
        conn,
        "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(8))",
        "CREATE TABLE b (id INT PRIMARY KEY, n BIGINT)",
    )
    start = master_position(conn)
    first = _commit(
        conn,
        mysql,
        "INSERT INTO a VALUES (1, 'one'), (2, 'two')",
        "INSERT INTO b VALUES (1, 100)",
        "UPDATE a SET v = 'uno' WHERE id = 1",
        "DELETE FROM b WHERE id = 1",
    )
    second = _commit(conn, mysql, "INSERT INTO a VALUES (3, 'three')", "DELETE FROM a WHERE id = 2")
    assert _seq(second) > _seq(first)
    end = master_position(conn)

    entries = read_entries(source_config(mysql), start, end)

    one, two = _transaction(entries, first), _transaction(entries, second)
    assert _shape(one) == [
        ("TRANSACTIONBEGIN", "", ""),
        ("ROWDATA", "INSERT", "a"),
        ("ROWDATA", "INSERT", "b"),
        ("ROWDATA", "UPDATE", "a"),
        ("ROWDATA", "DELETE", "b"),
        ("TRANSACTIONEND", "", ""),
    ]
    assert _shape(two) == [
        ("TRANSACTIONBEGIN", "", ""),
        ("ROWDATA", "INSERT", "a"),
        ("ROWDATA", "DELETE", "a"),
        ("TRANSACTIONEND", "", ""),
    ]
    # The entries of one transaction are contiguous in the stream.
    at = entries.index(one[0])
    assert entries[at : at + len(one)] == one
    at = entries.index(two[0])
    assert entries[at : at + len(two)] == two
    for entry in rows_of(one + two):
        assert entry.header.schema_name == scratch_schema
        assert entry.row_change is not None and not entry.row_change.is_ddl
    insert = one[1].row_change
    assert insert is not None and len(insert.row_datas) == 2
    _check_headers(conn, mysql, start, one + two)
    # The last rows event of a transaction is right before its XID event.
    for tx in (one, two):
        last_rows, end_entry = tx[-2], tx[-1]
        assert last_rows.header.logfile_offset + last_rows.header.event_length == (
            end_entry.header.logfile_offset
        )
        assert end_entry.transaction_id.isdigit()
        after = resume_position_after(end_entry)
        assert after.position == end_entry.header.logfile_offset + end_entry.header.event_length
    assert int(two[-1].transaction_id) > int(one[-1].transaction_id)


def _check_headers(
    conn: Connection, mysql: MysqlEndpoint, start: EntryPosition, entries: list[Entry]
) -> None:
    """Every header names the binlog event it came from: offset and length as the server
    lists them, and the XID of the commit as the transaction id."""
    events = _binlog_events(conn, start)
    by_pos = {pos: (kind, end_pos, info) for pos, kind, end_pos, info in events}
    next_pos = {pos: events[i + 1][0] for i, (pos, *_) in enumerate(events[:-1])}
    before = {events[i + 1][0]: events[i] for i in range(len(events) - 1)}
    mariadb = mysql.flavor == "mariadb"
    rows = "_rows_v1" if mariadb else "_rows"
    expected_kind = {
        "TRANSACTIONBEGIN": "Gtid" if mariadb else "Query",
        "INSERT": "Write" + rows,
        "UPDATE": "Update" + rows,
        "DELETE": "Delete" + rows,
        "TRANSACTIONEND": "Xid",
    }
    for entry in entries:
        header = entry.header
        assert header.logfile_name == start.journal_name
        assert header.server_id == 1
        assert header.execute_time % 1000 == 0 and header.execute_time > 1_600_000_000_000
        kind, end_pos, info = by_pos[header.logfile_offset]
        label = header.event_type.value if header.event_type else entry.entry_type.value
        assert kind == expected_kind[label]
        assert header.logfile_offset + header.event_length == end_pos
        if header.logfile_offset in next_pos:
            assert header.logfile_offset + header.event_length == next_pos[header.logfile_offset]
        if label == "TRANSACTIONBEGIN" and mariadb:
            assert info == f"BEGIN GTID {header.gtid}"
        elif label == "TRANSACTIONBEGIN":  # MySQL: the GTID event, then BEGIN
            assert info == "BEGIN"
            _, gtid_kind, _, gtid_info = before[header.logfile_offset]
            assert gtid_kind in GTID_EVENTS
            assert gtid_info == f"SET @@SESSION.GTID_NEXT= '{header.gtid}'"
        if kind == "Xid":
            assert info == f"COMMIT /* xid={entry.transaction_id} */"
        else:
            assert entry.transaction_id == ""


def _columns(image: tuple[Column, ...]) -> dict[str, tuple[str | None, bool]]:
    """name -> (value or None, updated)."""
    return {c.name: (None if c.is_null else c.value, c.updated) for c in image}


def test_update_marks_exactly_the_changed_columns(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(
        conn,
        "CREATE TABLE u (id INT PRIMARY KEY, a INT, b VARCHAR(10), c INT NULL, "
        "d DATETIME(3) NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
    )
    start = master_position(conn)
    execute(
        conn,
        "INSERT INTO u VALUES (1, 10, 'x', 5, '2020-01-01 00:00:00.500'), "
        "(2, 20, 'y', NULL, NULL), (3, 30, 'z', 7, '2021-06-30 12:00:00.000')",
        # a changes everywhere; c: 5 -> NULL, NULL -> 9, 7 -> 7; d NULL stays NULL
        "UPDATE u SET a = a + 1, c = CASE id WHEN 1 THEN NULL WHEN 2 THEN 9 ELSE c END",
        # a case-only change is a change for the binlog (and for canal's text comparison)
        "UPDATE u SET b = 'X' WHERE id = 1",
        # a key change
        "UPDATE u SET id = 30 WHERE id = 3",
        "DELETE FROM u WHERE id = 2",
    )
    end = master_position(conn)

    entries = [
        e
        for e in rows_of(read_entries(source_config(mysql), start, end))
        if e.header.schema_name == scratch_schema
    ]
    kinds = [e.header.event_type for e in entries]
    assert kinds == [
        EventType.INSERT,
        EventType.UPDATE,
        EventType.UPDATE,
        EventType.UPDATE,
        EventType.DELETE,
    ]
    changes = [e.row_change for e in entries]
    assert all(c is not None for c in changes)
    insert, update, case_only, key_change, delete = [c.row_datas for c in changes if c]

    # INSERT: after image only, every column updated (NULLs included)
    assert [r.before for r in insert] == [(), (), ()]
    assert _columns(insert[1].after) == {
        "id": ("2", True),
        "a": ("20", True),
        "b": ("y", True),
        "c": (None, True),
        "d": (None, True),
    }

    # UPDATE: the before image is never updated; the after image marks what changed
    assert len(update) == 3
    for row in update:
        assert not any(c.updated for c in row.before)
    assert _columns(update[0].before) == {
        "id": ("1", False),
        "a": ("10", False),
        "b": ("x", False),
        "c": ("5", False),
        "d": ("2020-01-01 00:00:00.500", False),
    }
    assert _columns(update[0].after) == {
        "id": ("1", False),
        "a": ("11", True),
        "b": ("x", False),
        "c": (None, True),  # value -> NULL
        "d": ("2020-01-01 00:00:00.500", False),
    }
    assert _columns(update[1].after) == {
        "id": ("2", False),
        "a": ("21", True),
        "b": ("y", False),
        "c": ("9", True),  # NULL -> value
        "d": (None, False),  # NULL -> NULL
    }
    assert _columns(update[2].after) == {
        "id": ("3", False),
        "a": ("31", True),
        "b": ("z", False),
        "c": ("7", False),
        "d": ("2021-06-30 12:00:00.000", False),
    }
    assert [c.name for c in update[0].after if c.updated] == ["a", "c"]

    (row,) = case_only
    assert [c.name for c in row.after if c.updated] == ["b"]
    assert _columns(row.before)["b"] == ("x", False)
    assert _columns(row.after)["b"] == ("X", True)

    (row,) = key_change
    assert [(c.name, c.is_key) for c in row.after if c.updated] == [("id", True)]
    assert _columns(row.before)["id"] == ("3", False)

    # DELETE: the before image, nothing updated, no after image
    (row,) = delete
    assert row.after == ()
    assert _columns(row.before) == {
        "id": ("2", False),
        "a": ("21", False),
        "b": ("y", False),
        "c": ("9", False),
        "d": (None, False),
    }
    assert [c.is_key for c in row.before] == [True, False, False, False, False]


def test_gtid_start_yields_exactly_the_transactions_after_it(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, "CREATE TABLE g (id INT PRIMARY KEY)")
    start = master_position(conn)
    # the GTID state at exactly that file position (no race with other writers)
    assert start.journal_name is not None and start.position is not None
    # the GTID state at exactly that file position (no race with other writers): MariaDB's
    # 0-1-N, MySQL's <uuid>:1-N
    state = gtid_state_at(conn, mysql, start.journal_name, start.position)
    last = _last_of(state)
    gtids = [_commit(conn, mysql, f"INSERT INTO g VALUES ({i})") for i in range(1, 4)]
    end = master_position(conn)

    by_gtid = read_entries(source_config(mysql), EntryPosition(gtid=state), end)
    by_file = read_entries(source_config(mysql), start, end)

    assert by_gtid == by_file
    first = by_gtid[0]
    assert first.entry_type is EntryType.TRANSACTIONBEGIN
    assert _seq(first.header.gtid) == last + 1
    assert all(_seq(e.header.gtid) > last for e in by_gtid)
    seen = list(dict.fromkeys(e.header.gtid for e in by_gtid))
    assert [g for g in seen if g in gtids] == gtids
    assert [_seq(g) for g in seen] == sorted(_seq(g) for g in seen)
    for gtid, value in zip(gtids, ("1", "2", "3"), strict=True):
        tx = _transaction(by_gtid, gtid)
        assert [e.entry_type for e in tx] == [
            EntryType.TRANSACTIONBEGIN,
            EntryType.ROWDATA,
            EntryType.TRANSACTIONEND,
        ]
        change = tx[1].row_change
        assert change is not None
        assert [c.value for c in change.row_datas[0].after] == [value]


@pytest.mark.only_on("mysql", reason="tagged GTIDs (<uuid>:<tag>:<n>) are MySQL 8.3's")
def test_tagged_gtids_name_their_transactions_and_start_a_dump(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A tagged transaction starts with a Gtid_tagged_log_event (type 42), not a Gtid event:
    its entries carry its own ``<uuid>:<tag>:<n>``; and a GTID state holding tagged ranges
    (``<uuid>:1-N:<tag>:1-M``) starts a dump like any other."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, "CREATE TABLE tg (id INT PRIMARY KEY)")
    start = master_position(conn)
    execute(conn, "SET SESSION gtid_next = 'AUTOMATIC:cb_tagged'")
    try:
        tagged = _commit(conn, mysql, "INSERT INTO tg VALUES (1)")
    finally:
        execute(conn, "SET SESSION gtid_next = 'AUTOMATIC'")
    middle = master_position(conn)
    plain = _commit(conn, mysql, "INSERT INTO tg VALUES (2)")
    end = master_position(conn)
    assert ":cb_tagged:" in tagged and ":cb_tagged:" not in plain

    by_file = read_entries(source_config(mysql), start, end)
    for gtid, value in ((tagged, "1"), (plain, "2")):
        tx = _transaction(by_file, gtid)
        assert _shape(tx) == [
            ("TRANSACTIONBEGIN", "", ""),
            ("ROWDATA", "INSERT", "tg"),
            ("TRANSACTIONEND", "", ""),
        ], gtid
        change = tx[1].row_change
        assert change is not None and change.row_datas[0].after[0].value == value

    assert middle.journal_name is not None and middle.position is not None
    state = gtid_state_at(conn, mysql, middle.journal_name, middle.position)
    assert ":cb_tagged:" in state
    by_gtid = read_entries(source_config(mysql), EntryPosition(gtid=state), end)
    assert by_gtid == read_entries(source_config(mysql), middle, end)
    assert by_gtid[0].header.gtid == plain


def test_one_statement_split_over_several_rows_events(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A big statement is written as several rows events after one TABLE_MAP: each becomes a
    ROWDATA entry, all inside one transaction, no row lost or repeated."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, "CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(200))")
    start = master_position(conn)
    gtid = _commit(
        conn,
        mysql,
        "INSERT INTO big SELECT seq, REPEAT(CHAR(65 + seq % 26), 200) "
        f"FROM ({SEQ_1_TO_3000}) s ORDER BY seq",
        "UPDATE big SET pad = 'x' WHERE id % 2 = 0",
    )
    end = master_position(conn)

    tx = _transaction(read_entries(source_config(mysql), start, end), gtid)
    assert tx[0].entry_type is EntryType.TRANSACTIONBEGIN
    assert tx[-1].entry_type is EntryType.TRANSACTIONEND
    rows = tx[1:-1]
    inserts = [e for e in rows if e.header.event_type is EventType.INSERT]
    updates = [e for e in rows if e.header.event_type is EventType.UPDATE]
    assert len(inserts) > 1 and len(updates) > 1
    assert rows == inserts + updates
    inserted = [r.after for e in inserts if e.row_change for r in e.row_change.row_datas]
    assert [cols[0].value for cols in inserted] == [str(i) for i in range(1, 3001)]
    assert inserted[2][1].value == "D" * 200  # seq 3 -> CHAR(65 + 3)
    updated = [r for e in updates if e.row_change for r in e.row_change.row_datas]
    assert [r.after[0].value for r in updated] == [str(i) for i in range(2, 3001, 2)]
    assert all(
        [c.name for c in r.after if c.updated] == ["pad"] and r.after[1].value == "x"
        for r in updated
    )


def test_repeated_table_maps_and_a_rotation_between_them_lose_no_rows(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """One-row statements each repeat their table's TABLE_MAP, which the parser skips when it
    is the one it has; after a binlog rotation the same map (same table id and definition)
    must be read again, or the new file's rows would have no table."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, "CREATE TABLE rot (id INT PRIMARY KEY, v VARCHAR(8))")
    start = master_position(conn)
    _commit(conn, mysql, "INSERT INTO rot VALUES (1, 'a')", "UPDATE rot SET v = 'b' WHERE id = 1")
    execute(conn, "FLUSH BINARY LOGS")
    _commit(conn, mysql, "UPDATE rot SET v = 'c' WHERE id = 1", "INSERT INTO rot VALUES (2, 'd')")
    end = master_position(conn)
    assert end.journal_name != start.journal_name

    rows = [
        e
        for e in rows_of(read_entries(source_config(mysql), start, end))
        if e.header.schema_name == scratch_schema
    ]
    seen = [
        (
            e.header.event_type.value if e.header.event_type else "",
            e.header.logfile_name,
            *(c.value for c in row.after),
        )
        for e in rows
        if e.row_change
        for row in e.row_change.row_datas
    ]
    assert seen == [
        ("INSERT", start.journal_name, "1", "a"),
        ("UPDATE", start.journal_name, "1", "b"),
        ("UPDATE", end.journal_name, "1", "c"),
        ("INSERT", end.journal_name, "2", "d"),
    ]


def test_non_transactional_engine_ends_with_a_commit_query(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """A non-transactional change (Aria on MariaDB, MyISAM on MySQL) has no XID: the server
    closes it with a COMMIT query, which is the TRANSACTIONEND (without transaction id)."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    engine = "Aria" if mysql.flavor == "mariadb" else "MyISAM"
    execute(conn, f"CREATE TABLE ar (id INT PRIMARY KEY, v INT) ENGINE={engine}")
    start = master_position(conn)
    execute(conn, "INSERT INTO ar VALUES (1, 10), (2, 20)")
    end = master_position(conn)
    gtid = _gtid_writing(conn, start, scratch_schema, "ar")  # MySQL keeps no session GTID of it

    tx = _transaction(read_entries(source_config(mysql), start, end), gtid)
    assert _shape(tx) == [
        ("TRANSACTIONBEGIN", "", ""),
        ("ROWDATA", "INSERT", "ar"),
        ("TRANSACTIONEND", "", ""),
    ]
    assert tx[-1].transaction_id == ""
    events = {pos: (kind, info) for pos, kind, _, info in _binlog_events(conn, start)}
    assert events[tx[-1].header.logfile_offset] == ("Query", "COMMIT")


def test_create_table_select_is_one_transaction(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """CREATE TABLE ... SELECT in ROW format: the CREATE (a DDL entry) and its rows share one
    GTID between BEGIN and END."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    execute(conn, "CREATE TABLE src (id INT PRIMARY KEY, v VARCHAR(5))")
    execute(conn, "INSERT INTO src VALUES (1, 'a'), (2, 'b')")
    start = master_position(conn)
    execute(conn, "CREATE TABLE copy (PRIMARY KEY (id)) SELECT id, v FROM src")
    gtid = last_gtid(conn, mysql)
    end = master_position(conn)

    tx = _transaction(read_entries(source_config(mysql), start, end), gtid)
    assert _shape(tx) == [
        ("TRANSACTIONBEGIN", "", ""),
        ("ROWDATA", "CREATE", "copy"),
        ("ROWDATA", "INSERT", "copy"),
        ("TRANSACTIONEND", "", ""),
    ]
    ddl, rows = tx[1].row_change, tx[2].row_change
    assert ddl is not None and ddl.is_ddl and ddl.sql.startswith("CREATE TABLE `copy`")
    assert rows is not None
    assert [
        [(c.name, c.value, c.is_key, c.mysql_type) for c in r.after] for r in rows.row_datas
    ] == [
        [("id", "1", True, declared(mysql, "int(11)")), ("v", "a", False, "varchar(5)")],
        [("id", "2", True, declared(mysql, "int(11)")), ("v", "b", False, "varchar(5)")],
    ]


def test_a_killed_dump_connection_resumes_without_loss_or_repeats(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    """The server ends the dump (KILL of its thread, here for a user of this test only): the
    parser reconnects and the stream goes on with no entry lost or yielded twice."""
    conn = admin_connection
    conn.select_db(scratch_schema)
    user, password = f"cb_reconnect_{os.getpid()}", "Reconnect-Pw-7"
    execute(
        conn,
        f"DROP USER IF EXISTS '{user}'@'%'",
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
        f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'",
        "CREATE TABLE k (id INT PRIMARY KEY)",
    )
    parser = BinlogParser(
        source_config(mysql, username=user, password=password),
        heartbeat_period_s=1,
        max_backoff_s=1,
    )
    got: list[Entry] = []

    def consume() -> None:
        for entry in parser.entries(start):
            if entry.entry_type is not EntryType.HEARTBEAT:
                got.append(entry)

    def ids() -> list[str]:
        return [
            e.row_change.row_datas[0].after[0].value
            for e in list(got)
            if e.header.schema_name == scratch_schema and e.row_change and not e.is_ddl
        ]

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 20
        while len(ids()) < count and time.monotonic() < deadline:
            time.sleep(0.05)

    start = master_position(conn)
    execute(conn, "INSERT INTO k VALUES (1)")
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    try:
        wait_for(1)
        threads = _query(
            conn, f"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '{user}'"
        )
        assert threads, "no dump thread of the test user"
        for (thread_id,) in threads:
            execute(conn, f"KILL {thread_id}")
        execute(conn, "INSERT INTO k VALUES (2)", "INSERT INTO k VALUES (3)")
        wait_for(3)
    finally:
        parser.stop()
        reader.join(10)
        execute(conn, f"DROP USER IF EXISTS '{user}'@'%'")
    assert not reader.is_alive()
    assert ids() == ["1", "2", "3"]
    keys = [(e.header.logfile_name, e.header.logfile_offset) for e in got]
    assert len(keys) == len(set(keys)) and keys == sorted(keys)
