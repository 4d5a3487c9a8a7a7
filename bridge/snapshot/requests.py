"""On-demand snapshots (docs/snapshots.md, "On demand").

A request names tables (``canal-bridge snapshot --tables db.t1,db.t2``, the admin endpoint's
``POST /destinations/<d>/snapshot``, or a ZooKeeper request node in HA mode). This module is
the pure part shared by all three:

* ``parse_tables``: the names as given, checked for the ``schema.table`` form;
* ``check_tables``: each must be a base table of the source that the destination's filter
  keeps (a snapshot row must be one the stream would send too); any other name refuses the
  whole request (``SnapshotRequestRefused`` names them), so nothing is half done;
* ``with_tables_again``: the plan after the request. A table already in the plan, being
  snapshotted or done, **starts again from its first row**: a request means "this consumer
  needs these rows again", and a table half read before the request may have lost its earlier
  chunks downstream; upsert consumers converge either way;
* ``plan_marker``: the plan travels through the store as an empty snapshot pseudo-transaction
  (BEGIN, END carrying the plan) put at the stream's position, so the cursor takes it on when
  the marker is acknowledged, in order with everything put before it (an ack of an older
  snapshot row can never write the plan back without the request) and wherever the cursor
  lives (meta store, ZooKeeper, the offsets topic of exactly-once).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.config import DestinationConfig
from bridge.entry import Entry, EntryType
from bridge.position import EntryPosition, SnapshotHeader, SnapshotProgress, TableProgress
from bridge.sink.filters import TableFilter
from bridge.snapshot.exceptions import SnapshotRequestRefused
from bridge.snapshot.planner import base_tables

# The most tables one request may name (a typo'd shell glob should not queue the whole server).
MAX_TABLES = 1000


def parse_tables(tables: str | Iterable[object]) -> tuple[str, ...]:
    """``'db.t1,db.t2'`` (or a list of names) as distinct ``schema.table`` names, in order.
    Raises ``ValueError`` with one line saying what is wrong."""
    items = tables.split(",") if isinstance(tables, str) else list(tables)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"tables: {item!r} is not a name; give schema.table strings")
        name = item.strip()
        if not name and isinstance(tables, str):
            continue  # a trailing comma
        schema, dot, table = name.partition(".")
        if not dot or not schema or not table or "." in table:
            raise ValueError(f"tables: {name!r} is not schema.table (e.g. shop.orders)")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("tables: name at least one table as schema.table")
    if len(names) > MAX_TABLES:
        raise ValueError(f"tables: {len(names)} names; at most {MAX_TABLES} per request")
    return tuple(names)


def check_tables(conn: Any, config: DestinationConfig, tables: Sequence[str]) -> tuple[str, ...]:
    """``tables`` as the source spells them, if every one is a base table the destination's
    filter keeps; else ``SnapshotRequestRefused`` naming the others. Names are matched exactly
    first, then ignoring case (MySQL on a case-insensitive file system, lower_case_table_names)."""
    existing = {f"{schema}.{table}" for schema, table in base_tables(conn)}
    by_lower = {name.lower(): name for name in sorted(existing)}
    stream = TableFilter(config.filter.regex, config.filter.black_regex)
    accepted: list[str] = []
    unknown: list[str] = []
    filtered: list[str] = []
    for name in tables:
        found = name if name in existing else by_lower.get(name.lower())
        if found is None:
            unknown.append(name)
        elif not stream.accepts_name(found):
            filtered.append(found)
        elif found not in accepted:
            accepted.append(found)
    if unknown or filtered:
        raise SnapshotRequestRefused(config.name, unknown, filtered)
    return tuple(accepted)


def with_tables_again(plan: SnapshotProgress | None, tables: Iterable[str]) -> SnapshotProgress:
    """``plan`` with each of ``tables`` from its first row (added when absent); the others as
    they were. Sorted by name, as a fresh plan is."""
    kept = {table.table: table for table in (plan.tables if plan is not None else ())}
    for name in tables:
        kept[name] = TableProgress(name)
    return SnapshotProgress(tuple(kept[name] for name in sorted(kept)))


def plan_marker(plan: SnapshotProgress, at: EntryPosition, now_ms: int) -> list[Entry]:
    """An empty snapshot pseudo-transaction put at ``at`` (a transaction boundary of the
    stream) whose END carries ``plan``: acknowledging it writes the plan into the cursor.
    Flat-message consumers see nothing (no rows); protobuf ones an empty transaction."""

    def header(progress: SnapshotProgress | None) -> SnapshotHeader:
        return SnapshotHeader(
            logfile_name=at.journal_name or "",
            logfile_offset=at.position or 0,
            server_id=at.server_id or 0,
            execute_time=now_ms,
            gtid=at.gtid or "",
            event_length=0,
            progress=progress,
        )

    return [
        Entry(header(None), EntryType.TRANSACTIONBEGIN),
        Entry(header(plan), EntryType.TRANSACTIONEND),
    ]


@dataclass(eq=False)
class PendingRequest:
    """A request accepted by an instance and waiting for its binlog reader's restart: ``put``
    is set once its plan marker is in the store (``sequence``: the marker END's store
    sequence; the request is persisted when the store's acks reach it)."""

    tables: tuple[str, ...]
    put: threading.Event = field(default_factory=threading.Event)
    sequence: int = 0


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """What became of a request: the tables planned again, and whether the cursor already
    carries them (False: queued in the running instance, not yet acknowledged in time)."""

    tables: tuple[str, ...]
    persisted: bool
