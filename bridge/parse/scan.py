"""Read one binlog file's transaction starts: what the start-position search needs.

A transaction start is where a dump may begin without a rows event arriving before its
TABLE_MAP: a GTID event (MySQL and MariaDB), a BEGIN query without GTIDs, or the event after a
transaction end or DDL.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from pymysqlreplication import BinLogStreamReader

from bridge.config import SourceConfig
from bridge.parse.ddl import is_transaction_control
from bridge.parse.framing import HEADER_SIZE, EventReader, LibraryEvents, RawEvent, connect
from bridge.parse.source import SourceFacts, connection_settings

FIRST_EVENT_POSITION = 4
QUERY_EVENT = 2
ROTATE_EVENT = 4
XID_EVENT = 16
_GTID_EVENTS = frozenset({33, 162})  # MySQL GTID, MariaDB GTID
QUERY_POST_HEADER = 13


@dataclass(frozen=True, slots=True)
class TransactionStart:
    journal_name: str
    position: int
    timestamp_s: int
    end_of_file: bool = False


def transaction_starts(
    source: SourceConfig, facts: SourceFacts, journal_name: str, scan_slave_id: int | None = None
) -> Generator[TransactionStart, None, None]:
    """Transaction starts of ``journal_name`` in order, ending with the file's end position.

    Only event headers and QUERY texts are read (``bridge.parse.framing``): a search scans
    whole files, most of them rows events that need no parsing.
    """
    stream = BinLogStreamReader(
        connection_settings=connection_settings(source),
        server_id=scan_slave_id or source.slave_id,
        log_file=journal_name,
        log_pos=FIRST_EVENT_POSITION,
        resume_stream=True,
        blocking=False,
        is_mariadb=False,  # classic file + position dump (MariaDB mode ignores the file)
        freeze_schema=True,
        enable_logging=False,
    )
    in_gtid_group = False
    last = 0
    try:
        reader = EventReader(connect(stream))
        checksum = LibraryEvents(stream, frozenset()).checksum
        while (data := reader.next_event()) is not None:
            raw = RawEvent(data, checksum)
            start = raw.log_pos - raw.event_size
            code = raw.type_code
            if code == ROTATE_EVENT:
                position, next_binlog = _rotation(raw)
                if raw.timestamp and next_binlog != journal_name:
                    yield TransactionStart(journal_name, start, raw.timestamp, end_of_file=True)
                    return
                last = position
                continue
            if raw.log_pos:
                last = raw.log_pos
            if code in _GTID_EVENTS:
                in_gtid_group = True
                yield TransactionStart(journal_name, start, raw.timestamp)
            elif code == QUERY_EVENT:
                control = is_transaction_control(_query_text(raw))
                if control == "BEGIN" and not in_gtid_group:
                    yield TransactionStart(journal_name, start, raw.timestamp)
                elif control != "BEGIN":
                    in_gtid_group = False
            elif code == XID_EVENT:
                in_gtid_group = False
        if last:
            yield TransactionStart(journal_name, last, 0, end_of_file=True)
    finally:
        stream.close()


def _rotation(raw: RawEvent) -> tuple[int, str]:
    data = raw.data
    position = int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
    return position, data[HEADER_SIZE + 8 : raw.body_end].decode()


def _query_text(raw: RawEvent) -> str:
    """A QUERY event's statement: after the 13-byte post-header, the status variables and the
    NUL-terminated schema name."""
    data = raw.data
    schema_length = data[HEADER_SIZE + 8]
    status_length = int.from_bytes(data[HEADER_SIZE + 11 : HEADER_SIZE + 13], "little")
    start = HEADER_SIZE + QUERY_POST_HEADER + status_length + schema_length + 1
    return data[start : raw.body_end].decode("utf-8", "replace")
