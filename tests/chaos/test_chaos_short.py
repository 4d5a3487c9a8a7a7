"""The short chaos suite (``SHORT``: 3 kills, outages of a few seconds) against the shared MariaDB
and Kafka, whose faults hit only what each scenario starts itself. Each scenario must lose and
reorder nothing and end every key at its source state; duplicates are printed (at-least-once) or
must be 0 (exactly-once, read_committed). ``python -m tests.chaos --long`` is the long suite.

The verifier's own tests (it can fail) are in test_verifier.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos.scenarios import SCENARIOS, Services
from tests.chaos.stage import SHORT
from tests.chaos.table import render
from tests.conftest import MysqlEndpoint

pytestmark = [pytest.mark.services, pytest.mark.timeout(600)]

NEEDS_ROOT = {"disk-full"}  # a tmpfs mount


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_short_chaos(name: str, tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str) -> None:
    if name in NEEDS_ROOT and os.geteuid() != 0:
        pytest.skip("mounting the tiny tmpfs needs root")
    outcome = SCENARIOS[name](Services(mysql, kafka_bootstrap, tmp_path), SHORT)
    print("\n" + render([outcome]))
    assert outcome.passed, f"{outcome.report.summary()} {outcome.problems}"
    if outcome.delivery == "exactly_once":
        assert outcome.report.duplicates == 0, outcome.report.examples
