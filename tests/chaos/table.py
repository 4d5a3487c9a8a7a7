"""The suite's result as one table (Markdown, so docs/operations.md can take it as printed)."""

from __future__ import annotations

from collections.abc import Iterable

from tests.chaos.stage import Outcome

HEADER = (
    "scenario",
    "delivery",
    "changes",
    "lost",
    "reordered",
    "duplicates",
    "stale keys",
    "recovery s",
    "CPU while waiting",
    "result",
    "notes",
)


def _cells(o: Outcome) -> tuple[str, ...]:
    r = o.report
    return (
        o.scenario,
        o.delivery.replace("_", "-"),
        str(r.changes),
        str(r.lost),
        str(r.reordered),
        str(r.duplicates),
        str(r.stale),
        "-" if o.recovery_s is None else f"{o.recovery_s:.1f}",
        "-" if o.cpu_waiting is None else f"{o.cpu_waiting:.1%}",
        "pass" if o.passed else "FAIL",
        "; ".join(filter(None, (o.notes, *o.problems))),
    )


def render(outcomes: Iterable[Outcome]) -> str:
    rows = [HEADER, *(_cells(o) for o in outcomes)]
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("---" for _ in HEADER) + "|")
    return "\n".join(lines)
