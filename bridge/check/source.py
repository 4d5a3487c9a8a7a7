"""The source checks of ``canal-bridge check``: each source connected to once, judged by
what ``preflight`` refuses and by the advisory checks a run does not refuse."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pymysql

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from bridge.check.base import ONE_DAY_S, CheckResult, Outcome
from bridge.config import DestinationConfig
from bridge.exceptions import BridgeError
from bridge.parse.binlog.gtid import is_mariadb_gtid_set
from bridge.parse.source import (
    REQUIRED_CHECKS,
    AccountAuth,
    SourceVariables,
    account_auth,
    open_connection,
    read_variables,
    source_time_zone,
    translate_error,
)


def check_source(destination: DestinationConfig) -> list[CheckResult]:
    """Connect to the destination's source and run every source check on it."""
    name, source = destination.name, destination.source
    try:
        with open_connection(source) as conn:
            variables = read_variables(conn)
            results = [
                CheckResult(name, "connection", "PASS", f"{source.address}: {_server(variables)}")
            ]
            results += _required(destination, variables)
            results.append(_row_metadata(name, variables))
            results.append(_compression(name, variables))
            if variables.row_value_options is not None:
                results.append(_partial_json(name, variables))
            results.append(_retention(name, variables))
            results.append(_gtid(destination, variables, _purged_outside(conn, destination)))
            results.append(_auth_plugin(destination, variables, account_auth(conn)))
            results.append(_time_zone(destination, conn))
            return results
    except BridgeError as exc:
        return [CheckResult(name, "connection", "FAIL", str(exc))]
    except pymysql.MySQLError as exc:
        return [CheckResult(name, "connection", "FAIL", str(translate_error(exc, source)))]


def _server(v: SourceVariables) -> str:
    return f"{'MariaDB' if 'mariadb' in v.version.lower() else 'MySQL'} {v.version}"


def _required(destination: DestinationConfig, v: SourceVariables) -> Iterator[CheckResult]:
    found = {
        "binary log": "log_bin is on",
        "binlog format": f"binlog_format={v.binlog_format}",
        "row image": f"binlog_row_image={v.row_image}",
        "server id": f"server_id {v.server_id}, slave_id {destination.source.slave_id}",
        "privileges": "SELECT, REPLICATION SLAVE, REPLICATION CLIENT",
    }
    for check_name, check in REQUIRED_CHECKS:
        problem = check(destination.source, v)
        if problem is None:
            yield CheckResult(destination.name, check_name, "PASS", found[check_name])
        else:
            yield CheckResult(destination.name, check_name, "FAIL", str(problem))


def _row_metadata(name: str, v: SourceVariables) -> CheckResult:
    if v.row_metadata_full:
        return CheckResult(name, "row metadata", "PASS", "binlog_row_metadata=FULL")
    found = (
        f"binlog_row_metadata is {v.row_metadata}"
        if v.row_metadata is not None
        else "the server has no binlog_row_metadata (MariaDB < 10.5, MySQL < 8.0.1)"
    )
    return CheckResult(
        name,
        "row metadata",
        "PASS",
        f"{found}: column names come from the destination's schema history, the definitions "
        "at each row's position (the cheaper path: smaller TABLE_MAP events); FULL also "
        "puts the names in the binlog, checked against the history, and a lost history is "
        "then rebuilt from them (docs/schema-history.md)",
    )


def _compression(name: str, v: SourceVariables) -> CheckResult:
    if v.server.mariadb and (v.mariadb_log_bin_compress or "").upper() == "ON":
        return CheckResult(
            name,
            "binlog compression",
            "FAIL",
            "log_bin_compress=ON: MariaDB's compressed binlog events cannot be read, a run stops "
            "at the first; SET GLOBAL log_bin_compress=OFF (and in the server's config file)",
        )
    if v.transaction_compression is None:
        found = (
            f"log_bin_compress={v.mariadb_log_bin_compress}"
            if v.mariadb_log_bin_compress is not None
            else "the server does not compress binlogs"
        )
        return CheckResult(name, "binlog compression", "PASS", found)
    on = v.transaction_compression.upper() == "ON"
    return CheckResult(
        name,
        "binlog compression",
        "PASS",
        f"binlog_transaction_compression={v.transaction_compression}"
        + (": compressed transactions (zstd) are decoded" if on else ""),
    )


def _partial_json(name: str, v: SourceVariables) -> CheckResult:
    if "PARTIAL_JSON" not in (v.row_value_options or "").upper():
        return CheckResult(
            name,
            "partial JSON",
            "PASS",
            "binlog_row_value_options is empty: JSON updates carry whole documents",
        )
    if v.row_image.upper() == "FULL":
        return CheckResult(
            name,
            "partial JSON",
            "PASS",
            "binlog_row_value_options=PARTIAL_JSON with binlog_row_image=FULL: JSON diffs are "
            "applied to the before image, rows carry whole documents",
        )
    return CheckResult(
        name,
        "partial JSON",
        "FAIL",
        f"binlog_row_value_options=PARTIAL_JSON with binlog_row_image={v.row_image}: the before "
        "image leaves unchanged JSON columns out, so a JSON_SET/JSON_REPLACE/JSON_REMOVE update "
        "cannot be rebuilt and a run stops at it; set binlog_row_image=FULL (or "
        "binlog_row_value_options='')",
    )


def _retention(name: str, v: SourceVariables) -> CheckResult:
    seconds = v.binlog_expire_logs_seconds or 0
    if not seconds and v.expire_logs_days:
        seconds = int(v.expire_logs_days * ONE_DAY_S)
    # Name only the variables this server has: MySQL 8.4 removed expire_logs_days.
    if v.binlog_expire_logs_seconds is not None and v.expire_logs_days is not None:
        unset, variables = (
            "binlog_expire_logs_seconds and expire_logs_days are 0",
            "binlog_expire_logs_seconds (or expire_logs_days)",
        )
    elif v.expire_logs_days is not None:
        unset, variables = "expire_logs_days is 0", "expire_logs_days"
    else:
        unset, variables = "binlog_expire_logs_seconds is 0", "binlog_expire_logs_seconds"
    fix = f"set {variables} to cover the longest stop you want to survive, at least 86400 s (1 day)"
    if not v.expire_logs_auto_purge:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            "binlog_expire_logs_auto_purge=OFF: binlogs go only when purged by hand, which may "
            "remove the cursor's file; purge only files older than the cursor canal-bridge "
            f"status shows, or set binlog_expire_logs_auto_purge=ON and {variables}",
        )
    if seconds <= 0:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            f"{unset}: nothing tells how long binlogs are kept (manual purges may remove the "
            f"cursor's file); {fix}",
        )
    if seconds < ONE_DAY_S:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            f"binlogs expire after {seconds / 3600:.1f} h: a longer stop loses the cursor's "
            f"position (error 1236); {fix}",
        )
    return CheckResult(
        name, "binlog retention", "PASS", f"binlogs kept {seconds / ONE_DAY_S:.1f} days"
    )


def _purged_outside(
    conn: pymysql.connections.Connection[Any], destination: DestinationConfig
) -> str | None:
    """For a MySQL ``start.gtid``: why the source cannot stream from it (transactions the set
    lacks were purged, or MySQL cannot read the set); None when it can, or nothing to ask."""
    gtid = destination.start.gtid
    if not gtid or is_mariadb_gtid_set(gtid):
        return None
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT @@global.gtid_purged, GTID_SUBSET(@@global.gtid_purged, %s)", (gtid,)
            )
            row = cur.fetchone()
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] == 1193:  # no gtid_purged: MariaDB, judged by _gtid
            return None
        return f"MySQL does not read it as a GTID set ({exc.args[-1]})"
    if row is None or int(row[1]):
        return None
    purged = str(row[0]).replace("\n", "")
    return (
        f"the source purged transactions it lacks (gtid_purged {purged}): error 1236 at start; "
        "give a start.gtid that contains @@global.gtid_purged"
    )


def _gtid(destination: DestinationConfig, v: SourceVariables, purged: str | None) -> CheckResult:
    name, start_gtid = destination.name, destination.start.gtid
    by_file = "or start from start.journal_name + start.position"

    def result(outcome: Outcome, detail: str) -> CheckResult:
        return CheckResult(name, "gtid", outcome, detail)

    if v.server.mariadb:
        if start_gtid and not is_mariadb_gtid_set(start_gtid):
            return result(
                "FAIL",
                f"start.gtid {start_gtid!r} is no MariaDB GTID list (domain-server-sequence) but "
                f"the source is MariaDB: set start.gtid from SELECT @@gtid_binlog_pos, {by_file}",
            )
        return result("PASS", "MariaDB logs a GTID with every transaction")
    mode = (v.gtid_mode or "OFF").upper()
    enforce = (v.enforce_gtid_consistency or "OFF").upper()
    if start_gtid and is_mariadb_gtid_set(start_gtid):
        return result(
            "FAIL",
            f"start.gtid {start_gtid!r} is a MariaDB GTID but the source is MySQL: set start.gtid "
            f"to a MySQL GTID set (uuid:1-100, from SELECT @@global.gtid_executed), {by_file}",
        )
    if mode == "OFF":
        if start_gtid:
            return result(
                "FAIL",
                "start.gtid is set but gtid_mode=OFF: a GTID start needs gtid_mode=ON "
                "(enforce_gtid_consistency=ON, then gtid_mode OFF_PERMISSIVE, ON_PERMISSIVE, "
                f"ON); remove start.gtid {by_file}",
            )
        return result("PASS", "gtid_mode=OFF: positions are file offsets (start.gtid unusable)")
    if mode != "ON":
        return result(
            "WARN",
            f"gtid_mode={mode} is a migration step: transactions without a GTID stop a GTID "
            "start (start.gtid) at the first one; finish with enforce_gtid_consistency=ON and "
            f"gtid_mode=ON before using start.gtid, {by_file}",
        )
    if enforce != "ON":
        return result(
            "WARN",
            f"gtid_mode=ON with enforce_gtid_consistency={enforce}: set "
            "enforce_gtid_consistency=ON (gtid_mode=ON requires it)",
        )
    if purged is not None:
        return result("FAIL", f"start.gtid {start_gtid!r}: {purged}, {by_file}")
    return result(
        "PASS",
        "gtid_mode=ON, enforce_gtid_consistency=ON: start.gtid works from any set that contains "
        "@@global.gtid_purged",
    )


def _auth_plugin(
    destination: DestinationConfig, v: SourceVariables, auth: AccountAuth | None
) -> CheckResult:
    name, source = destination.name, destination.source
    if auth is None:
        return CheckResult(
            name, "auth plugin", "SKIP", "the account's plugin is not readable from mysql.user"
        )
    found = f"{auth.account} uses {auth.plugin}"
    alter = f"ALTER USER {auth.account} IDENTIFIED WITH caching_sha2_password BY '<password>'"
    if v.server.mariadb or auth.plugin not in ("mysql_native_password", "sha256_password"):
        if auth.plugin == "caching_sha2_password" and source.ssl is None:
            found += (
                " (no source.ssl: the password goes over the TLS the server offers, else "
                "RSA-encrypted)"
            )
        return CheckResult(name, "auth plugin", "PASS", found)
    if auth.plugin == "mysql_native_password":
        why = "which MySQL 8.4 turns off by default and 9.0 removes: an upgrade locks it out"
    else:
        why = "which is deprecated since MySQL 8.0.16"
    return CheckResult(name, "auth plugin", "WARN", f"{found}, {why}; {alter}")


def _time_zone(
    destination: DestinationConfig, conn: pymysql.connections.Connection[Any]
) -> CheckResult:
    name, configured = destination.name, destination.timestamp_time_zone
    zone = source_time_zone(conn, configured)
    if configured:
        return CheckResult(
            name, "time zone", "PASS", f"TIMESTAMP rendered in {configured} (timestamp_time_zone)"
        )
    if not isinstance(zone, dt.timezone) or zone.utcoffset(None) == dt.timedelta(0):
        return CheckResult(
            name, "time zone", "PASS", f"TIMESTAMP rendered in the server's zone {zone}"
        )
    return CheckResult(
        name,
        "time zone",
        "WARN",
        f"the server's zone is a fixed offset ({zone}) taken from SYSTEM or an offset setting: "
        "TIMESTAMP values shift by an hour across daylight-saving changes; set "
        "timestamp_time_zone (e.g. Asia/Shanghai) or the server's time_zone to a named zone",
    )
