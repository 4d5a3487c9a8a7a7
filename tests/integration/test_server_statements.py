"""The binlog-status statement is chosen by the server's version: MySQL 8.4 removed SHOW MASTER
STATUS (now SHOW BINARY LOG STATUS, since 8.2) and SHOW SLAVE STATUS (now SHOW REPLICA STATUS,
since 8.0.22); MariaDB keeps the old names.

The choice by version text runs without a server; the rest reads the real MariaDB and MySQL:
the binlog end and its GTID state, ``canal-bridge status`` and the start position of a
destination with nothing configured (which never started on MySQL 9 before).
"""

from __future__ import annotations

import re
from pathlib import Path

import pymysql
import pytest

from bridge.commands.status import describe
from bridge.config import StartConfig, parse_config
from bridge.instance.start_position import StartPositionFinder
from bridge.parse.source import (
    LEGACY_STATEMENTS,
    ServerVersion,
    binlog_status,
    preflight,
    server_version,
    status_statements,
)
from tests.conftest import MysqlEndpoint, gtid_number, last_gtid
from tests.integration.binlog_helpers import Connection, execute, source_config

MASTER, SLAVE = "SHOW MASTER STATUS", "SHOW SLAVE STATUS"
BINARY_LOG, REPLICA = "SHOW BINARY LOG STATUS", "SHOW REPLICA STATUS"


@pytest.mark.parametrize(
    ("text", "mariadb", "number", "binlog", "replica"),
    [
        ("10.11.6-MariaDB", True, (10, 11, 6), MASTER, SLAVE),
        ("10.11.19-MariaDB-0+deb12u1-log", True, (10, 11, 19), MASTER, SLAVE),
        ("5.5.5-10.6.18-MariaDB", True, (10, 6, 18), MASTER, SLAVE),  # handshake form
        ("11.4.2-MariaDB", True, (11, 4, 2), MASTER, SLAVE),  # MariaDB >= 8.2: still old
        ("5.7.44-log", False, (5, 7, 44), MASTER, SLAVE),
        ("8.0.21", False, (8, 0, 21), MASTER, SLAVE),
        ("8.0.22", False, (8, 0, 22), MASTER, REPLICA),
        ("8.0.36", False, (8, 0, 36), MASTER, REPLICA),
        ("8.1.0", False, (8, 1, 0), MASTER, REPLICA),
        ("8.2.0", False, (8, 2, 0), BINARY_LOG, REPLICA),
        ("8.4.3", False, (8, 4, 3), BINARY_LOG, REPLICA),
        ("9.7.4-2", False, (9, 7, 4), BINARY_LOG, REPLICA),
        ("8.0.36-28", False, (8, 0, 36), MASTER, REPLICA),  # Percona Server
        ("10.11-MariaDB", True, (10, 11, 0), MASTER, SLAVE),  # no patch number
        ("unknown", False, (0, 0, 0), MASTER, SLAVE),
    ],
)
def test_statements_are_chosen_by_flavor_and_version(
    text: str, mariadb: bool, number: tuple[int, int, int], binlog: str, replica: str
) -> None:
    server = ServerVersion.parse(text)
    assert (server.mariadb, server.number) == (mariadb, number)
    chosen = status_statements(server)
    assert (chosen.binlog_status, chosen.replica_status) == (binlog, replica)


def test_server_version_names_flavor_and_number() -> None:
    assert str(ServerVersion.parse("9.7.4-2")) == "MySQL 9.7.4"
    assert str(ServerVersion.parse("10.11.6-MariaDB-log")) == "MariaDB 10.11.6"


# --------------------------------------------------------------------- on the real servers


@pytest.mark.services
@pytest.mark.both_servers
def test_binlog_end_and_gtid_state_follow_a_commit(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    server = server_version(admin_connection)
    assert server.mariadb == (mysql.flavor == "mariadb")
    execute(admin_connection, f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY)")
    before = binlog_status(admin_connection, server)
    execute(admin_connection, f"INSERT INTO `{scratch_schema}`.t VALUES (1)")
    ours = last_gtid(admin_connection, mysql)
    after = binlog_status(admin_connection)  # the version read from the connection
    assert after.position.sort_key() > before.position.sort_key()
    assert "\n" not in after.gtid_set
    if mysql.flavor == "mysql":
        with admin_connection.cursor() as cur:
            cur.execute("SELECT GTID_SUBSET(%s, %s)", (ours, after.gtid_set))
            ((contained,),) = cur.fetchall()
        assert contained == 1, (ours, after.gtid_set)
    else:
        domain_server = ours.rsplit("-", 1)[0]
        logged = [g for g in after.gtid_set.split(",") if g.startswith(domain_server + "-")]
        assert len(logged) == 1 and gtid_number(logged[0]) >= gtid_number(ours), after.gtid_set


@pytest.mark.services
@pytest.mark.both_servers
def test_only_the_chosen_statement_is_needed(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    """MySQL 9 refuses the old name (the bug this choice fixes); the chosen one answers."""
    server = server_version(admin_connection)
    with admin_connection.cursor() as cur:
        cur.execute(status_statements(server).binlog_status)
        assert cur.fetchone() is not None
        if mysql.flavor == "mysql" and server.number >= (8, 4, 0):
            with pytest.raises(pymysql.err.ProgrammingError) as refused:
                cur.execute(LEGACY_STATEMENTS.binlog_status)
            assert refused.value.args[0] == 1064


@pytest.mark.services
@pytest.mark.both_servers
def test_status_shows_the_source_end_on_both_servers(
    mysql: MysqlEndpoint, admin_connection: Connection, tmp_path: Path
) -> None:
    source = source_config(mysql)
    config = parse_config(
        {
            "kafka": {"bootstrap_servers": "127.0.0.1:1"},
            "meta": {"dir": str(tmp_path)},
            "destinations": [
                {
                    "name": "shown",
                    "source": {
                        "address": source.address,
                        "username": source.username,
                        "password": mysql.password,
                        "slave_id": source.slave_id,
                    },
                    "mq": {"topic": "unused"},
                }
            ],
        }
    )
    line = describe(config, config.destinations[0])
    match = re.fullmatch(
        rf"shown: cursor no cursor yet, cursor time lag -, source {mysql.address} at "
        r"(?P<file>[\w.-]+):(?P<offset>\d+) gtid=(?P<gtid>\S+)",
        line,
    )
    assert match, line
    end = binlog_status(admin_connection)
    assert (match["file"], int(match["offset"])) <= (
        end.position.journal_name,
        end.position.position,
    )


@pytest.mark.services
@pytest.mark.both_servers
def test_nothing_configured_starts_at_the_end_read_by_the_chosen_statement(
    mysql: MysqlEndpoint, admin_connection: Connection
) -> None:
    source = source_config(mysql)
    before = binlog_status(admin_connection).position
    found = StartPositionFinder(source, preflight(source), StartConfig()).find(None)
    after = binlog_status(admin_connection).position
    assert found.journal_name and found.position
    assert before.sort_key() <= found.sort_key() <= after.sort_key()
    assert found.gtid is None  # a file position: the dump never switches to GTID mode
