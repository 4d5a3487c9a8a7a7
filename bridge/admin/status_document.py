"""``/status``: each destination's state and readiness with its reason, as JSON.

More than the probes say (the reason a destination is not ready, its cursor and lag), and
still no row data, no addresses and no error messages of the source or the broker beyond the
one-line reason: so it stays readable by monitoring tools, and behind the bearer token once
``admin.token_file`` is set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import orjson

from bridge.admin.base import DestinationSnapshot
from bridge.admin.probes import Verdict


def status_document(snapshots: Sequence[DestinationSnapshot], verdicts: Sequence[Verdict]) -> bytes:
    """``{"ready": bool, "destinations": [...]}``, destinations in configuration order."""
    by_name = {v.destination: v for v in verdicts}
    destinations = [_destination(s, by_name.get(s.destination)) for s in snapshots]
    document = {
        "ready": all(d["ready"] for d in destinations),
        "destinations": destinations,
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"


def _destination(s: DestinationSnapshot, verdict: Verdict | None) -> dict[str, Any]:
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
        "snapshot": None
        if s.snapshot is None
        else {
            "rows": s.snapshot.rows,
            "tables_done": s.snapshot.tables_done,
            "tables_total": s.snapshot.tables_total,
        },
        "schema_history": None if s.schema is None else dataclasses.asdict(s.schema),
    }
