"""What the converter does with each binlog event type, and the small non-row events decoded
from their bytes.

One table lists every event type MySQL (5.7 to 9.x) and MariaDB (10.x, 11.x) write (their codes
are ``bridge.parse.binlog.codes.EventCode``) with what the converter does with it (``EVENT_TYPES``):
decode it, pass it by as harmless, or refuse it with one line saying why. A type missing from
the table is unknown, and unknown is refused too: a CDC tool that skips what it does not
understand loses changes without a word.

The decoders here read the post-header and body layouts of QUERY, ROTATE, FORMAT_DESCRIPTION
and HEARTBEAT events (MySQL's ``libs/mysql/binlog/event/statement_events``/``control_events``,
MariaDB's ``log_event.h``); rows, TABLE_MAP, GTID and payload events have modules of their own.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

from bridge.parse.binlog.codes import EventCode

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
HEADER_SIZE = 19
TYPE_CODE_AT = 4  # where the header's event type is
LOG_POS_AT = 13  # where the header's log_pos is
LOG_POS = struct.Struct("<I")  # an event's log_pos, read at LOG_POS_AT
CHECKSUM_SIZE = 4


class Handling(Enum):
    """What the converter does with an event type."""

    DECODE = "decode"
    PASS = "pass"  # carries nothing a row-based CDC stream needs
    REFUSE = "refuse"  # would change the data in a way we cannot follow: stop the destination


@dataclass(frozen=True, slots=True)
class EventType:
    code: EventCode
    handling: Handling
    why: str = ""  # for PASS: why nothing is lost; for REFUSE: what to change on the source

    @property
    def name(self) -> str:
        return self.code.name


_SBR = "statement-based replication only; a ROW binlog carries the change in rows events"
_REFUSE_COMPRESSED = (
    "MariaDB's log_bin_compress writes compressed events that canal-bridge does not read: "
    "SET GLOBAL log_bin_compress=OFF on the source (new events are then plain)"
)

EVENT_TYPES: dict[int, EventType] = {
    t.code: t
    for t in (
        EventType(EventCode.START_EVENT_V3, Handling.PASS, "binlog v3 start marker"),
        EventType(EventCode.QUERY_EVENT, Handling.DECODE),
        EventType(EventCode.STOP_EVENT, Handling.PASS, "server shutdown marker"),
        EventType(EventCode.ROTATE_EVENT, Handling.DECODE),
        EventType(EventCode.INTVAR_EVENT, Handling.PASS, _SBR),
        EventType(
            EventCode.LOAD_EVENT,
            Handling.REFUSE,
            "a pre-5.0 LOAD DATA event: set binlog_format=ROW on the source",
        ),
        EventType(EventCode.CREATE_FILE_EVENT, Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(
            EventCode.APPEND_BLOCK_EVENT, Handling.PASS, "LOAD DATA file data (" + _SBR + ")"
        ),
        EventType(EventCode.EXEC_LOAD_EVENT, Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(EventCode.DELETE_FILE_EVENT, Handling.PASS, "LOAD DATA clean-up (" + _SBR + ")"),
        EventType(EventCode.NEW_LOAD_EVENT, Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(EventCode.RAND_EVENT, Handling.PASS, _SBR),
        EventType(EventCode.USER_VAR_EVENT, Handling.PASS, _SBR),
        EventType(EventCode.FORMAT_DESCRIPTION_EVENT, Handling.DECODE),
        EventType(EventCode.XID_EVENT, Handling.DECODE),
        EventType(
            EventCode.BEGIN_LOAD_QUERY_EVENT, Handling.PASS, "LOAD DATA file data (" + _SBR + ")"
        ),
        EventType(
            EventCode.EXECUTE_LOAD_QUERY_EVENT, Handling.PASS, "LOAD DATA statement (" + _SBR + ")"
        ),
        EventType(EventCode.TABLE_MAP_EVENT, Handling.DECODE),
        EventType(
            EventCode.PRE_GA_WRITE_ROWS_EVENT,
            Handling.REFUSE,
            "a MySQL 5.1.0-5.1.15 rows event: upgrade the source",
        ),
        EventType(EventCode.PRE_GA_UPDATE_ROWS_EVENT, Handling.REFUSE, "a MySQL 5.1 pre-GA event"),
        EventType(EventCode.PRE_GA_DELETE_ROWS_EVENT, Handling.REFUSE, "a MySQL 5.1 pre-GA event"),
        EventType(EventCode.WRITE_ROWS_EVENT_V1, Handling.DECODE),
        EventType(EventCode.UPDATE_ROWS_EVENT_V1, Handling.DECODE),
        EventType(EventCode.DELETE_ROWS_EVENT_V1, Handling.DECODE),
        EventType(
            EventCode.INCIDENT_EVENT,
            Handling.REFUSE,
            "the source logged an incident (changes it could not write to the binlog, e.g. "
            "after a failed write or a LOST_EVENTS gap): check the source's error log, then "
            "take a fresh snapshot or restart from a position after the incident",
        ),
        EventType(EventCode.HEARTBEAT_LOG_EVENT, Handling.DECODE),
        EventType(EventCode.IGNORABLE_LOG_EVENT, Handling.PASS, "marked ignorable by the server"),
        EventType(
            EventCode.ROWS_QUERY_LOG_EVENT, Handling.PASS, "the statement text of rows events"
        ),
        EventType(EventCode.WRITE_ROWS_EVENT, Handling.DECODE),
        EventType(EventCode.UPDATE_ROWS_EVENT, Handling.DECODE),
        EventType(EventCode.DELETE_ROWS_EVENT, Handling.DECODE),
        EventType(EventCode.GTID_LOG_EVENT, Handling.DECODE),
        EventType(EventCode.ANONYMOUS_GTID_LOG_EVENT, Handling.DECODE),
        EventType(EventCode.PREVIOUS_GTIDS_LOG_EVENT, Handling.PASS, "the GTIDs of earlier files"),
        EventType(
            EventCode.TRANSACTION_CONTEXT_EVENT, Handling.PASS, "group replication certification"
        ),
        EventType(EventCode.VIEW_CHANGE_EVENT, Handling.PASS, "group replication membership"),
        EventType(EventCode.XA_PREPARE_LOG_EVENT, Handling.DECODE),
        EventType(EventCode.PARTIAL_UPDATE_ROWS_EVENT, Handling.DECODE),
        EventType(EventCode.TRANSACTION_PAYLOAD_EVENT, Handling.DECODE),
        EventType(EventCode.HEARTBEAT_LOG_EVENT_V2, Handling.DECODE),
        EventType(EventCode.GTID_TAGGED_LOG_EVENT, Handling.DECODE),
        # MariaDB
        EventType(
            EventCode.ANNOTATE_ROWS_EVENT, Handling.PASS, "the statement text of rows events"
        ),
        EventType(EventCode.BINLOG_CHECKPOINT_EVENT, Handling.PASS, "crash-recovery bookkeeping"),
        EventType(EventCode.MARIADB_GTID_EVENT, Handling.DECODE),
        EventType(EventCode.GTID_LIST_EVENT, Handling.PASS, "the GTID state at a file's start"),
        EventType(
            EventCode.START_ENCRYPTION_EVENT,
            Handling.PASS,
            "the server decrypts the binlog before it sends it to a replica",
        ),
        EventType(EventCode.QUERY_COMPRESSED_EVENT, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.WRITE_ROWS_COMPRESSED_EVENT_V1, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.UPDATE_ROWS_COMPRESSED_EVENT_V1, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.DELETE_ROWS_COMPRESSED_EVENT_V1, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.WRITE_ROWS_COMPRESSED_EVENT, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.UPDATE_ROWS_COMPRESSED_EVENT, Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(EventCode.DELETE_ROWS_COMPRESSED_EVENT, Handling.REFUSE, _REFUSE_COMPRESSED),
    )
}

# The GTID events of both servers: each starts a transaction.
GTID_EVENTS = frozenset(
    {
        EventCode.GTID_LOG_EVENT,
        EventCode.ANONYMOUS_GTID_LOG_EVENT,
        EventCode.GTID_TAGGED_LOG_EVENT,
        EventCode.MARIADB_GTID_EVENT,
    }
)

QUERY_POST_HEADER = 13  # thread id 4, exec time 4, schema length 1, error code 2, status length 2
FDE_POST_HEADERS_AT = 2 + 50 + 4 + 1  # binlog version, server version, created, header length


def event_name(code: int) -> str:
    known = EVENT_TYPES.get(code)
    return known.name if known else f"unknown event type {code}"


@dataclass(frozen=True, slots=True)
class FormatDescription:
    """What a FORMAT_DESCRIPTION event tells about the events after it."""

    server_version: str
    post_header_lengths: bytes  # index code - 1

    def post_header(self, code: int, default: int) -> int:
        lengths = self.post_header_lengths
        return lengths[code - 1] if 0 < code <= len(lengths) else default


def format_description(data: bytes, body_end: int) -> FormatDescription:
    """A FORMAT_DESCRIPTION event (``data`` from its header; ``body_end`` before any checksum).
    Its last body byte is the checksum algorithm, not a post-header length."""
    start = HEADER_SIZE
    version = data[start + 2 : start + 52].split(b"\0", 1)[0].decode("ascii", "replace")
    return FormatDescription(version, bytes(data[start + FDE_POST_HEADERS_AT : body_end - 1]))


def rotation(data: bytes, body_end: int) -> tuple[int, str]:
    """A ROTATE event's (position, next file name)."""
    position = int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
    return position, data[HEADER_SIZE + 8 : body_end].decode()


@dataclass(frozen=True, slots=True)
class Query:
    schema: str
    sql: str


def query(data: bytes, body_end: int, post_header: int = QUERY_POST_HEADER) -> Query:
    """A QUERY event: after the post-header, the status variables, the NUL-terminated schema
    name, then the statement up to the checksum."""
    at = HEADER_SIZE
    schema_length = data[at + 8]
    status_length = int.from_bytes(data[at + 11 : at + 13], "little")
    schema_at = at + post_header + status_length
    return Query(
        schema=data[schema_at : schema_at + schema_length].decode("utf-8", "replace"),
        sql=data[schema_at + schema_length + 1 : body_end].decode("utf-8", "replace"),
    )


def is_begin(data: bytes, body_end: int, post_header: int = QUERY_POST_HEADER) -> bool:
    """Whether a QUERY event's statement is exactly ``BEGIN``, found without decoding it:
    MySQL opens every transaction with one, and the binlog scans pass over them."""
    at = HEADER_SIZE
    if body_end < at + post_header:
        return False
    status_length = int.from_bytes(data[at + 11 : at + 13], "little")
    sql_at = at + post_header + status_length + data[at + 8] + 1
    return body_end - sql_at == 5 and data[sql_at:body_end] == b"BEGIN"


def xid(data: bytes) -> int:
    return int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
