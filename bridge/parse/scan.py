"""Read one binlog file's transaction starts: what the start-position search needs.

A transaction start is where a dump may begin without a rows event arriving before its
TABLE_MAP: a GTID event (MySQL and MariaDB), a BEGIN query without GTIDs, or the event after a
transaction end or DDL.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication import event as binlog_event

from bridge.config import SourceConfig
from bridge.parse.ddl import is_transaction_control
from bridge.parse.source import SourceFacts, connection_settings

FIRST_EVENT_POSITION = 4


@dataclass(frozen=True, slots=True)
class TransactionStart:
    journal_name: str
    position: int
    timestamp_s: int
    end_of_file: bool = False


def transaction_starts(
    source: SourceConfig, facts: SourceFacts, journal_name: str, scan_slave_id: int | None = None
) -> Generator[TransactionStart, None, None]:
    """Transaction starts of ``journal_name`` in order, ending with the file's end position."""
    stream = BinLogStreamReader(
        connection_settings=connection_settings(source),
        server_id=scan_slave_id or source.slave_id,
        log_file=journal_name,
        log_pos=FIRST_EVENT_POSITION,
        resume_stream=True,
        blocking=False,
        is_mariadb=False,  # classic file + position dump (MariaDB mode ignores the file)
        only_events=[
            binlog_event.RotateEvent,
            binlog_event.GtidEvent,
            binlog_event.MariadbGtidEvent,
            binlog_event.QueryEvent,
            binlog_event.XidEvent,
        ],
        freeze_schema=True,
        enable_logging=False,
    )
    in_gtid_group = False
    try:
        for event in stream:
            packet = event.packet
            start = packet.log_pos - packet.event_size
            if isinstance(event, binlog_event.RotateEvent):
                if event.timestamp and event.next_binlog != journal_name:
                    yield TransactionStart(journal_name, start, event.timestamp, end_of_file=True)
                    return
                continue
            if isinstance(event, binlog_event.GtidEvent | binlog_event.MariadbGtidEvent):
                in_gtid_group = True
                yield TransactionStart(journal_name, start, event.timestamp)
            elif isinstance(event, binlog_event.QueryEvent):
                control = is_transaction_control(str(event.query))
                if control == "BEGIN" and not in_gtid_group:
                    yield TransactionStart(journal_name, start, event.timestamp)
                elif control != "BEGIN":
                    in_gtid_group = False
            elif isinstance(event, binlog_event.XidEvent):
                in_gtid_group = False
        last = stream.log_pos
        if last:
            yield TransactionStart(journal_name, int(last), 0, end_of_file=True)
    finally:
        stream.close()
