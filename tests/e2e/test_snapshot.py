"""Snapshots end to end (docs/snapshots.md), the negative case: the snapshot of
tests/e2e/snapshot_load.py under a writer, with the window's key dropping turned off, leaves a
key whose last record in Kafka is older than the source's row. The positive case (two kill -9,
the topic and the Spark mirror equal to the source) is tests/spark/test_snapshot_kills.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.snapshot.coordinator import KEEP_CHANGED_KEYS_ENV
from tests.conftest import Account, MysqlEndpoint
from tests.e2e.snapshot_load import run_snapshot

pytestmark = [pytest.mark.services, pytest.mark.both_servers]


@pytest.mark.only_on(
    "mariadb", reason="the negative case shows the window is needed; the positive runs on both"
)
def test_without_dropping_changed_keys_a_stale_row_survives(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    read_only_account: Account,
) -> None:
    run = run_snapshot(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        read_only_account,
        kills=0,
        env={KEEP_CHANGED_KEYS_ENV: "1"},
    )
    run.bridge.kill()
    assert run.differences, "no stale row without the window: the positive test could not fail"
