"""The drift check compares the history with the live tables: a DDL that never reached the
binlog (``sql_log_bin=0``) is reported, and nothing is reported while they agree."""

from __future__ import annotations

import pymysql
import pytest

from bridge.config import DestinationConfig
from bridge.instance.schema_drift import DriftWatch
from bridge.instance.schema_start import capture
from bridge.position import EntryPosition
from bridge.schema.codec import Mark
from bridge.schema.recorder import SchemaRecorder
from bridge.schema.store import MemoryHistoryStore
from bridge.sink import TableFilter
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import execute, source_config

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

Connection = pymysql.connections.Connection  # type: ignore[type-arg]
FAR = EntryPosition(journal_name="~", position=1 << 40)  # read up to beyond any position


def _watch(mysql: MysqlEndpoint, schema: str) -> DriftWatch:
    config = DestinationConfig.model_validate(
        {
            "name": "drift",
            "source": source_config(mysql).model_dump(),
            "filter": {"regex": schema + r"\..*"},
            "mq": {"topic": "unused"},
        }
    )
    recorder = SchemaRecorder(MemoryHistoryStore())
    schemas, at = capture(config.source, TableFilter(config.filter.regex))
    recorder.begin(Mark(at.journal_name or "", at.position or 0), schemas)
    return DriftWatch(config, recorder, lambda: FAR)


def test_a_change_outside_the_binlog_is_reported_as_drift(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    execute(admin_connection, f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, a INT)")
    watch = _watch(mysql, scratch_schema)
    assert watch.check()
    assert watch.drifted == ()
    execute(
        admin_connection,
        "SET SESSION sql_log_bin = 0",
        f"ALTER TABLE `{scratch_schema}`.t RENAME COLUMN a TO b",
        "SET SESSION sql_log_bin = 1",
    )
    assert watch.check()
    assert watch.drifted == (f"{scratch_schema}.t",)
