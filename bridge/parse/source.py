"""Talking to the source database outside the binlog stream: preflight checks and lookups.

Every check that can make CDC impossible runs before the dump starts, so a misconfigured source
fails with one line saying what to change instead of a protocol error later.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import ssl
import zoneinfo
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysql.constants import CLIENT

from bridge.parse.access import Source, Tls
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
ER_PLUGIN_IS_NOT_LOADED = 1524  # the account's auth plugin is not in the server
ER_SECURE_TRANSPORT_REQUIRED = 3159  # require_secure_transport=ON and no TLS
ER_SLAVE_SAME_ID = 4052  # MariaDB: another replica with our server_id is connected
CR_CONNECTION_ERRORS = frozenset({2002, 2003, 2005, 2006, 2013})
CR_SSL_CONNECTION_ERROR = 2026
CR_AUTH_PLUGIN_CANNOT_LOAD = 2059  # PyMySQL cannot answer the auth plugin the server asks for


def connection_settings(source: Source) -> dict[str, Any]:
    """PyMySQL keyword arguments for ``source``; the one place the source password is
    unwrapped. Without ``source.ssl`` PyMySQL still uses TLS when the server offers it, but
    checks no certificate."""
    settings: dict[str, Any] = {
        "host": source.host,
        "port": source.port,
        "user": source.username,
        "password": source.password.get_secret_value() if source.password else "",
        "connect_timeout": source.connect_timeout_s,
        "charset": "utf8mb4",
    }
    if source.ssl is not None:
        settings["ssl"] = tls_context(source.ssl)
    return settings


class SourceConnection(pymysql.connections.Connection):
    """A PyMySQL connection whose TLS, where the server merely offers it (no ``source.ssl``),
    uses one context shared by the process's connections.

    PyMySQL makes such a context per connection with ``ssl.create_default_context``, which
    loads the system's trust store (16 ms of CPU) for a context that then verifies nothing:
    a binlog reader's process opened three at start, a tenth of a second of its CPU. The
    shared one is the same minus the unused store. ``_create_ssl_ctx`` is PyMySQL's, so it
    is in ``PYMYSQL_PRIVATE_NAMES``."""

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if sslp:
            return super()._create_ssl_ctx(sslp)  # type: ignore[misc,no-any-return]
        return _opportunistic_tls()


@functools.cache
def _opportunistic_tls() -> ssl.SSLContext:
    """TLS without verification, as PyMySQL's context for a server that offers TLS unasked."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def tls_context(tls: Tls) -> ssl.SSLContext:
    """The TLS context of ``source.ssl``, as the MySQL client's ssl-mode: ``verify_cert`` needs
    a certificate chain to ``ca`` (the system's trust store without one: VERIFY_CA);
    ``verify_identity`` also needs the certificate to name the host (VERIFY_IDENTITY, which
    implies VERIFY_CA). MySQL's auto-generated certificates name no host.

    Raises SourceMisconfigured when a file cannot be loaded."""
    try:
        context = ssl.create_default_context(cafile=tls.ca)
        # MySQL's auto-generated CA lacks extensions Python 3.13's strict mode demands.
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
        context.check_hostname = tls.verify_identity
        if not (tls.verify_cert or tls.verify_identity):
            context.verify_mode = ssl.CERT_NONE
        if tls.cert:
            context.load_cert_chain(tls.cert, tls.key)
    except (OSError, ssl.SSLError) as exc:
        raise SourceMisconfigured(
            f"cannot load the TLS files of source.ssl ({exc}): check source.ssl.ca, "
            "source.ssl.cert and source.ssl.key"
        ) from exc
    return context


def translate_error(
    exc: pymysql.MySQLError, source: Source, *, encrypted: bool = True
) -> BaseException:
    """A one-line, actionable error for a PyMySQL error; never includes the password.

    ``encrypted``: whether the failed connection had TLS (False: an account created REQUIRE
    SSL is refused like a wrong password, error 1045, so the line names that cause too)."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    where = f"{source.username}@{source.address}"
    if code == ER_ACCESS_DENIED:
        return SourceAccessDenied(
            f"access denied for {where}: check source.username and source.password"
            + (
                ""
                if encrypted
                else "; the connection had no TLS (the server offered none, or this client "
                "cannot use it), which an account created REQUIRE SSL needs: give the server "
                "ssl_cert and ssl_key, and set source.ssl.ca to its CA file"
            )
        )
    if code in (ER_SPECIFIC_ACCESS_DENIED, ER_DBACCESS_DENIED):
        return SourceAccessDenied(
            f"{where} lacks a privilege ({exc.args[1] if len(exc.args) > 1 else exc}): "
            f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{source.username}'"
        )
    if code in (ER_PLUGIN_IS_NOT_LOADED, CR_AUTH_PLUGIN_CANNOT_LOAD):
        return SourceAccessDenied(_auth_plugin_advice(exc, source))
    if code == ER_SECURE_TRANSPORT_REQUIRED:
        return SourceMisconfigured(
            f"{source.address} accepts TLS connections only (require_secure_transport=ON): "
            "set source.ssl (e.g. source.ssl.ca to the server's CA file)"
        )
    if code in (*CR_CONNECTION_ERRORS, CR_SSL_CONNECTION_ERROR) and "CERTIFICATE_VERIFY" in str(
        exc
    ):
        return SourceMisconfigured(_certificate_advice(exc, source))
    if code == CR_SSL_CONNECTION_ERROR:
        return SourceMisconfigured(
            f"TLS to {source.address} failed ({exc.args[-1]}): give the server ssl_cert and "
            "ssl_key, or remove source.ssl"
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


def _auth_plugin_advice(exc: pymysql.MySQLError, source: Source) -> str:
    """Error 1524 (the server lacks the account's plugin: mysql_native_password is off by
    default in MySQL 8.4 and gone in 9.0) or 2059 (PyMySQL cannot answer the plugin asked)."""
    code, text = exc.args[0], str(exc.args[-1])
    # PyMySQL names the plugin as bytes: "Authentication plugin 'b'dialog'' not configured".
    named = re.search(r"'(?:b')?([A-Za-z_][\w.-]*)'", text)
    plugin = named[1] if named else "its authentication plugin"
    account = f"ALTER USER '{source.username}'@'<host>' IDENTIFIED WITH"
    if plugin == "mysql_native_password":
        why = "mysql_native_password is off in MySQL 8.4 and removed in 9.0"
        fix = f"{account} caching_sha2_password BY '<password>'"
    elif code == CR_AUTH_PLUGIN_CANNOT_LOAD:
        why = f"canal-bridge (PyMySQL) cannot answer the {plugin} plugin"
        fix = (
            f"{account} caching_sha2_password BY '<password>' on MySQL; on MariaDB "
            f"ALTER USER '{source.username}'@'<host>' IDENTIFIED BY '<password>' "
            "(mysql_native_password)"
        )
    else:
        why = f"the account uses {plugin}, which the server has not loaded"
        fix = f"load the plugin, or {account} caching_sha2_password BY '<password>'"
    return f"{source.username}@{source.address} cannot log in ({why}): {fix}"


def _certificate_advice(exc: pymysql.MySQLError, source: Source) -> str:
    reason = re.search(r"certificate verify failed: ([^(]+?)\s*\(", str(exc))
    why = reason[1].rstrip(". ") if reason else "certificate verify failed"
    if "mismatch" in why or "not valid for" in why:
        fix = (
            f"the certificate does not name {source.host} (MySQL's auto-generated ones name no "
            "host): give the server a certificate for it, or set source.ssl.verify_identity "
            "false to check the chain only"
        )
    else:
        fix = (
            "set source.ssl.ca to the CA file that signed the server's certificate (ca.pem in "
            "the data directory for MySQL's auto-generated one), or source.ssl.verify_cert "
            "false to encrypt without checking it"
        )
    return f"the TLS certificate of {source.address} was not accepted ({why}): {fix}"


@contextmanager
def open_connection(source: Source) -> Iterator[pymysql.connections.Connection[Any]]:
    conn = SourceConnection(**connection_settings(source), autocommit=True, defer_connect=True)
    try:
        conn.connect()
    except pymysql.MySQLError as exc:
        raise translate_error(exc, source, encrypted=_tls_negotiated(conn)) from exc
    try:
        yield conn
    finally:
        conn.close()


def _tls_negotiated(conn: pymysql.connections.Connection[Any]) -> bool:
    """Whether the handshake of ``conn`` went to TLS: PyMySQL upgrades when it wants TLS
    (``ssl``: source.ssl given, or offered-and-taken without it) and the server's greeting
    offers it (CLIENT.SSL); False too when no greeting came."""
    offered = int(getattr(conn, "server_capabilities", 0)) & CLIENT.SSL
    return bool(conn.ssl and offered)


# --- which server: the statements differ by flavor and version -----------------------------

_VERSION_NUMBER = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class ServerVersion:
    """A source's flavor and version number, read from ``@@version``."""

    mariadb: bool
    number: tuple[int, int, int]

    @classmethod
    def parse(cls, text: str) -> ServerVersion:
        """``10.11.6-MariaDB-log``, ``5.5.5-10.11.6-MariaDB`` (the replication handshake's
        form), ``8.0.36``, ``9.7.4-2``; an unreadable number reads as 0.0.0 (the oldest
        statements)."""
        mariadb = "mariadb" in text.lower()
        match = _VERSION_NUMBER.match(text.removeprefix("5.5.5-") if mariadb else text)
        if match is None:
            return cls(mariadb, (0, 0, 0))
        major, minor, patch = match.groups()
        return cls(mariadb, (int(major), int(minor), int(patch or 0)))

    def __str__(self) -> str:
        return f"{'MariaDB' if self.mariadb else 'MySQL'} {'.'.join(map(str, self.number))}"


@dataclass(frozen=True, slots=True)
class StatusStatements:
    binlog_status: str  # File, Position (and Executed_Gtid_Set on MySQL)
    replica_status: str


LEGACY_STATEMENTS = StatusStatements("SHOW MASTER STATUS", "SHOW SLAVE STATUS")
# MySQL renamed SHOW SLAVE STATUS in 8.0.22 and SHOW MASTER STATUS in 8.2.0, and dropped the
# old names in 8.4 (error 1064). MariaDB keeps them. Newest first: the first row at or below
# the server's version applies.
MYSQL_STATEMENTS: tuple[tuple[tuple[int, int, int], StatusStatements], ...] = (
    ((8, 2, 0), StatusStatements("SHOW BINARY LOG STATUS", "SHOW REPLICA STATUS")),
    ((8, 0, 22), StatusStatements("SHOW MASTER STATUS", "SHOW REPLICA STATUS")),
    ((0, 0, 0), LEGACY_STATEMENTS),
)


def status_statements(server: ServerVersion) -> StatusStatements:
    if server.mariadb:
        return LEGACY_STATEMENTS
    return next(found for first, found in MYSQL_STATEMENTS if server.number >= first)


def server_version(conn: pymysql.connections.Connection[Any]) -> ServerVersion:
    (version,) = _query_one(conn, "SELECT @@version")
    return ServerVersion.parse(str(version))


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What preflight learnt about the source."""

    server_id: int
    version: str
    is_mariadb: bool
    row_metadata_full: bool
    time_zone: dt.tzinfo

    @property
    def server(self) -> ServerVersion:
        return ServerVersion.parse(self.version)


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
    expire_logs_days: float | None = None  # MariaDB, MySQL < 8.4
    binlog_expire_logs_seconds: int | None = None  # MySQL >= 8.0.1, MariaDB >= 10.6
    expire_logs_auto_purge: bool = True  # MySQL >= 8.0.29: binlog_expire_logs_auto_purge
    transaction_compression: str | None = None  # MySQL >= 8.0.20: ON / OFF
    mariadb_log_bin_compress: str | None = None  # MariaDB >= 10.2: ON / OFF
    row_value_options: str | None = None  # MySQL >= 8.0.3: '' / PARTIAL_JSON
    gtid_mode: str | None = None  # MySQL: OFF / OFF_PERMISSIVE / ON_PERMISSIVE / ON
    enforce_gtid_consistency: str | None = None  # MySQL: OFF / WARN / ON

    @property
    def row_metadata_full(self) -> bool:
        return (self.row_metadata or "").upper() == "FULL"

    @property
    def server(self) -> ServerVersion:
        return ServerVersion.parse(self.version)


_EXTRA_VARIABLES = (
    "binlog_row_metadata",
    "expire_logs_days",
    "binlog_expire_logs_seconds",
    "binlog_expire_logs_auto_purge",
    "binlog_transaction_compression",
    "log_bin_compress",
    "binlog_row_value_options",
    "gtid_mode",
    "enforce_gtid_consistency",
)


def read_variables(conn: pymysql.connections.Connection[Any]) -> SourceVariables:
    log_bin, binlog_format, row_image, server_id, version = _query_one(
        conn,
        "SELECT @@global.log_bin, @@global.binlog_format, @@global.binlog_row_image, "
        "@@global.server_id, @@version",
    )
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS FOR CURRENT_USER()")
        grants = tuple(str(row[0]) for row in cur.fetchall())
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN %s", (_EXTRA_VARIABLES,))
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
        expire_logs_auto_purge=extra.get("binlog_expire_logs_auto_purge", "ON").upper() == "ON",
        transaction_compression=extra.get("binlog_transaction_compression"),
        mariadb_log_bin_compress=extra.get("log_bin_compress"),
        row_value_options=extra.get("binlog_row_value_options"),
        gtid_mode=extra.get("gtid_mode"),
        enforce_gtid_consistency=extra.get("enforce_gtid_consistency"),
    )


@dataclass(frozen=True, slots=True)
class AccountAuth:
    user: str
    host: str
    plugin: str

    @property
    def account(self) -> str:
        return f"'{self.user}'@'{self.host}'"


def account_auth(conn: pymysql.connections.Connection[Any]) -> AccountAuth | None:
    """The account we are logged in as and its authentication plugin, from mysql.user (which
    the SELECT grant CDC needs can read); None where it cannot be read."""
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT User, Host, plugin FROM mysql.user "
                "WHERE CONCAT(User, '@', Host) = CURRENT_USER()"
            )
            row = cur.fetchone()
    except pymysql.MySQLError:
        return None
    if row is None or not row[2]:
        return None
    return AccountAuth(str(row[0]), str(row[1]), str(row[2]))


# --- the required checks: each returns the problem (with its one-line fix) or None --------


def check_log_bin(source: Source, v: SourceVariables) -> SourceMisconfigured | None:
    if v.log_bin:
        return None
    return SourceMisconfigured(
        f"binary logging is off on {source.address}: start the server with log_bin and "
        "binlog_format=ROW"
    )


def check_binlog_format(source: Source, v: SourceVariables) -> SourceMisconfigured | None:
    if v.binlog_format.upper() == "ROW":
        return None
    return SourceMisconfigured(
        f"binlog_format is {v.binlog_format} on {source.address}: set binlog_format=ROW "
        "(SET GLOBAL binlog_format='ROW' and in the server's config file)"
    )


def check_row_image(source: Source, v: SourceVariables) -> SourceMisconfigured | None:
    if v.row_image.upper() == "FULL":
        return None
    return SourceMisconfigured(
        f"binlog_row_image is {v.row_image} on {source.address}: set binlog_row_image=FULL "
        "so that every change carries all columns"
    )


def check_server_id(source: Source, v: SourceVariables) -> SourceMisconfigured | None:
    if v.server_id != source.slave_id:
        return None
    return SourceMisconfigured(
        f"source.slave_id {source.slave_id} equals the server_id of {source.address}: choose a "
        "slave_id that no server in the replication group uses"
    )


def check_privileges(source: Source, v: SourceVariables) -> SourceAccessDenied | None:
    missing = _missing_privileges(list(v.grants))
    if not missing:
        return None
    return SourceAccessDenied(
        f"{source.username}@{source.address} lacks {', '.join(missing)}: GRANT SELECT, "
        f"REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{source.username}'"
    )


SourceCheck = Callable[[Source, SourceVariables], ParseError | None]
# (name, check) in the order preflight applies them.
REQUIRED_CHECKS: tuple[tuple[str, SourceCheck], ...] = (
    ("binary log", check_log_bin),
    ("binlog format", check_binlog_format),
    ("row image", check_row_image),
    ("server id", check_server_id),
    ("privileges", check_privileges),
)


def preflight(source: Source, time_zone: str | None = None) -> SourceFacts:
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


@dataclass(frozen=True, slots=True)
class BinlogStatus:
    """The current end of the binlog and the GTID state there ('' where GTIDs are off)."""

    position: EntryPosition
    gtid_set: str


def binlog_status(
    conn: pymysql.connections.Connection[Any], server: ServerVersion | None = None
) -> BinlogStatus:
    """The current end of the binlog, by the statement ``server`` knows (read from the
    connection unless given): ``SHOW BINARY LOG STATUS`` on MySQL >= 8.2, else ``SHOW MASTER
    STATUS``. The GTID state is MySQL's Executed_Gtid_Set or MariaDB's @@gtid_binlog_pos."""
    server = server or server_version(conn)
    statement = status_statements(server).binlog_status
    with conn.cursor() as cur:
        cur.execute(statement)
        row = cur.fetchone()
        if row is None:
            raise SourceMisconfigured(
                f"{statement} returned nothing: binary logging is off; start the server with "
                "log_bin and binlog_format=ROW"
            )
        if server.mariadb:
            cur.execute("SELECT @@global.gtid_binlog_pos")
            gtid_row = cur.fetchone()
            gtid_set = _text(gtid_row[0]) if gtid_row is not None else ""
        else:
            gtid_set = _text(row[4]) if len(row) > 4 else ""
    return BinlogStatus(
        EntryPosition(journal_name=_text(row[0]), position=int(row[1])),
        gtid_set.replace("\n", ""),
    )


def _text(value: Any) -> str:
    """A status column as text. A connection whose ``character_set_results`` is binary (the
    snapshot reader's) gets bytes: ``str()`` of them would be ``"b'mariadb-bin.000001'"``, a
    file name that sorts before every real one."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    return "" if value is None else str(value)


def master_position(
    conn: pymysql.connections.Connection[Any], server: ServerVersion | None = None
) -> EntryPosition:
    """The current end of the binlog: file and offset (see ``binlog_status``)."""
    return binlog_status(conn, server).position


def binary_logs(conn: pymysql.connections.Connection[Any]) -> list[tuple[str, int]]:
    """The binlog files the source still has, oldest first, with their sizes."""
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [(str(row[0]), int(row[1])) for row in cur.fetchall()]
