"""Scans of the binlog that read only headers and QUERY texts: fast over gigabytes of rows.

``transaction_starts``: one file's transaction starts, what the start-position search needs.
``ddl_statements``: the DDL from a position to the current end, what a schema history needs
to know which tables' definitions it cannot take from the live source.

A transaction start is where a dump may begin without a rows event arriving before its
TABLE_MAP: a GTID event (MySQL and MariaDB), a BEGIN query without GTIDs, or the event after a
transaction end or DDL.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import pymysql

from bridge.parse.access import Source
from bridge.parse.binlog.codes import EventCode
from bridge.parse.binlog.dump import FIRST_EVENT_POSITION, DumpConnection, DumpRequest
from bridge.parse.binlog.events import (
    CHECKSUM_SIZE,
    GTID_EVENTS,
    LOG_POS,
    LOG_POS_AT,
    TYPE_CODE_AT,
    is_begin,
    query,
    rotation,
)
from bridge.parse.binlog.framing import RawEvent
from bridge.parse.ddl import is_statement_dml, is_transaction_control
from bridge.parse.exceptions import ER_MASTER_FATAL_ERROR_READING_BINLOG, start_refused
from bridge.parse.source import SourceFacts, translate_error
from bridge.position import EntryPosition


@dataclass(frozen=True, slots=True)
class DdlStatement:
    """A DDL statement of the binlog: where its event starts, and its current database."""

    journal_name: str
    position: int
    schema: str
    sql: str


@dataclass(frozen=True, slots=True)
class TransactionStart:
    journal_name: str
    position: int
    timestamp_s: int
    end_of_file: bool = False


def transaction_starts(
    source: Source, facts: SourceFacts, journal_name: str, scan_slave_id: int | None = None
) -> Generator[TransactionStart, None, None]:
    """Transaction starts of ``journal_name`` in order, ending with the file's end position.

    Only event headers and QUERY texts are read (``bridge.parse.binlog.framing``): a search scans
    whole files, most of them rows events that need no parsing.
    """
    dump = DumpConnection(
        source,
        DumpRequest(
            slave_id=scan_slave_id or source.slave_id,
            journal_name=journal_name,
            position=FIRST_EVENT_POSITION,
            blocking=False,
        ),
    )
    in_gtid_group = False
    last = 0
    try:
        # A file is mostly rows events: only where each ends counts, read from its header in
        # the batches the framing cuts, without an event object each.
        while (events := dump.reader.next_events()) is not None:
            for data in events:
                if data[TYPE_CODE_AT] not in _TRANSACTION_SCAN_EVENTS:
                    last = LOG_POS.unpack_from(data, LOG_POS_AT)[0] or last
                    continue
                raw = RawEvent(data, dump.checksum)
                start = raw.log_pos - raw.event_size
                code = raw.type_code
                if code == EventCode.ROTATE_EVENT:
                    position, next_binlog = rotation(raw.data, raw.body_end)
                    if raw.timestamp and next_binlog != journal_name:
                        yield TransactionStart(journal_name, start, raw.timestamp, end_of_file=True)
                        return
                    last = position
                    continue
                if raw.log_pos:
                    last = raw.log_pos
                if code in GTID_EVENTS:
                    in_gtid_group = True
                    yield TransactionStart(journal_name, start, raw.timestamp)
                elif code == EventCode.QUERY_EVENT:
                    sql = "BEGIN" if is_begin(data, raw.body_end) else query(data, raw.body_end).sql
                    control = is_transaction_control(sql)
                    if control == "BEGIN" and not in_gtid_group:
                        yield TransactionStart(journal_name, start, raw.timestamp)
                    elif control != "BEGIN":
                        in_gtid_group = False
                else:  # an XID or a TRANSACTION_PAYLOAD ends the transaction
                    in_gtid_group = False
        if last:
            yield TransactionStart(journal_name, last, 0, end_of_file=True)
    finally:
        dump.close()


def first_transaction_after(
    source: Source, facts: SourceFacts, gtid: str
) -> TransactionStart | None:
    """Where the first transaction outside the GTID set ``gtid`` starts, as the source's own
    GTID dump finds it (what a replica with that executed set would read first); None when
    the binlog holds none yet. A set the source no longer has raises ``BinlogPurged``."""
    request = DumpRequest(
        slave_id=source.slave_id, gtid=gtid, blocking=False, mariadb=facts.is_mariadb
    )
    journal = ""
    try:
        dump = DumpConnection(source, request)
        try:
            while (data := dump.reader.next_event()) is not None:
                raw = RawEvent(data, dump.checksum)
                if raw.type_code == EventCode.ROTATE_EVENT:
                    journal = rotation(raw.data, raw.body_end)[1]
                elif raw.type_code in GTID_EVENTS and raw.log_pos:  # a real one, not a fake
                    return TransactionStart(journal, raw.log_pos - raw.event_size, raw.timestamp)
        finally:
            dump.close()
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] == ER_MASTER_FATAL_ERROR_READING_BINLOG:
            raise start_refused(EntryPosition(gtid=gtid), str(exc.args[-1])) from exc
        raise translate_error(exc, source) from exc
    return None


_DDL_SCAN_EVENTS = frozenset((EventCode.ROTATE_EVENT, EventCode.QUERY_EVENT))
_TRANSACTION_SCAN_EVENTS = frozenset(
    (
        *_DDL_SCAN_EVENTS,
        *GTID_EVENTS,
        EventCode.XID_EVENT,
        EventCode.TRANSACTION_PAYLOAD_EVENT,
    )
)


def ddl_statements(
    source: Source, facts: SourceFacts, start: EntryPosition
) -> Generator[DdlStatement, None, None]:
    """Every statement from ``start`` (a file and position, or a GTID set) to the current end
    of the binlog that is neither a transaction's BEGIN/COMMIT nor row-less DML."""
    if start.journal_name:
        request = DumpRequest(
            slave_id=source.slave_id,
            journal_name=start.journal_name,
            position=start.position or FIRST_EVENT_POSITION,
            blocking=False,
            mariadb=facts.is_mariadb,
        )
    else:
        request = DumpRequest(
            slave_id=source.slave_id,
            gtid=start.gtid or "",
            blocking=False,
            mariadb=facts.is_mariadb,
        )
    dump = DumpConnection(source, request)
    checksum_size = CHECKSUM_SIZE if dump.checksum else 0
    journal = start.journal_name or ""
    try:
        # A backlog is mostly rows events: they are passed over by their type byte, in the
        # batches the framing cuts, without an event object each; so are MySQL's BEGINs.
        while (events := dump.reader.next_events()) is not None:
            for data in events:
                code = data[TYPE_CODE_AT]
                if code not in _DDL_SCAN_EVENTS or (
                    code == EventCode.QUERY_EVENT and is_begin(data, len(data) - checksum_size)
                ):
                    continue
                raw = RawEvent(data, dump.checksum)
                if raw.type_code == EventCode.ROTATE_EVENT:
                    journal = rotation(raw.data, raw.body_end)[1]
                    continue
                statement = query(raw.data, raw.body_end)
                sql = statement.sql
                if is_transaction_control(sql) is None and not is_statement_dml(sql):
                    yield DdlStatement(journal, raw.start, statement.schema, sql)
    finally:
        dump.close()
