"""Judge a whole topic against the version chains of ``generator``: what a consumer would miss,
see twice, or see out of order, per key, and whether each key ends where the source table is.

Definitions (per key = (table, primary key); a key lives on one partition, so the records of a
key in (partition, offset) order are what a consumer sees):

- duplicate: a row change seen before (at-least-once re-sends after a crash);
- reordered: a change seen for the first time after a later change of the same key (or a key
  found on more than one partition, whose order no consumer can know);
- lost: the changes missing between consecutive distinct changes of a chain (a missing
  generation counts as its INSERT and DELETE, the least it held), or, when the load's total is
  known, the shortfall of distinct changes against it, whichever is larger;
- stale: keys whose last change in the topic is not the row in the source table (a DELETE for
  a key that is gone).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

Record = tuple[int, int, bytes | None, dict[str, Any]]  # partition, offset, key, FlatMessage
Key = tuple[str, str]

RANK = {"INSERT": 0, "UPDATE": 1, "DELETE": 2}


@dataclass(frozen=True, order=True)
class Change:
    """One row change of a chain; ordered as the key's changes are committed."""

    gen: int
    version: int
    rank: int  # INSERT 0, UPDATE 1, DELETE 2

    @property
    def step(self) -> int:
        """Its place within the generation: INSERT 0, UPDATE v at v, DELETE after the last."""
        return self.version + (1 if self.rank == RANK["DELETE"] else 0)


@dataclass(frozen=True)
class Report:
    records: int
    changes: int  # distinct row changes
    duplicates: int
    lost: int
    reordered: int
    stale: int
    expected: int | None = None
    examples: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Nothing lost, nothing reordered, every key at its source state (duplicates allowed)."""
        return self.lost == 0 and self.reordered == 0 and self.stale == 0

    def summary(self) -> str:
        expected = "" if self.expected is None else f" of {self.expected} written"
        return (
            f"{self.records} records, {self.changes} changes{expected}: lost {self.lost}, "
            f"reordered {self.reordered}, duplicates {self.duplicates}, stale keys {self.stale}"
            + ("" if self.ok else f"; e.g. {'; '.join(self.examples[:5])}")
        )


def row_changes(records: list[Record]) -> dict[Key, list[tuple[int, Change]]]:
    """Per key, (partition, change) in the order a consumer reads them."""
    per_key: dict[Key, list[tuple[int, Change]]] = defaultdict(list)
    for partition, _, _, message in sorted(records, key=lambda r: (r[0], r[1])):
        if message.get("isDdl") or message.get("type") not in RANK:
            continue
        for row in message.get("data") or ():
            change = Change(int(row["gen"]), int(row["version"]), RANK[message["type"]])
            per_key[(message["table"], str(row["id"]))].append((partition, change))
    return per_key


def _missing_between(before: Change | None, after: Change) -> int:
    """Changes a complete chain holds strictly between ``before`` and ``after``."""
    if before is None:
        return (after.gen - 1) * 2 + after.step
    if before.gen == after.gen:
        return after.step - before.step - 1
    end_of_before = 0 if before.rank == RANK["DELETE"] else 1  # its DELETE at least
    return end_of_before + (after.gen - before.gen - 1) * 2 + after.step


def verify(
    records: list[Record],
    source: dict[Key, tuple[int, int]] | None = None,
    expected: int | None = None,
) -> Report:
    """Judge ``records`` (every record of the topic); ``source`` is the table's final state
    (``generator.source_state``), ``expected`` how many changes the load committed."""
    per_key = row_changes(records)
    examples: list[str] = []
    total = distinct = gap_lost = reordered = stale = 0
    for key, seen in per_key.items():
        total += len(seen)
        if len({partition for partition, _ in seen}) > 1:
            reordered += 1
            examples.append(f"{key} on several partitions")
        first_seen: list[Change] = []
        known: set[Change] = set()
        for _, change in seen:
            if change in known:
                continue
            if first_seen and change < max(first_seen):
                reordered += 1
                examples.append(f"{key} {change} after {max(first_seen)}")
            known.add(change)
            first_seen.append(change)
        distinct += len(known)
        previous: Change | None = None
        for change in sorted(known):
            missing = _missing_between(previous, change)
            if missing:
                gap_lost += missing
                examples.append(f"{key} {missing} lost before {change}")
            previous = change
    for key in set(per_key) | set(source or ()):
        if source is None:
            break
        read = per_key.get(key)
        last = read[-1][1] if read else None  # what a consumer applying them in order ends at
        want = source.get(key)
        ends_alive = last is not None and last.rank != RANK["DELETE"]
        if want is None and not ends_alive:
            continue
        if (
            want is not None
            and ends_alive
            and last is not None
            and (last.gen, last.version) == want
        ):
            continue
        stale += 1
        examples.append(f"{key} ends at {last}, the table has {want}")
    lost = gap_lost if expected is None else max(gap_lost, expected - distinct)
    return Report(
        records=len(records),
        changes=distinct,
        duplicates=total - distinct,
        lost=lost,
        reordered=reordered,
        stale=stale,
        expected=expected,
        examples=tuple(examples),
    )
