"""The parser refuses a source it cannot read, with one line that says what to fix.

Each case misconfigures a real server or user: binary logging off (a throwaway server), the
wrong binlog_format or binlog_row_image (SET GLOBAL on the shared server, restored at once), a
user without REPLICATION SLAVE, a bad password, a purged start file, and a slave_id equal to the
source's server_id. The password never appears in a message.

The cases on the shared server run on MariaDB and MySQL; those needing a private server (binary
logging off, a purge) run on a throwaway mariadbd only, as no MySQL server can be started here.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Iterator

import pymysql
import pytest
from pydantic import SecretStr

from bridge.config import SourceConfig
from bridge.parse.exceptions import (
    BinlogPositionUnreadable,
    BinlogPurged,
    ParseError,
    SourceAccessDenied,
    SourceMisconfigured,
)
from bridge.parse.parser import BinlogParser
from bridge.position import EntryPosition
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import Connection, execute, master_position, source_config
from tests.integration.mariadb_server import ThrowawayServer, throwaway_mariadb

READ_TIMEOUT_S = 20


def _refusal(source: SourceConfig, start: EntryPosition, expected: type[ParseError]) -> str:
    """The message of the error the parser raises before yielding anything."""
    parser = BinlogParser(source, heartbeat_period_s=1)
    try:
        with pytest.raises(expected) as info:
            next(parser.entries(start))
    finally:
        parser.stop()
    message = str(info.value)
    assert "\n" not in message, "one line"
    if source.password is not None:
        secret = source.password.get_secret_value()
        assert secret not in message
        assert secret not in repr(info.value)
        assert secret not in "".join(traceback.format_exception(info.value))
    return message


def _global(conn: Connection, name: str) -> str:
    with conn.cursor() as cur:
        cur.execute(f"SELECT @@global.{name}")
        ((value,),) = cur.fetchall()
    return str(value)


@pytest.fixture(scope="module")
def binlog_off_server() -> Iterator[ThrowawayServer]:
    with throwaway_mariadb() as server:
        yield server


def _source_of(server: ThrowawayServer) -> SourceConfig:
    return SourceConfig(
        address=server.address,
        username=server.user,
        password=SecretStr(server.password),
        slave_id=77,
    )


def test_binlog_off(binlog_off_server: ThrowawayServer) -> None:
    server = binlog_off_server
    source = _source_of(server)
    message = _refusal(source, EntryPosition("mariadb-bin.000001", 4), SourceMisconfigured)
    assert message == (
        f"binary logging is off on {server.address}: start the server with log_bin and "
        "binlog_format=ROW"
    )


@pytest.mark.both_servers
@pytest.mark.parametrize(
    ("variable", "bad", "phrases"),
    [
        (
            "binlog_format",
            "STATEMENT",
            ("binlog_format is STATEMENT", "set binlog_format=ROW", "SET GLOBAL"),
        ),
        ("binlog_format", "MIXED", ("binlog_format is MIXED", "set binlog_format=ROW")),
        (
            "binlog_row_image",
            "MINIMAL",
            ("binlog_row_image is MINIMAL", "set binlog_row_image=FULL"),
        ),
        ("binlog_row_image", "NOBLOB", ("binlog_row_image is NOBLOB", "binlog_row_image=FULL")),
    ],
)
def test_wrong_binlog_settings(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    variable: str,
    bad: str,
    phrases: tuple[str, ...],
) -> None:
    start = master_position(admin_connection)
    original = _global(admin_connection, variable)
    assert original in ("ROW", "FULL")
    try:
        execute(admin_connection, f"SET GLOBAL {variable} = '{bad}'")
        message = _refusal(source_config(mysql), start, SourceMisconfigured)
    finally:
        execute(admin_connection, f"SET GLOBAL {variable} = '{original}'")
    assert _global(admin_connection, variable) == original
    for phrase in phrases:
        assert phrase in message
    assert mysql.address in message


@pytest.mark.both_servers
def test_user_without_replication_slave(mysql: MysqlEndpoint, admin_connection: Connection) -> None:
    user, password = f"cb_norepl_{os.getpid()}", "NoRepl-Secret-42"
    execute(admin_connection, f"DROP USER IF EXISTS '{user}'@'%'")
    try:
        execute(
            admin_connection,
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
            f"GRANT SELECT, REPLICATION CLIENT ON *.* TO '{user}'@'%'",
        )
        source = source_config(mysql, username=user, password=password)
        message = _refusal(source, master_position(admin_connection), SourceAccessDenied)
    finally:
        execute(admin_connection, f"DROP USER IF EXISTS '{user}'@'%'")
    assert message == (
        f"{user}@{mysql.address} lacks REPLICATION SLAVE: GRANT SELECT, REPLICATION SLAVE, "
        f"REPLICATION CLIENT ON *.* TO '{user}'"
    )


@pytest.mark.both_servers
def test_bad_password(mysql: MysqlEndpoint, admin_connection: Connection) -> None:
    source = source_config(mysql, password="Wr0ng-Pa55word-xyz")
    message = _refusal(source, master_position(admin_connection), SourceAccessDenied)
    assert message == (
        f"access denied for {mysql.user}@{mysql.address}: check source.username and source.password"
    )


def _purge_to(admin_connection: Connection, keep_from: str, oldest: str) -> None:
    """Purge, retrying: MariaDB keeps a file that crash recovery still needs for a moment."""
    deadline = time.monotonic() + 30
    while True:
        with admin_connection.cursor() as cur:
            cur.execute(f"PURGE BINARY LOGS TO '{keep_from}'")
            cur.execute("SHOW WARNINGS")
            warnings = [str(row[2]) for row in cur.fetchall()]
            cur.execute("SHOW BINARY LOGS")
            if oldest not in [str(row[0]) for row in cur.fetchall()]:
                return
        assert time.monotonic() < deadline, f"purge kept {oldest}: {warnings}"
        time.sleep(0.5)


def test_start_in_a_purged_binlog() -> None:
    """A private server, so that purging never takes binlogs from under the shared one's
    readers (another test's parser, or the quickstart's saved cursor)."""
    flags = ("--log-bin=mysql-bin", "--server-id=7", "--binlog-format=ROW")
    with throwaway_mariadb(*flags) as server:
        admin = pymysql.connect(unix_socket=server.socket, user="root", autocommit=True)
        try:
            execute(admin, "FLUSH BINARY LOGS")
            with admin.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                logs = [str(row[0]) for row in cur.fetchall()]
            oldest = logs[0]
            assert oldest != master_position(admin).journal_name
            _purge_to(admin, logs[1], oldest)
        finally:
            admin.close()
        message = _refusal(_source_of(server), EntryPosition(oldest, 4), BinlogPurged)
    assert message.startswith(f"binlog position {oldest}:4 is no longer on the source (")
    assert "set the destination's on_purged to 'snapshot', 'oldest' or 'latest'" in message
    assert "SHOW BINARY LOGS" in message


@pytest.mark.both_servers
@pytest.mark.parametrize("where", ["past_the_end", "inside_an_event", "below_the_header"])
def test_an_offset_the_file_cannot_start_at_is_not_called_purged(
    mysql: MysqlEndpoint, admin_connection: Connection, where: str
) -> None:
    """A damaged or edited offset must not read as a purged binlog: following on_purged there
    would skip or replay changes instead of fixing the position."""
    execute(admin_connection, "FLUSH BINARY LOGS")
    end = master_position(admin_connection)
    assert end.journal_name is not None and end.position is not None
    # 25: inside the format description event every binlog file starts with, on the server
    # version text, so the bytes there are the same on every run (a timestamp would not be).
    offset = {"past_the_end": end.position + 1000, "inside_an_event": 25, "below_the_header": 1}
    start = EntryPosition(end.journal_name, offset[where])
    message = _refusal(source_config(mysql), start, BinlogPositionUnreadable)
    assert message.startswith(
        f"binlog position {start.journal_name}:{start.position} cannot be read although the "
        f"source still has {start.journal_name} ("
    )
    assert "no longer on the source" not in message and "on_purged" not in message


@pytest.mark.both_servers
def test_slave_id_equal_to_server_id(mysql: MysqlEndpoint, admin_connection: Connection) -> None:
    assert _global(admin_connection, "server_id") == "1"
    message = _refusal(
        source_config(mysql, slave_id=1), master_position(admin_connection), SourceMisconfigured
    )
    assert message == (
        f"source.slave_id 1 equals the server_id of {mysql.address}: choose a slave_id that no "
        "server in the replication group uses"
    )


@pytest.mark.both_servers
def test_the_shared_source_passes_preflight(mysql: MysqlEndpoint) -> None:
    """The control case: the shared server and the canal user are accepted."""
    facts = BinlogParser(source_config(mysql)).preflight()
    assert facts.server_id == 1
    assert facts.is_mariadb is (mysql.flavor == "mariadb")
    assert facts.row_metadata_full
