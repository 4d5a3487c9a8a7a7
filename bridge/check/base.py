"""What every check gives: one table row (``CheckResult``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.

Outcome = Literal["PASS", "WARN", "FAIL", "SKIP"]
ONE_DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class CheckResult:
    scope: str  # a destination's name, or "kafka"
    check: str
    outcome: Outcome
    detail: str
