"""GTID events and GTID sets (bridge.parse.binlog.gtid) against a real MySQL 9.x server.

A few transactions, two of them tagged (``SET gtid_next = 'AUTOMATIC:canal_bridge_test'``),
are written between two quiet moments of the server; that stretch of the binlog is read with
the server's own mysqlbinlog (run in the Debian sid chroot the server runs from), cut into
events here, and every GTID event decoded. The GTIDs must be exactly what @@gtid_executed grew
by. Then COM_BINLOG_DUMP_GTID must accept ``encode()`` of the server's own sets (tagged and
untagged) and refuse a set naming GTIDs the server never had.

Other tests write to the same server meanwhile and may rotate its binlog: snapshots are taken
when the binlog stands still, and the reading follows the files from the first to the last.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest

from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.events import HEADER_SIZE
from bridge.parse.binlog.gtid import (
    GtidEvent,
    GtidSet,
    decode_gtid_event,
    parse_gtid_set,
)

pytestmark = pytest.mark.services

Connection = pymysql.connections.Connection

HOW_TO = 'run `eval "$(deploy/local/services.sh env)"` after `deploy/local/services.sh up`'
GTID_TYPES = (
    EventCode.GTID_LOG_EVENT,
    EventCode.ANONYMOUS_GTID_LOG_EVENT,
    EventCode.GTID_TAGGED_LOG_EVENT,
)
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_DUMP_NON_BLOCK = 1
BINLOG_THROUGH_GTID = 4
DUMP_SERVER_ID = 987654
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 1236
ER_MALFORMED_GTID_SET_ENCODING = 1773
SCHEMA = "canal_bridge_gtid_events"
# One tag for every run: each new tag stays in gtid_executed for good.
TAG = "canal_bridge_test"


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    admin_user: str
    admin_password: str
    rootfs: Path

    def connect(self, *, admin: bool) -> Connection:
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.admin_user if admin else self.user,
            password=self.admin_password if admin else self.password,
            autocommit=True,
            read_timeout=60,
        )


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: {HOW_TO}", pytrace=False)
    return value


@pytest.fixture(scope="module")
def server() -> Server:
    var_dir = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", Path(__file__).parents[2] / "var"))
    rootfs = var_dir / "cache" / "sid-rootfs"
    if not (rootfs / "usr" / "bin" / "mysqlbinlog").exists():
        pytest.fail(f"no mysqlbinlog in the MySQL root file system {rootfs}: {HOW_TO}")
    return Server(
        host=os.environ.get("CANAL_BRIDGE_ORACLE_MYSQL_HOST", "127.0.0.1"),
        port=int(_env("CANAL_BRIDGE_ORACLE_MYSQL_PORT")),
        user=_env("CANAL_BRIDGE_MYSQL_USER"),
        password=_env("CANAL_BRIDGE_MYSQL_PASSWORD"),
        admin_user=_env("CANAL_BRIDGE_MYSQL_ADMIN_USER"),
        admin_password=_env("CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD"),
        rootfs=rootfs,
    )


@dataclass(frozen=True)
class Snapshot:
    """SHOW BINARY LOG STATUS at a moment the binlog stood still."""

    file: str
    position: int
    executed: str


def quiet_snapshot(conn: Connection, timeout_s: float = 60) -> Snapshot:
    """Two equal statuses 0.2 s apart: no transaction between them, and (almost surely) every
    transaction written before is in gtid_executed, whose update follows the binlog write."""
    previous = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = query_row(conn, "SHOW BINARY LOG STATUS")
        current = Snapshot(file=row[0], position=int(row[1]), executed=row[4])
        if current == previous:
            return current
        previous = current
        time.sleep(0.2)
    pytest.fail(f"the binlog never stood still for 0.2 s in {timeout_s} s")


def query_row(conn: Connection, sql: str, *args: object) -> tuple[Any, ...]:
    with conn.cursor() as cur:
        cur.execute(sql, args or None)
        row = cur.fetchone()
    assert row is not None, sql
    return row


def query_one(conn: Connection, sql: str) -> str:
    return str(query_row(conn, sql)[0])


# ------------------------------------------------------------------ reading the binlog files


def read_binlog_files(server: Server, first: str) -> dict[str, bytes]:
    """Every binlog file from ``first`` to the last, as mysqlbinlog --raw copies them."""
    target = Path(tempfile.mkdtemp(prefix="gtid-events-", dir=server.rootfs / "tmp"))
    try:
        command = [
            "chroot",
            str(server.rootfs),
            "mysqlbinlog",
            "--read-from-remote-server",
            f"--host={server.host}",
            f"--port={server.port}",
            f"--user={server.user}",
            "--raw",
            "--to-last-log",
            f"--result-file=/tmp/{target.name}/",
            first,
        ]
        env = {**os.environ, "MYSQL_PWD": server.password}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        return {path.name: path.read_bytes() for path in sorted(target.iterdir())}
    finally:
        shutil.rmtree(target)


def binlog_events(data: bytes, checksum: bool) -> Iterator[tuple[int, bytes]]:
    """``(position, event)`` of a binlog file: 4 magic bytes, then events whose 19-byte header
    holds event_size at offset 9 and the next event's position at 13 (both checked)."""
    assert data[:4] == b"\xfebin"
    position = 4
    while position < len(data):
        size, next_position = struct.unpack_from("<II", data, position + 9)
        event = data[position : position + size]
        assert len(event) == size >= HEADER_SIZE and next_position == position + size, position
        if checksum:
            crc = zlib.crc32(event[:-4])
            assert crc == int.from_bytes(event[-4:], "little"), f"CRC32 at {position}"
        if event[4] == EventCode.FORMAT_DESCRIPTION_EVENT:
            # The checksum algorithm is the body's last byte before the checksum: 1 is CRC32.
            assert event[-5 if checksum else -1] == (1 if checksum else 0)
        yield position, event
        position += size


def body(event: bytes, checksum: bool) -> bytes:
    return event[HEADER_SIZE : len(event) - 4 if checksum else len(event)]


@dataclass(frozen=True)
class Decoded:
    file: str
    position: int
    type_code: int
    event: GtidEvent


def gtid_events(
    files: dict[str, bytes], start: Snapshot, end: Snapshot, checksum: bool
) -> list[Decoded]:
    """The GTID events after ``start`` up to ``end``, through any rotation in between."""
    found: list[Decoded] = []
    for name in sorted(files):
        if not start.file <= name <= end.file:
            continue
        for position, event in binlog_events(files[name], checksum):
            if (name, position) < (start.file, start.position):
                continue
            if (name, position) >= (end.file, end.position):
                break
            decoded = decode_gtid_event(event[4], body(event, checksum))
            if decoded is not None:
                found.append(Decoded(name, position, event[4], decoded))
    return found


def as_set(decoded: list[Decoded]) -> GtidSet:
    gtids = GtidSet()
    for item in decoded:
        assert not item.event.anonymous, "gtid_mode=ON writes no anonymous transaction"
        gtids.add(item.event.uuid, item.event.tag, item.event.gno)
    return gtids


# ------------------------------------------------------------------ the transactions


@dataclass(frozen=True)
class Run:
    server_uuid: str
    server_version: int
    before: Snapshot
    after: Snapshot
    started_us: int
    finished_us: int
    checksum: bool
    files: dict[str, bytes]
    events: list[Decoded]

    def tagged(self) -> list[str]:
        """The two tagged GTIDs this run wrote: the next GNOs of TAG."""
        done = parse_gtid_set(self.before.executed).intervals()
        last = max(
            (last for uuid, tag, _, last in done if (uuid, tag) == (self.server_uuid, TAG)),
            default=0,
        )
        return [f"{self.server_uuid}:{TAG}:{last + 1}", f"{self.server_uuid}:{TAG}:{last + 2}"]


def write_transactions(conn: Connection, tag: str) -> None:
    """Untagged DDL and DML, two transactions under ``tag``, then untagged again."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS {SCHEMA}.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
        f"INSERT INTO {SCHEMA}.t (v) VALUES (1)",
        f"SET gtid_next = 'AUTOMATIC:{tag}'",
        f"INSERT INTO {SCHEMA}.t (v) VALUES (2)",
        f"UPDATE {SCHEMA}.t SET v = v + 1",
        "SET gtid_next = 'AUTOMATIC'",
        "BEGIN",
        f"INSERT INTO {SCHEMA}.t (v) VALUES (3)",
        f"DELETE FROM {SCHEMA}.t WHERE v = 1",
        "COMMIT",
    ]
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


@pytest.fixture(scope="module")
def run(server: Server) -> Iterator[Run]:
    conn = server.connect(admin=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        major, minor, patch = query_one(conn, "SELECT VERSION()").split("-")[0].split(".")
        checksum = query_one(conn, "SELECT @@global.binlog_checksum") == "CRC32"
        before = quiet_snapshot(conn)
        started_us = time.time_ns() // 1000
        write_transactions(conn, TAG)
        finished_us = time.time_ns() // 1000
        after = quiet_snapshot(conn)
        files = read_binlog_files(server, before.file)
        yield Run(
            server_uuid=query_one(conn, "SELECT @@server_uuid"),
            server_version=int(major) * 10000 + int(minor) * 100 + int(patch),
            before=before,
            after=after,
            started_us=started_us,
            finished_us=finished_us,
            checksum=checksum,
            files=files,
            events=gtid_events(files, before, after, checksum),
        )
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
    finally:
        conn.close()


# ------------------------------------------------------------------ GTID events


def test_gtid_events_are_exactly_what_gtid_executed_grew_by(run: Run) -> None:
    grown = parse_gtid_set(run.after.executed) - parse_gtid_set(run.before.executed)
    assert as_set(run.events) == grown
    mine = [item for item in run.events if item.event.tag == TAG]
    assert [item.event.text for item in mine] == run.tagged()
    assert {item.type_code for item in mine} == {EventCode.GTID_TAGGED_LOG_EVENT}
    untagged = [item for item in run.events if not item.event.tag]
    assert {item.type_code for item in untagged} == {EventCode.GTID_LOG_EVENT}
    assert len([item for item in untagged if item.event.uuid == run.server_uuid]) >= 3


def test_gtid_event_fields_agree_with_the_binlog(run: Run) -> None:
    events = run.events
    assert events
    ends = [(b.file, b.position) for b in events[1:]] + [(run.after.file, run.after.position)]
    for item, (end_file, end_position) in zip(events, ends, strict=True):
        event = item.event
        # transaction_length counts the GTID event and the whole transaction after it.
        if end_file == item.file:
            assert item.position + (event.transaction_length or 0) == end_position, item
        assert event.last_committed is not None and event.sequence_number is not None
        assert 0 <= event.last_committed < event.sequence_number
        assert event.immediate_server_version == run.server_version
        assert event.original_server_version == event.immediate_server_version
        assert event.original_commit_timestamp == event.immediate_commit_timestamp
        assert event.immediate_commit_timestamp is not None
        assert run.started_us - 60e6 < event.immediate_commit_timestamp < run.finished_us + 60e6


def test_previous_gtids_and_the_last_file_add_up_to_gtid_executed(run: Run) -> None:
    data = run.files[run.after.file]
    previous: GtidSet | None = None
    executed = GtidSet()
    for position, event in binlog_events(data, run.checksum):
        if position >= run.after.position:
            break
        if event[4] == EventCode.PREVIOUS_GTIDS_LOG_EVENT:
            previous = GtidSet.decode(body(event, run.checksum))
            executed.update(previous)
        found = decode_gtid_event(event[4], body(event, run.checksum))
        if found is not None:
            executed.add(found.uuid, found.tag, found.gno)
    assert previous is not None
    assert str(executed) == run.after.executed


# ------------------------------------------------------------------ GTID set text


def test_gtid_executed_text_round_trips(run: Run, server: Server) -> None:
    with server.connect(admin=False) as conn:
        text = query_one(conn, "SELECT @@global.gtid_executed")
    gtids = parse_gtid_set(text)
    assert gtids.has_tags
    assert str(gtids) == text
    assert str(parse_gtid_set(run.after.executed)) == run.after.executed


@pytest.mark.parametrize(
    "text",
    [
        "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:5-7:1-3, AAAAAAAA-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
        ":Zeta:3:alpha:9:4 , aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1:2-3",
        " aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa : 1 - 5 : x : 7\n,,",
        "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:t1:t2:5:_:1:4:3:2",
        "00000000-0000-0000-0000-00000000000a:1,00000000-0000-0000-0000-0000000000a0:1",
        "",
    ],
)
def test_canonical_text_is_what_mysql_prints(server: Server, text: str) -> None:
    with server.connect(admin=False) as conn:
        mysql_text = query_row(conn, "SELECT GTID_SUBTRACT(%s, '')", text)[0]
    assert str(parse_gtid_set(text)) == mysql_text


# ------------------------------------------------------------------ COM_BINLOG_DUMP_GTID


def dump_gtid(server: Server, encoded: bytes) -> list[bytes]:
    """The events a non-blocking COM_BINLOG_DUMP_GTID sends for ``encoded`` until its EOF.

    pymysql has no binlog command: the packet is framed with its private sequence counter
    and read with its private packet reader, which raises the server's error packet as a
    pymysql error (this is the one place these tests touch pymysql's internals).
    """
    conn = server.connect(admin=False)
    try:
        with conn.cursor() as cur:
            cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        flags = BINLOG_THROUGH_GTID | BINLOG_DUMP_NON_BLOCK
        # command, flags u16, server_id u32, name_size u32 (no name), position u64,
        # data_size u32, data.
        head = struct.pack(
            "<BHIIQI", COM_BINLOG_DUMP_GTID, flags, DUMP_SERVER_ID, 0, 4, len(encoded)
        )
        internals: Any = conn
        internals._next_seq_id = 0
        internals.write_packet(head + encoded)
        events: list[bytes] = []
        while True:
            payload: bytes = internals._read_packet().get_all_data()
            if payload[0] == 0xFE and len(payload) < 9:
                return events
            assert payload[0] == 0, payload[:1]
            events.append(payload[1:])
    finally:
        conn.close()


def dumped_gtids(server: Server, gtids: GtidSet) -> list[GtidEvent]:
    with server.connect(admin=False) as conn:
        # @master_binlog_checksum asked for the server's own setting.
        checksum = query_one(conn, "SELECT @@global.binlog_checksum") == "CRC32"
    found = []
    for event in dump_gtid(server, gtids.encode()):
        decoded = decode_gtid_event(event[4], body(event, checksum))
        if decoded is not None:
            found.append(decoded)
    return found


def test_dump_accepts_the_tagged_encoding_of_gtid_executed(run: Run, server: Server) -> None:
    with server.connect(admin=False) as conn:
        executed = parse_gtid_set(query_one(conn, "SELECT @@global.gtid_executed"))
    assert executed.has_tags
    assert not [event.text for event in dumped_gtids(server, executed) if event in executed]

    before = parse_gtid_set(run.before.executed)
    sent = dumped_gtids(server, before)
    assert not [event.text for event in sent if event in before]
    assert [event.text for event in sent if event.tag == TAG] == run.tagged()


def test_dump_accepts_the_untagged_encoding(run: Run, server: Server) -> None:
    untagged = GtidSet()
    for uuid, tag, first, last in parse_gtid_set(run.after.executed).intervals():
        if not tag:
            untagged.add_interval(uuid, tag, first, last)
    assert not untagged.has_tags and untagged.encode()[7] == 0
    sent = dumped_gtids(server, untagged)
    assert not [event.text for event in sent if event in untagged]
    # Not claimed, so sent: every tagged transaction, this run's among them.
    assert set(run.tagged()) <= {event.text for event in sent}


def refusal(server: Server, encoded: bytes) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as refused:
        dump_gtid(server, encoded)
    code, message = refused.value.args
    return int(code), str(message)


def test_dump_refuses_gtids_the_server_never_had(run: Run, server: Server) -> None:
    with server.connect(admin=False) as conn:
        executed = parse_gtid_set(query_one(conn, "SELECT @@global.gtid_executed"))
    last = max(last for uuid, tag, _, last in executed.intervals() if uuid == run.server_uuid)
    for tag in ("", TAG):
        beyond = GtidSet()
        beyond.update(executed)
        beyond.add(run.server_uuid, tag, last + 1000)
        code, message = refusal(server, beyond.encode())
        assert code == ER_SOURCE_FATAL_ERROR_READING_BINLOG, message
        assert "Replica has more GTIDs than the source has" in message


def test_dump_refuses_a_malformed_encoding(server: Server) -> None:
    encoded = parse_gtid_set("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:x:1-3").encode()
    code, message = refusal(server, encoded[:-1])
    assert (code, message) == (ER_MALFORMED_GTID_SET_ENCODING, "Malformed GTID set encoding.")
