"""Classify a DDL statement the way canal's SimpleDdlParser does.

canal types DDL as CREATE, ALTER, ERASE (drop table), TRUNCATE, RENAME, CINDEX (create index),
DINDEX (drop index) or QUERY (anything else, e.g. CREATE DATABASE, GRANT). The schema and table
named by the statement decide which table metadata to refresh.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from bridge.entry import EventType

_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"(?P<name>{_NAME}(?:\s*\.\s*{_NAME})?)"
_COMMENTS = re.compile(r"/\*(?!!).*?\*/|--[^\n]*\n|#[^\n]*\n", re.S)
_VERSIONED_COMMENT = re.compile(r"/\*!\d*\s*(.*?)\*/", re.S)


@functools.cache
def _rules() -> tuple[tuple[re.Pattern[str], EventType], ...]:
    """The statements' patterns, compiled at the first DDL rather than at import: the binlog
    reader's process imports this module at every start, and most never see a DDL."""
    return tuple(
        (re.compile(pattern, re.I | re.S), event_type)
        for pattern, event_type in (
            (
                rf"^create\s+(?:or\s+replace\s+)?(?:temporary\s+)?table\s+(?:if\s+not\s+exists\s+)?"
                rf"{_QUALIFIED}",
                EventType.CREATE,
            ),
            (
                rf"^alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?{_QUALIFIED}",
                EventType.ALTER,
            ),
            (rf"^drop\s+(?:temporary\s+)?table\s+(?:if\s+exists\s+)?{_QUALIFIED}", EventType.ERASE),
            (rf"^truncate\s+(?:table\s+)?{_QUALIFIED}", EventType.TRUNCATE),
            # canal names the renamed table by its new name (the first pair of a list)
            (
                rf"^rename\s+table\s+(?:if\s+exists\s+)?{_NAME}(?:\s*\.\s*{_NAME})?\s+to\s+{_QUALIFIED}",
                EventType.RENAME,
            ),
            (
                rf"^create\s+(?:or\s+replace\s+)?(?:unique\s+|fulltext\s+|spatial\s+)?index\s+"
                rf"(?:if\s+not\s+exists\s+)?{_NAME}\s+(?:using\s+\w+\s+)?on\s+{_QUALIFIED}",
                EventType.CINDEX,
            ),
            (rf"^drop\s+index\s+(?:if\s+exists\s+)?{_NAME}\s+on\s+{_QUALIFIED}", EventType.DINDEX),
        )
    )


@dataclass(frozen=True, slots=True)
class DdlStatement:
    event_type: EventType
    schema: str
    table: str


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def classify_ddl(sql: str, default_schema: str) -> DdlStatement:
    """Type ``sql`` and name its table; ``default_schema`` is the session's current database."""
    text = _VERSIONED_COMMENT.sub(r"\1", _COMMENTS.sub(" ", sql + "\n")).strip()
    for pattern, event_type in _rules():
        match = pattern.match(text)
        if match is None:
            continue
        parts = [
            _unquote(p)
            for p in re.split(
                r"\s*\.\s*(?=(?:[^`]*`[^`]*`)*[^`]*$)", match.group("name"), maxsplit=1
            )
        ]
        if len(parts) == 2:
            return DdlStatement(event_type, parts[0], parts[1])
        return DdlStatement(event_type, default_schema, parts[0])
    return DdlStatement(EventType.QUERY, default_schema, "")


def is_transaction_control(sql: str) -> str | None:
    """'BEGIN' or 'COMMIT' for the statements a binlog uses to frame transactions, else None."""
    word = sql.strip().rstrip(";").strip().upper()
    if word in ("BEGIN", "START TRANSACTION", "XA START"):
        return "BEGIN"
    if word in ("COMMIT", "XA COMMIT", "XA END"):
        return "COMMIT"
    return None


def is_statement_dml(sql: str) -> bool:
    """Whether a QUERY event holds a data change logged as a statement (a session with
    ``binlog_format=STATEMENT``), not a DDL."""
    return sql.lstrip().lower().startswith(("insert", "update", "delete", "replace"))
