"""The binlog's numbers, defined once: event type codes and column type codes.

``EventCode`` names every event type MySQL (5.7 to 9.x) and MariaDB (10.x, 11.x) write, as the
servers' sources name them (``binlog_event.h``, MariaDB's ``log_event.h``); what the converter does
with each is ``bridge.parse.binlog.events.EVENT_TYPES``. ``MysqlType`` is the column type code a
TABLE_MAP names (``enum_field_types``), MariaDB's binlog-only compressed codes included.

The Rust reader (``native/``) keeps its own copy of the column codes it decodes; the
differential tests (tests/unit/parse/test_compiled_reader.py) prove the two agree.

Both are ``IntEnum``s, equal to the plain bytes they are compared with. A hot loop that compares
per event binds the members it needs to module or local names once: ``EventCode.X`` looks up a
class attribute on every use.
"""

from __future__ import annotations

from enum import IntEnum


class EventCode(IntEnum):
    """Binlog event type codes (byte 4 of the event header)."""

    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    MARIADB_GTID_EVENT = 162
    GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171


class MysqlType(IntEnum):
    """``MYSQL_TYPE_*`` codes as written in TABLE_MAP events."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    # MariaDB's compressed columns (``VARCHAR(n) COMPRESSED``, ``TEXT COMPRESSED``): codes of
    # their own in the binlog only.
    BLOB_COMPRESSED = 140
    VARCHAR_COMPRESSED = 141
    VECTOR = 242
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


# information_schema DATA_TYPE (a declared type's first word) -> the type code a TABLE_MAP logs
# for it (the real type for CHAR-logged ENUM/SET): what a snapshot builds its columns from and
# what the schema history's definitions are checked against.
DATA_TYPE_CODES: dict[str, int] = {
    "tinyint": MysqlType.TINY,
    "smallint": MysqlType.SHORT,
    "mediumint": MysqlType.INT24,
    "int": MysqlType.LONG,
    "integer": MysqlType.LONG,
    "bigint": MysqlType.LONGLONG,
    "decimal": MysqlType.NEWDECIMAL,
    "float": MysqlType.FLOAT,
    "double": MysqlType.DOUBLE,
    "real": MysqlType.DOUBLE,
    "bit": MysqlType.BIT,
    "year": MysqlType.YEAR,
    "date": MysqlType.DATE,
    "time": MysqlType.TIME2,
    "datetime": MysqlType.DATETIME2,
    "timestamp": MysqlType.TIMESTAMP2,
    "char": MysqlType.STRING,
    "binary": MysqlType.STRING,
    "varchar": MysqlType.VARCHAR,
    "varbinary": MysqlType.VARCHAR,
    "enum": MysqlType.ENUM,
    "set": MysqlType.SET,
    "json": MysqlType.JSON,
    "vector": MysqlType.VECTOR,
    **dict.fromkeys(("tinytext", "tinyblob", "text", "blob"), MysqlType.BLOB),
    **dict.fromkeys(("mediumtext", "mediumblob", "longtext", "longblob"), MysqlType.BLOB),
    **dict.fromkeys(
        (
            "geometry",
            "point",
            "linestring",
            "polygon",
            "multipoint",
            "multilinestring",
            "multipolygon",
            "geometrycollection",
            "geomcollection",
        ),
        MysqlType.GEOMETRY,
    ),
}
