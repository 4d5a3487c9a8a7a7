"""``on_purged: snapshot`` on a real (throwaway) server whose binlog was purged under a saved
cursor: the destination starts at the binlog end with a fresh plan, says so in one WARNING
line, and the table's rows arrive as snapshot rows; the negative case: ``on_purged: fail``
stops the destination with BinlogPurged and sends nothing."""

from __future__ import annotations

import logging
import time

import pymysql
import pytest

from bridge.config import DestinationConfig
from bridge.entry import Entry
from bridge.instance import EmbeddedServer, Instance, InstanceFailed, mq_client
from bridge.meta import MemoryMetaManager
from bridge.parse.exceptions import BinlogPurged
from bridge.position import EntryPosition, LogIdentity, LogPosition, SnapshotHeader
from tests.integration.binlog_helpers import execute, master_position
from tests.integration.mariadb_server import ThrowawayServer, throwaway_mariadb
from tests.integration.test_parser_refusals import _purge_to
from tests.processes import running_children

ROWS = 30


@pytest.fixture(scope="module")
def purged() -> tuple[ThrowawayServer, str]:
    """A private server holding ``shop.items`` (ROWS rows) whose oldest binlog is purged."""
    flags = ("--log-bin=mysql-bin", "--server-id=7", "--binlog-format=ROW")
    with throwaway_mariadb(*flags) as server:
        admin = pymysql.connect(unix_socket=server.socket, user="root", autocommit=True)
        try:
            execute(admin, "CREATE DATABASE shop")
            execute(admin, "CREATE TABLE shop.items (id INT PRIMARY KEY, v VARCHAR(10))")
            values = ",".join(f"({i}, 'v{i}')" for i in range(ROWS))
            execute(admin, f"INSERT INTO shop.items VALUES {values}")
            execute(admin, "FLUSH BINARY LOGS")
            with admin.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                logs = [str(row[0]) for row in cur.fetchall()]
            assert logs[0] != master_position(admin).journal_name
            _purge_to(admin, logs[1], logs[0])
        finally:
            admin.close()
        yield server, logs[0]


def _destination(server: ThrowawayServer, on_purged: str) -> DestinationConfig:
    return DestinationConfig.model_validate(
        {
            "name": f"purged-{on_purged}",
            "source": {
                "address": server.address,
                "username": server.user,
                "password": server.password,
                "slave_id": 78,
            },
            "filter": {"regex": "shop\\..*"},
            "mq": {"topic": "unused"},
            "on_purged": on_purged,
            "heartbeat_period_s": 1,
            "snapshot": {"mode": "never", "chunk_size": 10},
        }
    )


def _run(
    config: DestinationConfig, gone: str, seconds: float
) -> tuple[Instance, list[Entry], LogPosition | None, list[int]]:
    """Run the destination from a cursor in the purged file, consuming as the MQ worker
    does, until the table's rows came as snapshot rows, it failed, or ``seconds`` passed.
    Also returns the binlog reader processes still running once a failed instance's parser
    thread ended (before the instance is stopped)."""
    meta = MemoryMetaManager()
    meta.start()
    client = mq_client(config.name)
    meta.subscribe(client)
    identity = LogIdentity(config.source.address, config.source.slave_id)
    meta.update_cursor(client, LogPosition(identity, EntryPosition(gone, 4)))
    server = EmbeddedServer()
    instance = Instance(config, meta)
    server.start(instance)
    entries: list[Entry] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and instance.failure is None:
            try:
                message = server.get_without_ack(client, 100, 0.2)
            except InstanceFailed:
                break
            if not message.empty:
                entries += message.entries
                server.ack(client, message.batch_id)
            if len(_snapshot_ids(entries)) >= ROWS:
                break
        cursor = meta.get_cursor(client)
        left = []
        if instance.failure is not None:
            assert instance._thread is not None
            instance._thread.join(10)
            left = running_children("bridge.parse.child")
    finally:
        server.stop_all()
    return instance, entries, cursor, left


def _snapshot_ids(entries: list[Entry]) -> list[int]:
    """The ids of the snapshot rows among ``entries`` (an entry holds a chunk of rows)."""
    return sorted(
        int(column.value)
        for entry in entries
        if isinstance(entry.header, SnapshotHeader) and entry.row_change is not None
        for row in entry.row_change.row_datas
        for column in row.after
        if column.name == "id"
    )


def test_a_purged_position_takes_a_fresh_snapshot_and_says_so(
    purged: tuple[ThrowawayServer, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, gone = purged
    caplog.set_level(logging.WARNING, logger="bridge")
    instance, entries, cursor, _ = _run(_destination(server, "snapshot"), gone, 60)
    assert instance.failure is None
    assert _snapshot_ids(entries) == list(range(ROWS))
    (line,) = [r.getMessage() for r in caplog.records if "on_purged=snapshot" in r.getMessage()]
    assert line.startswith(f"binlog position {gone}:4 was purged from {server.address}")
    assert "every table the snapshot config selects is snapshotted again" in line
    assert caplog.records[[r.getMessage() for r in caplog.records].index(line)].levelname == (
        "WARNING"
    )
    assert cursor is not None and cursor.position.journal_name != gone
    assert cursor.snapshot is not None and [t.table for t in cursor.snapshot.tables] == [
        "shop.items"
    ]


def test_on_purged_fail_stops_the_destination_instead(purged: tuple[ThrowawayServer, str]) -> None:
    server, gone = purged
    instance, entries, _, left = _run(_destination(server, "fail"), gone, 10)
    assert isinstance(instance.failure, BinlogPurged)
    assert left == []  # the reader process started ahead by the preflight is ended
    assert not [e for e in entries if isinstance(e.header, SnapshotHeader)]
