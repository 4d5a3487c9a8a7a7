"""Binlog event type codes, and the small non-row events decoded from their bytes.

One table names every event type MySQL (5.7 to 9.x) and MariaDB (10.x, 11.x) write, with what
the converter does with it (``EVENT_TYPES``): decode it, pass it by as harmless, or refuse it
with one line saying why. A type missing from the table is unknown, and unknown is refused too:
a CDC tool that skips what it does not understand loses changes without a word.

The decoders here read the post-header and body layouts of QUERY, ROTATE, FORMAT_DESCRIPTION
and HEARTBEAT events (MySQL's ``libs/mysql/binlog/event/statement_events``/``control_events``,
MariaDB's ``log_event.h``); rows, TABLE_MAP, GTID and payload events have modules of their own.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
HEADER_SIZE = 19
CHECKSUM_SIZE = 4


class Handling(Enum):
    """What the converter does with an event type."""

    DECODE = "decode"
    PASS = "pass"  # carries nothing a row-based CDC stream needs
    REFUSE = "refuse"  # would change the data in a way we cannot follow: stop the destination


@dataclass(frozen=True, slots=True)
class EventType:
    code: int
    name: str
    handling: Handling
    why: str = ""  # for PASS: why nothing is lost; for REFUSE: what to change on the source


_SBR = "statement-based replication only; a ROW binlog carries the change in rows events"
_REFUSE_COMPRESSED = (
    "MariaDB's log_bin_compress writes compressed events that canal-bridge does not read: "
    "SET GLOBAL log_bin_compress=OFF on the source (new events are then plain)"
)

EVENT_TYPES: dict[int, EventType] = {
    t.code: t
    for t in (
        EventType(1, "START_EVENT_V3", Handling.PASS, "binlog v3 start marker"),
        EventType(2, "QUERY_EVENT", Handling.DECODE),
        EventType(3, "STOP_EVENT", Handling.PASS, "server shutdown marker"),
        EventType(4, "ROTATE_EVENT", Handling.DECODE),
        EventType(5, "INTVAR_EVENT", Handling.PASS, _SBR),
        EventType(
            6,
            "LOAD_EVENT",
            Handling.REFUSE,
            "a pre-5.0 LOAD DATA event: set binlog_format=ROW on the source",
        ),
        EventType(8, "CREATE_FILE_EVENT", Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(9, "APPEND_BLOCK_EVENT", Handling.PASS, "LOAD DATA file data (" + _SBR + ")"),
        EventType(10, "EXEC_LOAD_EVENT", Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(11, "DELETE_FILE_EVENT", Handling.PASS, "LOAD DATA clean-up (" + _SBR + ")"),
        EventType(12, "NEW_LOAD_EVENT", Handling.REFUSE, "a pre-5.0 LOAD DATA event"),
        EventType(13, "RAND_EVENT", Handling.PASS, _SBR),
        EventType(14, "USER_VAR_EVENT", Handling.PASS, _SBR),
        EventType(15, "FORMAT_DESCRIPTION_EVENT", Handling.DECODE),
        EventType(16, "XID_EVENT", Handling.DECODE),
        EventType(
            17, "BEGIN_LOAD_QUERY_EVENT", Handling.PASS, "LOAD DATA file data (" + _SBR + ")"
        ),
        EventType(
            18, "EXECUTE_LOAD_QUERY_EVENT", Handling.PASS, "LOAD DATA statement (" + _SBR + ")"
        ),
        EventType(19, "TABLE_MAP_EVENT", Handling.DECODE),
        EventType(
            20,
            "PRE_GA_WRITE_ROWS_EVENT",
            Handling.REFUSE,
            "a MySQL 5.1.0-5.1.15 rows event: upgrade the source",
        ),
        EventType(21, "PRE_GA_UPDATE_ROWS_EVENT", Handling.REFUSE, "a MySQL 5.1 pre-GA event"),
        EventType(22, "PRE_GA_DELETE_ROWS_EVENT", Handling.REFUSE, "a MySQL 5.1 pre-GA event"),
        EventType(23, "WRITE_ROWS_EVENT_V1", Handling.DECODE),
        EventType(24, "UPDATE_ROWS_EVENT_V1", Handling.DECODE),
        EventType(25, "DELETE_ROWS_EVENT_V1", Handling.DECODE),
        EventType(
            26,
            "INCIDENT_EVENT",
            Handling.REFUSE,
            "the source logged an incident (changes it could not write to the binlog, e.g. "
            "after a failed write or a LOST_EVENTS gap): check the source's error log, then "
            "take a fresh snapshot or restart from a position after the incident",
        ),
        EventType(27, "HEARTBEAT_LOG_EVENT", Handling.DECODE),
        EventType(28, "IGNORABLE_LOG_EVENT", Handling.PASS, "marked ignorable by the server"),
        EventType(29, "ROWS_QUERY_LOG_EVENT", Handling.PASS, "the statement text of rows events"),
        EventType(30, "WRITE_ROWS_EVENT", Handling.DECODE),
        EventType(31, "UPDATE_ROWS_EVENT", Handling.DECODE),
        EventType(32, "DELETE_ROWS_EVENT", Handling.DECODE),
        EventType(33, "GTID_LOG_EVENT", Handling.DECODE),
        EventType(34, "ANONYMOUS_GTID_LOG_EVENT", Handling.DECODE),
        EventType(35, "PREVIOUS_GTIDS_LOG_EVENT", Handling.PASS, "the GTIDs of earlier files"),
        EventType(
            36, "TRANSACTION_CONTEXT_EVENT", Handling.PASS, "group replication certification"
        ),
        EventType(37, "VIEW_CHANGE_EVENT", Handling.PASS, "group replication membership"),
        EventType(38, "XA_PREPARE_LOG_EVENT", Handling.DECODE),
        EventType(39, "PARTIAL_UPDATE_ROWS_EVENT", Handling.DECODE),
        EventType(40, "TRANSACTION_PAYLOAD_EVENT", Handling.DECODE),
        EventType(41, "HEARTBEAT_LOG_EVENT_V2", Handling.DECODE),
        EventType(42, "GTID_TAGGED_LOG_EVENT", Handling.DECODE),
        # MariaDB
        EventType(160, "ANNOTATE_ROWS_EVENT", Handling.PASS, "the statement text of rows events"),
        EventType(161, "BINLOG_CHECKPOINT_EVENT", Handling.PASS, "crash-recovery bookkeeping"),
        EventType(162, "MARIADB_GTID_EVENT", Handling.DECODE),
        EventType(163, "GTID_LIST_EVENT", Handling.PASS, "the GTID state at a file's start"),
        EventType(
            164,
            "START_ENCRYPTION_EVENT",
            Handling.PASS,
            "the server decrypts the binlog before it sends it to a replica",
        ),
        EventType(165, "QUERY_COMPRESSED_EVENT", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(166, "WRITE_ROWS_COMPRESSED_EVENT_V1", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(167, "UPDATE_ROWS_COMPRESSED_EVENT_V1", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(168, "DELETE_ROWS_COMPRESSED_EVENT_V1", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(169, "WRITE_ROWS_COMPRESSED_EVENT", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(170, "UPDATE_ROWS_COMPRESSED_EVENT", Handling.REFUSE, _REFUSE_COMPRESSED),
        EventType(171, "DELETE_ROWS_COMPRESSED_EVENT", Handling.REFUSE, _REFUSE_COMPRESSED),
    )
}

# The codes the converter and the parser branch on.
QUERY_EVENT = 2
ROTATE_EVENT = 4
FORMAT_DESCRIPTION_EVENT = 15
XID_EVENT = 16
TABLE_MAP_EVENT = 19
HEARTBEAT_EVENT = 27
GTID_EVENT = 33
ANONYMOUS_GTID_EVENT = 34
XA_PREPARE_EVENT = 38
PARTIAL_UPDATE_ROWS_EVENT = 39
TRANSACTION_PAYLOAD_EVENT = 40
HEARTBEAT_V2_EVENT = 41
GTID_TAGGED_EVENT = 42
MARIADB_GTID_EVENT = 162
GTID_EVENTS = frozenset({GTID_EVENT, ANONYMOUS_GTID_EVENT, GTID_TAGGED_EVENT, MARIADB_GTID_EVENT})

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


def xid(data: bytes) -> int:
    return int.from_bytes(data[HEADER_SIZE : HEADER_SIZE + 8], "little")
