"""Shared helpers for tests that read the real binlog (MariaDB or MySQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pymysql

from bridge.config import SourceConfig
from bridge.entry import Entry, EntryType
from bridge.parse.parser import BinlogParser, EntryReader
from bridge.parse.source import master_position as _source_end
from bridge.position import EntryPosition
from tests.conftest import MysqlEndpoint

Connection = pymysql.connections.Connection  # type: ignore[type-arg]


def source_config(mysql: MysqlEndpoint, **overrides: Any) -> SourceConfig:
    values: dict[str, Any] = {
        "address": mysql.address,
        "username": mysql.user,
        "password": mysql.password,
        "slave_id": 5000 + threading.get_ident() % 1000,
    }
    values.update(overrides)
    return SourceConfig(**values)


def master_position(conn: Connection) -> EntryPosition:
    """The binlog's current end on either server (the product's version-chosen statement)."""
    return _source_end(conn)


def execute(conn: Connection, *statements: str) -> None:
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


@contextmanager
def stop_after(parser: EntryReader, seconds: float) -> Iterator[None]:
    """Bound a read: the parser is stopped after ``seconds`` whatever happens."""
    timer = threading.Timer(seconds, parser.stop)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        parser.stop()


def read_entries(
    source: SourceConfig,
    start: EntryPosition,
    end: EntryPosition,
    *,
    time_zone: str | None = None,
    timeout_s: float = 30,
    reader: Callable[..., EntryReader] = BinlogParser,
) -> list[Entry]:
    """Every non-heartbeat entry from ``start`` until the binlog reaches ``end``."""
    parser = reader(source, time_zone=time_zone, heartbeat_period_s=1)
    entries: list[Entry] = []
    with stop_after(parser, timeout_s):
        for entry in parser.entries(start):
            header = entry.header
            if entry.entry_type is not EntryType.HEARTBEAT:
                entries.append(entry)
            reached = (header.logfile_name, header.logfile_offset + header.event_length)
            if reached >= (end.journal_name, end.position):
                break
    last = entries[-1] if entries else None
    assert last is not None and (
        last.header.logfile_name,
        last.header.logfile_offset + last.header.event_length,
    ) >= (end.journal_name, end.position), f"did not reach {end} within {timeout_s}s"
    return entries


def rows_of(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.entry_type is EntryType.ROWDATA and not e.is_ddl]


def after_values(entry: Entry) -> list[dict[str, str | None]]:
    assert entry.row_change is not None
    return [
        {c.name: (None if c.is_null else c.value) for c in row.after}
        for row in entry.row_change.row_datas
    ]
