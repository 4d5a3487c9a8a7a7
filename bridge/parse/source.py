"""Talking to the source database outside the binlog stream: preflight checks and lookups.

Every check that can make CDC impossible runs before the dump starts, so a misconfigured source
fails with one line saying what to change instead of a protocol error later.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pymysql

from bridge.config import SourceConfig
from bridge.parse.exceptions import (
    ParseError,
    SourceAccessDenied,
    SourceMisconfigured,
    SourceUnreachable,
)
from bridge.position import EntryPosition

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_SLAVE_SAME_ID = 4052  # MariaDB: another replica with our server_id is connected
CR_CONNECTION_ERRORS = frozenset({2002, 2003, 2005, 2006, 2013})


def connection_settings(source: SourceConfig) -> dict[str, Any]:
    """PyMySQL keyword arguments for ``source`` (TLS passed through); the one place the
    source password is unwrapped."""
    settings: dict[str, Any] = {
        "host": source.host,
        "port": source.port,
        "user": source.username,
        "password": source.password.get_secret_value() if source.password else "",
        "connect_timeout": source.connect_timeout_s,
        "charset": "utf8mb4",
    }
    if source.ssl is not None:
        ssl: dict[str, Any] = {
            "check_hostname": source.ssl.verify_identity,
            "verify_mode": None if source.ssl.verify_cert else False,
        }
        for key, value in (
            ("ca", source.ssl.ca),
            ("cert", source.ssl.cert),
            ("key", source.ssl.key),
        ):
            if value:
                ssl[key] = value
        settings["ssl"] = ssl
    return settings


def translate_error(exc: pymysql.MySQLError, source: SourceConfig) -> BaseException:
    """A one-line, actionable error for a PyMySQL error; never includes the password."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    where = f"{source.username}@{source.address}"
    if code == ER_ACCESS_DENIED:
        return SourceAccessDenied(
            f"access denied for {where}: check source.username and source.password"
        )
    if code in (ER_SPECIFIC_ACCESS_DENIED, ER_DBACCESS_DENIED):
        return SourceAccessDenied(
            f"{where} lacks a privilege ({exc.args[1] if len(exc.args) > 1 else exc}): "
            f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{source.username}'"
        )
    if code == ER_SLAVE_SAME_ID:
        return SourceUnreachable(
            f"another replica with server_id {source.slave_id} is connected to {source.address} "
            "(a previous run of this destination still closing, or another replica using the "
            "same id): give every destination and replica a distinct source.slave_id"
        )
    if code in CR_CONNECTION_ERRORS:
        return SourceUnreachable(
            f"cannot reach the source at {source.address} ({exc.args[-1]}): "
            "check source.address and that the server is running"
        )
    return exc


@contextmanager
def open_connection(source: SourceConfig) -> Iterator[pymysql.connections.Connection[Any]]:
    try:
        conn = pymysql.connect(**connection_settings(source), autocommit=True)
    except pymysql.MySQLError as exc:
        raise translate_error(exc, source) from exc
    try:
        yield conn
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What preflight learnt about the source."""

    server_id: int
    version: str
    is_mariadb: bool
    row_metadata_full: bool
    time_zone: dt.tzinfo


def _query_one(conn: pymysql.connections.Connection[Any], sql: str) -> tuple[Any, ...]:
    with conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    if row is None:
        raise SourceMisconfigured(f"the source returned nothing for {sql!r}")
    return tuple(row)


_REQUIRED_GRANTS = {
    "REPLICATION SLAVE": ("REPLICATION SLAVE",),
    "REPLICATION CLIENT": ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER"),
    "SELECT": ("SELECT",),
}


def _missing_privileges(grants: list[str]) -> list[str]:
    global_grants = [g.upper() for g in grants if re.search(r"\bON \*\.\* TO\b", g, re.I)]
    if any("ALL PRIVILEGES" in g for g in global_grants):
        return []
    text = " ".join(global_grants)
    return [
        name
        for name, aliases in _REQUIRED_GRANTS.items()
        if not any(re.search(rf"\b{alias}\b", text) for alias in aliases)
    ]


def parse_time_zone(text: str) -> dt.tzinfo:
    """``Asia/Shanghai`` -> its zone; ``+08:00`` / ``-03:30`` -> a fixed offset."""
    if text[:1] in ("+", "-"):
        hours, _, minutes = text[1:].partition(":")
        offset = dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
        return dt.timezone(-offset if text[0] == "-" else offset)
    return zoneinfo.ZoneInfo(text)


def source_time_zone(
    conn: pymysql.connections.Connection[Any], configured: str | None
) -> dt.tzinfo:
    """The zone TIMESTAMP values are rendered in: the configured one (a zone name or a fixed
    offset such as ``+08:00``), else the server's."""
    if configured:
        return parse_time_zone(configured)
    zone, offset = _query_one(
        conn, "SELECT @@global.time_zone, TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())"
    )
    if zone and zone != "SYSTEM" and not zone.startswith(("+", "-")):
        try:
            return zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    return dt.timezone(dt.timedelta(seconds=round(int(offset) / 60) * 60))


@dataclass(frozen=True, slots=True)
class SourceVariables:
    """The server settings that decide whether CDC can work, read in one go.

    ``preflight`` refuses a source on the required checks below; ``canal-bridge check`` runs
    the same checks and also reports the advisory ones (row metadata, binlog retention).
    """

    log_bin: bool
    binlog_format: str
    row_image: str
    server_id: int
    version: str
    grants: tuple[str, ...]
    # None where the server has no such variable (MariaDB < 10.5, MySQL < 8.0).
    row_metadata: str | None = None
    expire_logs_days: float | None = None
    binlog_expire_logs_seconds: int | None = None

    @property
    def row_metadata_full(self) -> bool:
        return (self.row_metadata or "").upper() == "FULL"


def read_variables(conn: pymysql.connections.Connection[Any]) -> SourceVariables:
    log_bin, binlog_format, row_image, server_id, version = _query_one(
        conn,
        "SELECT @@global.log_bin, @@global.binlog_format, @@global.binlog_row_image, "
        "@@global.server_id, @@version",
    )
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS FOR CURRENT_USER()")
        grants = tuple(str(row[0]) for row in cur.fetchall())
        cur.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN "
            "('binlog_row_metadata', 'expire_logs_days', 'binlog_expire_logs_seconds')"
        )
        extra = {str(row[0]).lower(): str(row[1]) for row in cur.fetchall()}
    days = extra.get("expire_logs_days")
    seconds = extra.get("binlog_expire_logs_seconds")
    return SourceVariables(
        log_bin=bool(int(log_bin)),
        binlog_format=str(binlog_format),
        row_image=str(row_image),
        server_id=int(server_id),
        version=str(version),
        grants=grants,
        row_metadata=extra.get("binlog_row_metadata"),
        expire_logs_days=float(days) if days not in (None, "") else None,
        binlog_expire_logs_seconds=int(seconds) if seconds not in (None, "") else None,
    )


# --- the required checks: each returns the problem (with its one-line fix) or None --------


def check_log_bin(source: SourceConfig, v: SourceVariables) -> SourceMisconfigured | None:
    if v.log_bin:
        return None
    return SourceMisconfigured(
        f"binary logging is off on {source.address}: start the server with log_bin and "
        "binlog_format=ROW"
    )


def check_binlog_format(source: SourceConfig, v: SourceVariables) -> SourceMisconfigured | None:
    if v.binlog_format.upper() == "ROW":
        return None
    return SourceMisconfigured(
        f"binlog_format is {v.binlog_format} on {source.address}: set binlog_format=ROW "
        "(SET GLOBAL binlog_format='ROW' and in the server's config file)"
    )


def check_row_image(source: SourceConfig, v: SourceVariables) -> SourceMisconfigured | None:
    if v.row_image.upper() == "FULL":
        return None
    return SourceMisconfigured(
        f"binlog_row_image is {v.row_image} on {source.address}: set binlog_row_image=FULL "
        "so that every change carries all columns"
    )


def check_server_id(source: SourceConfig, v: SourceVariables) -> SourceMisconfigured | None:
    if v.server_id != source.slave_id:
        return None
    return SourceMisconfigured(
        f"source.slave_id {source.slave_id} equals the server_id of {source.address}: choose a "
        "slave_id that no server in the replication group uses"
    )


def check_privileges(source: SourceConfig, v: SourceVariables) -> SourceAccessDenied | None:
    missing = _missing_privileges(list(v.grants))
    if not missing:
        return None
    return SourceAccessDenied(
        f"{source.username}@{source.address} lacks {', '.join(missing)}: GRANT SELECT, "
        f"REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{source.username}'"
    )


SourceCheck = Callable[[SourceConfig, SourceVariables], ParseError | None]
# (name, check) in the order preflight applies them.
REQUIRED_CHECKS: tuple[tuple[str, SourceCheck], ...] = (
    ("binary log", check_log_bin),
    ("binlog format", check_binlog_format),
    ("row image", check_row_image),
    ("server id", check_server_id),
    ("privileges", check_privileges),
)


def preflight(source: SourceConfig, time_zone: str | None = None) -> SourceFacts:
    """Refuse a source that cannot feed ROW-based CDC, each with one line saying the fix."""
    with open_connection(source) as conn:
        variables = read_variables(conn)
        for _, check in REQUIRED_CHECKS:
            problem = check(source, variables)
            if problem is not None:
                raise problem
        return SourceFacts(
            server_id=variables.server_id,
            version=variables.version,
            is_mariadb="mariadb" in variables.version.lower(),
            row_metadata_full=variables.row_metadata_full,
            time_zone=source_time_zone(conn, time_zone),
        )


def master_position(conn: pymysql.connections.Connection[Any]) -> EntryPosition:
    """The current end of the binlog (``SHOW MASTER STATUS``)."""
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    if row is None:
        raise SourceMisconfigured("SHOW MASTER STATUS returned nothing: is log_bin on?")
    return EntryPosition(journal_name=str(row[0]), position=int(row[1]))


def binary_logs(conn: pymysql.connections.Connection[Any]) -> list[tuple[str, int]]:
    """The binlog files the source still has, oldest first, with their sizes."""
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [(str(row[0]), int(row[1])) for row in cur.fetchall()]
