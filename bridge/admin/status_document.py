"""``/status``: each destination's state and readiness with its reason, as JSON.

More than the probes say (the reason a destination is not ready, its cursor and lag), and
still no row data, no addresses and no error messages of the source or the broker beyond the
one-line reason and the one-line error that stopped a destination (with its fix): so it stays
readable by monitoring tools, and behind the bearer token once ``admin.token_file`` is set.
``destination_fields`` is also each destination's document in the REST API
(``bridge.admin.api_documents``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import orjson

from bridge.admin.base import DestinationSnapshot, SnapshotUsage
from bridge.admin.probes import Verdict


def status_document(snapshots: Sequence[DestinationSnapshot], verdicts: Sequence[Verdict]) -> bytes:
    """``{"ready": bool, "destinations": [...]}``, destinations in configuration order."""
    by_name = {v.destination: v for v in verdicts}
    destinations = [destination_fields(s, by_name.get(s.destination)) for s in snapshots]
    document = {
        "ready": all(d["ready"] for d in destinations),
        "destinations": destinations,
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def destination_fields(s: DestinationSnapshot, verdict: Verdict | None) -> dict[str, Any]:
    """One destination's state, readiness, cursor, lag, counts, snapshot progress, schema
    history and last error, as JSON-ready values."""
    cursor = None
    if s.cursor is not None and s.cursor.journal_name and s.cursor.position is not None:
        cursor = f"{s.cursor.journal_name}:{s.cursor.position}"
    progress = s.progress
    return {
        "name": s.destination,
        "role": s.role,
        "state": s.state,
        "ready": verdict.ready if verdict is not None else False,
        "readiness": verdict.word if verdict is not None else s.state,
        "reason": verdict.reason if verdict is not None else "",
        "lag_s": None if s.lag_s is None else round(s.lag_s, 3),
        "cursor": cursor,
        "rows": progress.rows_sent if progress is not None else 0,
        "batches_acked": progress.batches_acked if progress is not None else 0,
        "consecutive_failures": progress.consecutive_failures if progress is not None else 0,
        "store_items": s.store.items if s.store is not None else None,
        "snapshot": None if s.snapshot is None else _snapshot(s.snapshot),
        "schema_history": None if s.schema is None else dataclasses.asdict(s.schema),
        "error": s.error,
    }


def _snapshot(usage: SnapshotUsage) -> dict[str, Any]:
    """Progress in tables (a table's row count is not known before it is read): 100 once
    every planned table is done, None for a plan without tables."""
    total = usage.tables_total
    return {
        "rows": usage.rows,
        "tables_done": usage.tables_done,
        "tables_total": total,
        "percent": round(100 * usage.tables_done / total, 1) if total else None,
    }
