"""java.sql.Types codes, which canal puts in Column.sql_type and FlatMessage.sqlType."""

from __future__ import annotations

from enum import IntEnum


class JdbcType(IntEnum):
    BIT = -7
    TINYINT = -6
    SMALLINT = 5
    INTEGER = 4
    BIGINT = -5
    FLOAT = 6
    REAL = 7
    DOUBLE = 8
    NUMERIC = 2
    DECIMAL = 3
    CHAR = 1
    VARCHAR = 12
    LONGVARCHAR = -1
    DATE = 91
    TIME = 92
    TIMESTAMP = 93
    BINARY = -2
    VARBINARY = -3
    LONGVARBINARY = -4
    NULL = 0
    OTHER = 1111
    BLOB = 2004
    CLOB = 2005
