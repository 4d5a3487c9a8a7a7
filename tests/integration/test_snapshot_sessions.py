"""A snapshot reader connection in a child process reads what one in this process reads, on
both servers: the same rows (every Column), window keys, encoded keys and counts, chunk after
chunk of a composite-key table; the same answers for a table without a key (the same error,
raised again as itself), a dropped table and the row estimate. Closing a child session kills
its process and a read waiting on it ends; the reader chooses the child where the
destination's binlog reader runs in one."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pymysql
import pytest

from bridge.config import DestinationConfig, MqConfig
from bridge.entry import Entry, EntryType, EventType, RowChange
from bridge.mq.flat_encoder import RenderedRecords
from bridge.mq.formats import record_builder, rows_encoder
from bridge.parse.binlog.values import DecodeOptions
from bridge.position import SnapshotHeader
from bridge.snapshot.child import ChildSession, SnapshotProcessFailed
from bridge.snapshot.exceptions import TableWithoutKey
from bridge.snapshot.reader import SnapshotReader
from bridge.snapshot.session import ChunkRead, LocalSession, ReaderSession
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import Connection, execute, source_config
from tests.native_paths import compiled_module

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

OPTIONS = DecodeOptions()
CHUNK = 7


def _table(conn: Connection, schema: str) -> None:
    conn.select_db(schema)
    execute(
        conn,
        "CREATE TABLE pairs (region VARCHAR(8) NOT NULL, n INT NOT NULL, price DECIMAL(12,2), "
        "at DATETIME(6), note TEXT, b VARBINARY(4), PRIMARY KEY (region, n))",
        "INSERT INTO pairs VALUES "
        + ", ".join(
            f"('{r}', {n}, {n}.25, '2024-02-{1 + n % 28:02} 10:00:0{n % 10}.{n:06}', "
            f"{'NULL' if n % 5 == 0 else repr('é' * n)}, x'0{n % 10}00')"
            for r in ("ap", "eu", "sa")
            for n in range(6)
        ),
        "CREATE TABLE heap (a INT, b INT)",
    )


def _chunks(session: ReaderSession, schema: str) -> list[ChunkRead]:
    assert session.describe(schema, "pairs") == ("region", "n")
    reads: list[ChunkRead] = []
    after: object = None
    while True:
        read = session.read_chunk(schema, "pairs", after)
        assert isinstance(read, ChunkRead)
        reads.append(read)
        if read.count < CHUNK:
            return reads
        after = read.entry_keys[-1]


def test_a_child_session_reads_what_a_local_one_reads(
    admin_connection: Connection, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    _table(admin_connection, scratch_schema)
    source = source_config(mysql)
    local = LocalSession(source, OPTIONS, CHUNK)
    child = ChildSession(source, OPTIONS, CHUNK, "sessions")
    try:
        here, there = _chunks(local, scratch_schema), _chunks(child, scratch_schema)
        assert [r.count for r in there] == [r.count for r in here] == [7, 7, 4]
        for mine, theirs in zip(here, there, strict=True):
            assert [row.after for row in theirs.rows] == [row.after for row in mine.rows]
            assert theirs.keys == mine.keys and theirs.entry_keys == mine.entry_keys
            assert theirs.per_entry == mine.per_entry
            assert theirs.high[0] == mine.high[0] and not theirs.high[0].startswith("b'")
        assert here[0].keys[:2] == [("ap", "0"), ("ap", "1")]
        # A table without a key: the same error, raised again as itself.
        errors = []
        for session in (local, child):
            with pytest.raises(TableWithoutKey) as raised:
                session.describe(scratch_schema, "heap")
            errors.append(str(raised.value))
        assert errors[0] == errors[1] and "has no primary key" in errors[0]
        # The row estimate, and a table dropped after its description.
        assert child.estimated_rows(scratch_schema, "pairs") == local.estimated_rows(
            scratch_schema, "pairs"
        )
        execute(admin_connection, "DROP TABLE pairs")
        assert local.read_chunk(scratch_schema, "pairs", None) == "gone"
        assert child.read_chunk(scratch_schema, "pairs", None) == "gone"
        assert child.describe(scratch_schema, "pairs") is None
    finally:
        local.close()
        child.close()


def test_closing_a_child_session_kills_its_process_and_ends_a_waiting_read(
    admin_connection: Connection, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    _table(admin_connection, scratch_schema)
    child = ChildSession(source_config(mysql), OPTIONS, CHUNK, "sessions")
    assert child.describe(scratch_schema, "pairs") == ("region", "n")
    pid = child._child.pid
    # A read held up by a writer's lock on the table's metadata waits in the child...
    blocker = _locked(admin_connection, scratch_schema)
    outcome: list[Any] = []
    reading = threading.Thread(
        target=lambda: outcome.append(_outcome(child, scratch_schema)), daemon=True
    )
    reading.start()
    time.sleep(0.5)
    assert reading.is_alive()
    began = time.monotonic()
    child.close()  # ... and ends at once when the session is closed
    reading.join(5)
    blocker.close()
    assert not reading.is_alive() and time.monotonic() - began < 5
    assert isinstance(outcome[0], SnapshotProcessFailed), outcome
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _locked(admin: Connection, schema: str) -> Connection:
    """A second connection holding the table locked for writing, so a SELECT waits."""
    conn = pymysql.connect(
        host=admin.host, port=admin.port, user=admin.user, password=admin.password, autocommit=True
    )
    execute(conn, f"LOCK TABLES `{schema}`.pairs WRITE")
    return conn


def _outcome(session: ReaderSession, schema: str) -> Any:
    try:
        return session.read_chunk(schema, "pairs", None)
    except Exception as exc:
        return exc


def test_a_child_session_renders_each_row_as_the_worker_would_build_its_record(
    admin_connection: Connection, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    _table(admin_connection, scratch_schema)
    compiled_module()  # the rendering is the compiled path's
    mq = MqConfig(topic="t")
    ahead = rows_encoder(mq).ahead()
    assert ahead is not None
    source = source_config(mysql)
    local = LocalSession(source, OPTIONS, CHUNK)
    child = ChildSession(source, OPTIONS, CHUNK, "sessions", ahead)
    try:
        here, there = _chunks(local, scratch_schema), _chunks(child, scratch_schema)
    finally:
        local.close()
        child.close()
    rendered = [read.rows for read in there]
    assert all(isinstance(rows, RenderedRecords) for rows in rendered)
    assert [len(rows) for rows in rendered] == [7, 7, 4]
    builder = record_builder(mq)

    def records(chunks: list[Any]) -> list[Any]:
        header = SnapshotHeader(
            "mariadb-bin.000001", 4, 1, 1000, scratch_schema, "pairs", EventType.INSERT,
            "0-1-2", 0, f"{scratch_schema}.pairs;0",
        )  # fmt: skip
        entries = [
            Entry(header, EntryType.ROWDATA, RowChange(EventType.INSERT, row_datas=rows))
            for rows in chunks
        ]
        return builder.build(entries, 7, 1_700_000_000_000)

    # The chunks' es differ (each was read at its own time): compare them with es set alike.
    built = records([read.rows for read in here])
    assert len(built) == 18
    assert [_same_es(r.value) for r in records(rendered)] == [_same_es(r.value) for r in built]
    assert [r.key for r in records(rendered)] == [r.key for r in built]


def _same_es(value: bytes) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(value)
    message["es"] = 0
    return message


def test_a_child_session_reads_the_next_chunk_ahead_and_drops_it_on_a_new_description(
    admin_connection: Connection, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    # The child reads chunk 2 as soon as it answered chunk 1 (a full one). A row inserted
    # into chunk 2's range afterwards is not in the chunk answered from that read (the
    # stream carries it: the windows drop nothing the read did not see); describing the
    # table again drops the read ahead, and chunk 2 read again has the row.
    _table(admin_connection, scratch_schema)
    child = ChildSession(source_config(mysql), OPTIONS, CHUNK, "sessions")
    try:
        assert child.describe(scratch_schema, "pairs") == ("region", "n")
        first = child.read_chunk(scratch_schema, "pairs", None)
        assert isinstance(first, ChunkRead) and first.count == CHUNK
        time.sleep(0.5)  # the read ahead is done
        execute(admin_connection, "INSERT INTO pairs (region, n) VALUES ('eu', 6)")
        ahead = child.read_chunk(scratch_schema, "pairs", first.entry_keys[-1])
        assert isinstance(ahead, ChunkRead) and ("eu", "6") not in ahead.keys
        assert ahead.read_ms < time.time() * 1000 - 300
        assert child.describe(scratch_schema, "pairs") == ("region", "n")
        again = child.read_chunk(scratch_schema, "pairs", first.entry_keys[-1])
        assert isinstance(again, ChunkRead) and ("eu", "6") in again.keys
    finally:
        child.close()


@pytest.mark.parametrize(("parser_process", "kind"), [(True, ChildSession), (False, LocalSession)])
def test_the_reader_reads_in_a_child_where_the_binlog_reader_runs_in_one(
    mysql: MysqlEndpoint, parser_process: bool, kind: type
) -> None:
    config = DestinationConfig.model_validate(
        {
            "name": "sessions",
            "source": source_config(mysql).model_dump(),
            "mq": {"topic": "t"},
            "parser_process": parser_process,
        }
    )
    reader = SnapshotReader(config, _NoHandoff(), OPTIONS)  # type: ignore[arg-type]
    session = reader._open_session()
    try:
        assert type(session) is kind
    finally:
        reader._close_session(session)


class _NoHandoff:
    """The reader's constructor reads the plan's tables; nothing is put."""

    class progress:  # noqa: N801  (an attribute namespace)
        tables = ()
