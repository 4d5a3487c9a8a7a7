"""``canal-bridge check`` as a whole: every check run, the table printed, the exit code."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TextIO

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from bridge.check.base import CheckResult
from bridge.check.kafka import check_kafka
from bridge.check.source import check_source
from bridge.config import BridgeConfig


def run_checks(config: BridgeConfig) -> list[CheckResult]:
    results: list[CheckResult] = []
    for destination in config.destinations:
        results += check_source(destination)
    if config.broker == "kafka":
        results += check_kafka(config)
    else:
        detail = f"broker {config.broker}: no Kafka cluster to check"
        results.append(CheckResult(config.broker, "broker", "SKIP", detail))
    return results


def render(results: Iterable[CheckResult]) -> str:
    rows = [("SCOPE", "CHECK", "RESULT", "DETAIL")]
    rows += [(r.scope, r.check, r.outcome, r.detail) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def print_check(config: BridgeConfig, out: TextIO) -> int:
    """Run every check, print the table and a summary; 1 if anything failed, else 0."""
    results = run_checks(config)
    out.write(render(results))
    failed = sum(r.outcome == "FAIL" for r in results)
    warned = sum(r.outcome == "WARN" for r in results)
    out.write(f"\n{len(results)} checks: {failed} failed, {warned} warnings\n")
    return 1 if failed else 0
