"""Compare a mirror table with the live source table; exit 0 only when they are identical.

``python -m spark_jobs.reconcile --mirror PATH --table db.t --mysql host:port --user U
--password-env VAR`` streams the source through PyMySQL in the driver (an unbuffered cursor)
and the mirror's Delta table through Spark (a partition at a time), then compares

1. the columns (the mirror's ``_cdc_*`` columns aside),
2. the row count and the primary keys present on each side,
3. per key, a checksum over the row's values in a canonical text form.

Only the source's keys and 8-byte checksums are held (about 200 bytes a row in Python: 1 GB
for 5 million rows); the values of the first ``--show`` differing rows are read again from
the source by key to print them.

Canonical forms make the two sides' Python values comparable: integers and BIT as decimal
text, DECIMAL with its exact scale, FLOAT rounded to single precision, DATETIME/TIMESTAMP as
``yyyy-mm-dd hh:mm:ss.ffffff`` (TIMESTAMP in ``--timestamp-zone`` on both sides), TIME as
``[-]h:mm:ss.ffffff``, binary values as hex, zero dates as their text (the mirror keeps it in
``_cdc_invalid``; PyMySQL returns it as a string). Differences are printed (up to
``--show``); the exit code is 0 when identical, 1 when not, 2 when the comparison could not
be made (bad arguments, no connection, no such source table).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # `spark-submit spark_jobs/reconcile.py`
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import hashlib
import json
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, TextIO

import pymysql
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from spark_jobs.mirror_table import META_PREFIX, is_no_table, quote, table_path
from spark_jobs.session import build_session

IDENTICAL, DIFFERENT, FAILED = 0, 1, 2
PARTITION_BYTES = 8 << 20  # of the mirror's Parquet files per partition read into the driver

Key = tuple[str | None, ...]
Canonical = Callable[[Any], str]


class ReconcileError(Exception):
    """The comparison could not be made; the message says why."""


# ------------------------------------------------------------------------ canonical values


def _integer(value: Any) -> str:
    if isinstance(value, bytes | bytearray):  # BIT from PyMySQL
        return str(int.from_bytes(value, "big"))
    return str(int(value))


def _decimal(value: Any) -> str:
    return format(value if isinstance(value, Decimal) else Decimal(str(value)), "f")


def _float(value: Any) -> str:
    return repr(struct.unpack("f", struct.pack("f", float(value)))[0])


def _double(value: Any) -> str:
    return repr(float(value))


def _temporal(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)  # a zero date, or the mirror's formatted TIMESTAMP
    if re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", text) and not text.startswith(
        "0000"
    ):
        whole, _, fraction = text.partition(".")
        return f"{whole}.{fraction.ljust(6, '0')[:6]}"
    return re.sub(r"\.0*$", "", text)


def _time(value: Any) -> str:
    if isinstance(value, timedelta):
        micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    else:
        match = re.fullmatch(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d+))?", str(value))
        if not match:
            return str(value)
        sign, h, m, s, fraction = match.groups()
        micros = ((int(h) * 60 + int(m)) * 60 + int(s)) * 1_000_000
        micros += int((fraction or "").ljust(6, "0")[:6])
        micros = -micros if sign else micros
    sign = "-" if micros < 0 else ""
    seconds, fraction_us = divmod(abs(micros), 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}:{minutes:02d}:{seconds:02d}.{fraction_us:06d}"


def _binary(value: Any) -> str:
    return bytes(value).hex() if isinstance(value, bytes | bytearray) else str(value)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


_INTEGER_TYPES = ("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year", "bit")
_BINARY_TYPES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")

CANONICAL: dict[str, Canonical] = {
    **dict.fromkeys(_INTEGER_TYPES, _integer),
    **dict.fromkeys(("decimal", "numeric"), _decimal),
    "float": _float,
    **dict.fromkeys(("double", "real"), _double),
    **dict.fromkeys(("date", "datetime", "timestamp"), _temporal),
    "time": _time,
    **dict.fromkeys(_BINARY_TYPES, _binary),
}
"""Source DATA_TYPE -> canonical text of a value from either side; others compare as text."""


def canonical(data_type: str, value: Any) -> str | None:
    if value is None:
        return None
    return CANONICAL.get(data_type.lower(), _text)(value)


# ------------------------------------------------------------------------ both sides


@dataclass(frozen=True, slots=True)
class SourceTable:
    columns: list[tuple[str, str]]  # (name, DATA_TYPE)
    primary_key: list[str]


@dataclass(frozen=True, slots=True)
class SourceLogin:
    address: str
    user: str
    password: str
    time_zone: str = "UTC"


Connection = pymysql.connections.Connection


def connect_source(login: SourceLogin) -> Connection:
    host, _, port = login.address.rpartition(":")
    try:
        conn = pymysql.connect(
            host=host.strip("[]") or "127.0.0.1",
            port=int(port or 3306),
            user=login.user,
            password=login.password,
            charset="utf8mb4",
        )
        with conn.cursor() as cur:
            cur.execute("SET time_zone = %s", (_mysql_zone(login.time_zone),))
    except pymysql.MySQLError as exc:
        raise ReconcileError(f"cannot connect to {login.address}: {exc}") from exc
    return conn


def read_source_table(conn: Connection, database: str, table: str) -> SourceTable:
    """The source table's columns and primary key."""
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(
                "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                (database, table),
            )
            columns = [(r["COLUMN_NAME"], r["DATA_TYPE"]) for r in cur.fetchall()]
            if not columns:
                raise ReconcileError(f"no table {database}.{table}")
            cur.execute(
                "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' "
                "ORDER BY ORDINAL_POSITION",
                (database, table),
            )
            key = [r["COLUMN_NAME"] for r in cur.fetchall()]
    except pymysql.MySQLError as exc:
        raise ReconcileError(f"reading {database}.{table}: {exc}") from exc
    if not key:
        raise ReconcileError(f"{database}.{table} has no primary key")
    return SourceTable(columns=columns, primary_key=key)


def source_rows(
    conn: Connection, database: str, table: str, columns: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """Every row of the source table, streamed (an unbuffered cursor)."""
    names = ", ".join(_quote(n) for n in columns)
    try:
        with conn.cursor(pymysql.cursors.SSDictCursor) as cur:
            cur.execute(f"SELECT {names} FROM {_quote(database)}.{_quote(table)}")
            yield from cur
    except pymysql.MySQLError as exc:
        raise ReconcileError(f"reading {database}.{table}: {exc}") from exc


def source_row(
    conn: Connection, database: str, table: str, columns: Sequence[str], key: dict[str, str]
) -> dict[str, Any] | None:
    """The source row whose primary key columns have the canonical texts ``key``."""
    names = ", ".join(_quote(n) for n in columns)
    where = " AND ".join(f"{_quote(k)} = %s" for k in key)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(
                f"SELECT {names} FROM {_quote(database)}.{_quote(table)} WHERE {where}",
                tuple(key.values()),
            )
            row: dict[str, Any] | None = cur.fetchone()
    except pymysql.MySQLError:
        return None  # the key's canonical text is not its SQL value: shown without values
    return row


def read_mirror(
    spark: SparkSession, path: str, time_zone: str
) -> tuple[list[str], list[dict[str, Any]]]:
    """The mirror's source columns and current rows (no tombstones; TIMESTAMP values
    formatted in ``time_zone``); ([], []) when there is no mirror table yet."""
    mirror = MirrorRows.open(spark, path, time_zone)
    if mirror is None:
        return [], []
    return mirror.columns, list(mirror)


@dataclass(frozen=True, slots=True)
class MirrorRows:
    """A mirror table's current rows, iterated a partition at a time (``toLocalIterator``)."""

    spark: SparkSession
    frame: DataFrame
    columns: list[str]
    time_zone: str

    @classmethod
    def open(cls, spark: SparkSession, path: str, time_zone: str) -> MirrorRows | None:
        """None when there is no mirror table at ``path`` yet."""
        try:
            frame = spark.read.format("delta").load(path)
        except AnalysisException as exc:
            if is_no_table(exc):
                return None
            raise
        columns = [f.name for f in frame.schema if not f.name.startswith(META_PREFIX)]
        return cls(spark, frame, columns, time_zone)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Rows as dicts (TIMESTAMP values formatted in ``time_zone``, ``_cdc_invalid``
        included)."""
        timestamps = {f.name for f in self.frame.schema if isinstance(f.dataType, st.TimestampType)}
        previous = self.spark.conf.get("spark.sql.session.timeZone")
        split = self.spark.conf.get("spark.sql.files.maxPartitionBytes")
        self.spark.conf.set("spark.sql.session.timeZone", self.time_zone)
        # toLocalIterator brings one partition at a time into the driver: keep them small.
        self.spark.conf.set("spark.sql.files.maxPartitionBytes", str(PARTITION_BYTES))
        try:
            selected = [
                sf.date_format(sf.col(quote(c)), "yyyy-MM-dd HH:mm:ss.SSSSSS").alias(c)
                if c in timestamps
                else sf.col(quote(c))
                for c in self.columns
            ]
            live = self.frame.where(~sf.col("_cdc_deleted"))
            for row in live.select(*selected, "_cdc_invalid").toLocalIterator():
                yield row.asDict()
        finally:
            self.spark.conf.set("spark.sql.session.timeZone", previous or "UTC")
            self.spark.conf.set("spark.sql.files.maxPartitionBytes", split or "128MB")


def _mysql_zone(zone: str) -> str:
    return "+00:00" if zone.upper() in ("UTC", "Z", "GMT") else zone


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ------------------------------------------------------------------------ comparing


@dataclass
class Report:
    table: str
    source_rows: int
    mirror_rows: int
    only_in_source_columns: list[str]
    only_in_mirror_columns: list[str]
    missing: list[Key]
    extra: list[Key]
    different: list[tuple[Key, list[tuple[str, str | None, str | None]]]]

    @property
    def identical(self) -> bool:
        return not (
            self.only_in_source_columns
            or self.only_in_mirror_columns
            or self.missing
            or self.extra
            or self.different
        )

    def print(self, out: TextIO, show: int) -> None:
        print(
            f"reconcile {self.table}: source {self.source_rows} rows, "
            f"mirror {self.mirror_rows} rows",
            file=out,
        )
        if self.only_in_source_columns:
            print(f"  columns only in the source: {self.only_in_source_columns}", file=out)
        if self.only_in_mirror_columns:
            print(f"  columns only in the mirror: {self.only_in_mirror_columns}", file=out)
        for label, keys in (("missing from the mirror", self.missing), ("extra", self.extra)):
            if keys:
                print(f"  {label}: {len(keys)} rows, e.g. keys {keys[:show]}", file=out)
        if self.different:
            print(f"  different: {len(self.different)} rows", file=out)
            for key, columns in self.different[:show]:
                detail = ", ".join(f"{c}: source {s!r} mirror {m!r}" for c, s, m in columns)
                print(f"    key {key}: {detail}", file=out)
        count = (
            len(self.missing)
            + len(self.extra)
            + len(self.different)
            + len(self.only_in_source_columns)
            + len(self.only_in_mirror_columns)
        )
        print("IDENTICAL" if self.identical else f"DIFFERENT ({count} differences)", file=out)


class Comparison:
    """Both sides reduced to a checksum per primary key: the source's are kept, the mirror's
    compared as its rows stream by; a key's canonical values are joined into one text."""

    def __init__(self, source: SourceTable, mirror_columns: Sequence[str], show: int) -> None:
        lowered = {c.lower(): c for c in mirror_columns}
        self.source_table = source
        self.mirror_columns = list(mirror_columns)
        self.common = [(n, t) for n, t in source.columns if n.lower() in lowered]
        self.mirror_names = {n: lowered[n.lower()] for n, _ in self.common}
        self.key_index = [i for i, (n, _) in enumerate(self.common) if n in source.primary_key]
        self.show = show
        self.source: dict[str, int] = {}
        self.source_rows = 0
        self.mirror_rows = 0
        self.extra: list[str] = []
        self.different: list[str] = []
        self.shown: dict[str, list[str | None]] = {}
        """the mirror's values of the first ``show`` differing rows"""

    def _values(self, row: dict[str, Any], mirror: bool) -> list[str | None]:
        raw = (row.get("_cdc_invalid") or {}) if mirror else {}
        values = []
        for column, data_type in self.common:
            name = self.mirror_names[column] if mirror else column
            value = row[name]
            if value is None and name in raw:
                value = raw[name]
            values.append(canonical(data_type, value))
        return values

    def _key(self, values: Sequence[str | None]) -> str:
        return KEY_SEPARATOR.join(values[i] or "" for i in self.key_index)

    def add_source(self, row: dict[str, Any]) -> None:
        values = self._values(row, mirror=False)
        self.source[self._key(values)] = _checksum(values)
        self.source_rows += 1

    def check_mirror(self, row: dict[str, Any]) -> None:
        values = self._values(row, mirror=True)
        key = self._key(values)
        self.mirror_rows += 1
        expected = self.source.pop(key, None)
        if expected is None:
            self.extra.append(key)
        elif expected != _checksum(values):
            self.different.append(key)
            if len(self.shown) < self.show:
                self.shown[key] = values

    def report(
        self, name: str, read_again: Callable[[dict[str, str]], dict[str, Any] | None]
    ) -> Report:
        """The report; ``read_again`` reads a source row by its key (column -> canonical
        text) for the differing rows shown."""
        columns = [n for n, _ in self.common]
        key_names = [columns[i] for i in self.key_index]
        different = []
        for key in self.different:
            detail: list[tuple[str, str | None, str | None]] = []
            if key in self.shown:
                row = read_again(dict(zip(key_names, key.split(KEY_SEPARATOR), strict=True)))
                source = self._values(row, mirror=False) if row else [None] * len(columns)
                detail = [
                    (c, s, m)
                    for c, s, m in zip(columns, source, self.shown[key], strict=True)
                    if s != m
                ]
            different.append((_key_tuple(key), detail))
        types = dict(self.source_table.columns)
        return Report(
            table=name,
            source_rows=self.source_rows,
            mirror_rows=self.mirror_rows,
            only_in_source_columns=[n for n in types if n.lower() not in self.lowered()],
            only_in_mirror_columns=[
                c for c in self.mirror_columns if c.lower() not in {n.lower() for n in types}
            ],
            missing=sorted((_key_tuple(k) for k in self.source), key=str),
            extra=sorted((_key_tuple(k) for k in self.extra), key=str),
            different=sorted(different, key=lambda d: str(d[0])),
        )

    def lowered(self) -> set[str]:
        return {c.lower() for c in self.mirror_columns}


KEY_SEPARATOR = "\x00"


def _key_tuple(key: str) -> Key:
    return tuple(key.split(KEY_SEPARATOR))


def _checksum(values: Sequence[str | None]) -> int:
    """The first 8 bytes of a SHA-256 over the canonical values (compared per key only)."""
    return int.from_bytes(hashlib.sha256(json.dumps(list(values)).encode()).digest()[:8])


# ------------------------------------------------------------------------ command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spark_jobs.reconcile", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--mirror", required=True, help="root folder of the mirror tables")
    parser.add_argument("--table", required=True, help="database.table")
    parser.add_argument("--mysql", required=True, help="host:port of the source")
    parser.add_argument("--user", required=True)
    parser.add_argument(
        "--password-env", required=True, help="name of the variable holding the password"
    )
    parser.add_argument("--timestamp-zone", default="UTC")
    parser.add_argument("--show", type=int, default=20, help="differences to print")
    return parser.parse_args(argv)


def run(
    args: argparse.Namespace, spark: SparkSession | None = None, out: TextIO = sys.stdout
) -> int:
    """Compare and print; ``spark`` is built (and stopped) when not given."""
    database, dot, table = args.table.partition(".")
    if not dot or not database or not table:
        print(f"--table {args.table!r}: expected database.table", file=sys.stderr)
        return FAILED
    password = os.environ.get(args.password_env)
    if password is None:
        print(f"--password-env: ${args.password_env} is not set", file=sys.stderr)
        return FAILED
    try:
        conn = connect_source(SourceLogin(args.mysql, args.user, password, args.timestamp_zone))
    except ReconcileError as exc:
        print(f"reconcile: {exc}", file=sys.stderr)
        return FAILED
    session = spark or build_session("canal-bridge-reconcile")
    try:
        return _compare(args, session, conn, f"{database}.{table}", out)
    except ReconcileError as exc:
        print(f"reconcile: {exc}", file=sys.stderr)
        return FAILED
    finally:
        conn.close()
        if spark is None:
            session.stop()


def _compare(
    args: argparse.Namespace, spark: SparkSession, conn: Connection, name: str, out: TextIO
) -> int:
    database, _, table = name.partition(".")
    source = read_source_table(conn, database, table)
    path = table_path(args.mirror, database, table)
    mirror = MirrorRows.open(spark, path, args.timestamp_zone)
    if mirror is None:  # no mirror table yet: right only while the source table is empty
        print(f"reconcile {args.table}: no mirror table at {path}", file=out)
    columns = mirror.columns if mirror is not None else [n for n, _ in source.columns]
    comparison = Comparison(source, columns, args.show)
    names = [n for n, _ in comparison.common]
    for row in source_rows(conn, database, table, names):
        comparison.add_source(row)
    for row in mirror or ():
        comparison.check_mirror(row)
    report = comparison.report(
        args.table, lambda key: source_row(conn, database, table, names, key)
    )
    report.print(out, args.show)
    return IDENTICAL if report.identical else DIFFERENT


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
