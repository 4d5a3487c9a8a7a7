"""canal's own client, ``KafkaCanalConnector`` from ``com.alibaba.otter:canal.client`` 1.1.8 (the
class canal-adapter consumes Kafka with), reads what ``canal-bridge run`` wrote from a mixed
workload, and what it hands its user equals the source's rows: each change in commit order
(``getFlatList`` + ``ack`` in flat mode, ``getList`` in protobuf mode), and the final state."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pydantic
import pytest

from bridge.config import MqConfig
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, write_config
from tests.interop import consumers
from tests.interop.conftest import Stream, wait_for_rows
from tests.interop.source import (
    ADDED_COLUMN,
    CANAL_SQL_TYPES,
    TABLE,
    Change,
    canal_text,
    column_types,
    create_table,
    final_rows,
    run_workload,
    spelled,
)

pytestmark = pytest.mark.services


def _read(jar: Path, bootstrap: str, topic: str, rows: int, mode: str) -> consumers.ConsumerRun:
    group = f"interop-{uuid.uuid4().hex[:8]}"
    run = consumers.run(jar, mode, bootstrap, topic, group, str(rows), "90")
    problem = run.error or f"fewer than {rows} rows within 90 s"
    assert run.status == 0, f"{mode}: {problem} (read {len(run.rows())} rows)"
    return run


def _flat_expected(change: Change) -> dict[str, Any]:
    """A change as a FlatMessage carries it: the row (the deleted one for DELETE) and, for
    an UPDATE, the changed columns' old values."""
    row = change.before if change.type == "DELETE" else change.after
    old = None
    if change.type == "UPDATE":
        old = spelled(change.before, canal_text, change.changed())
    return {"type": change.type, "data": spelled(row, canal_text), "old": old}


def test_flat_mode_returns_the_source_rows(
    stream: Stream, consumers_jar: Path, kafka_bootstrap: str, mysql: MysqlEndpoint
) -> None:
    streamed = stream()
    run = _read(consumers_jar, kafka_bootstrap, streamed.topic, len(streamed.changes), "canal-flat")

    got = [{k: line[k] for k in ("type", "data", "old")} for line in run.rows()]
    assert got == [_flat_expected(c) for c in streamed.changes]
    for line in run.rows():
        assert (line["database"], line["table"], line["pkNames"]) == (
            streamed.schema,
            TABLE,
            ["id"],
        )
        assert line["mysqlType"].items() <= column_types(mysql, streamed.schema).items()
        assert line["sqlType"].keys() == line["mysqlType"].keys() == line["data"].keys()
        assert line["sqlType"].items() <= CANAL_SQL_TYPES.items()
    ddl = [line for line in run.lines if line.get("isDdl")]
    assert [(d["type"], d["table"]) for d in ddl] == [("ALTER", TABLE)], ddl
    assert f"ADD COLUMN {ADDED_COLUMN}" in ddl[0]["sql"]

    # The final state a replica built from these changes (and the DDL: the added column is
    # NULL in the rows written before it) equals the source table.
    state: dict[str, dict[str, Any]] = {}
    for line in run.lines:
        if line["isDdl"]:
            state = {key: {**row, ADDED_COLUMN: None} for key, row in state.items()}
        elif line["type"] == "DELETE":
            del state[line["data"]["id"]]
        else:
            state[line["data"]["id"]] = line["data"]
    source = final_rows(mysql, streamed.schema)
    assert state == {str(k): spelled(row, canal_text) for k, row in source.items()}


def test_flat_mode_sees_a_change_the_recorded_workload_lacks(
    stream: Stream, consumers_jar: Path, kafka_bootstrap: str, mysql: MysqlEndpoint
) -> None:
    """The comparison above can fail: a change the source made after the recorded workload
    reaches the client even when asked for the recorded number of rows (the reader drains
    what follows them, so an extra or duplicate change is never cut off), and the lists differ."""
    streamed = stream(batch_size=7)  # a run of its own: this test writes to its source
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"UPDATE `{streamed.schema}`.{TABLE} SET note = 'late' WHERE id = 2")
    conn.close()
    wait_for_rows(kafka_bootstrap, streamed.topic, len(streamed.changes) + 1, streamed.bridge)
    rows = len(streamed.changes)
    run = _read(consumers_jar, kafka_bootstrap, streamed.topic, rows, "canal-flat")
    got = [{k: line[k] for k in ("type", "data", "old")} for line in run.rows()]
    assert got != [_flat_expected(c) for c in streamed.changes]
    assert got[:-1] == [_flat_expected(c) for c in streamed.changes]
    assert (got[-1]["type"], got[-1]["data"]["note"], got[-1]["old"]) == (
        "UPDATE",
        "late",
        {"note": "was null"},
    )


def _protobuf_missing() -> str | None:
    try:
        MqConfig(topic="t", flat_message=False)
    except pydantic.ValidationError:
        return "mq.flat_message: false (canal's protobuf format) is not built yet"
    return None


def test_protobuf_mode_returns_the_source_rows(
    tmp_path: Path,
    consumers_jar: Path,
    kafka_bootstrap: str,
    mysql: MysqlEndpoint,
    scratch_schema: str,
) -> None:
    """``mq.flat_message: false``: canal's protobuf Message, read with ``getList`` (which
    acks): full before and after images, the updated flags, the key, the DDL."""
    missing = _protobuf_missing()
    if missing:
        pytest.skip(missing)
    create_table(mysql, scratch_schema)
    topic = f"interop-pb-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    config = write_config(
        tmp_path / "destinations.yaml",
        mysql,
        kafka_bootstrap,
        scratch_schema,
        topic,
        flat_message=False,
    )
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading")
        changes = run_workload(mysql, scratch_schema)
        run = _read(consumers_jar, kafka_bootstrap, topic, len(changes), "canal-protobuf")
    finally:
        bridge.kill()

    got = [
        {k: line[k] for k in ("type", "database", "table", "before", "after")}
        for line in run.rows()
    ]
    assert got == [
        {
            "type": c.type,
            "database": scratch_schema,
            "table": TABLE,
            "before": spelled(c.before, canal_text) or {},
            "after": spelled(c.after, canal_text) or {},
        }
        for c in changes
    ]
    for line, change in zip(run.rows(), changes, strict=True):
        assert line["pkNames"] == ["id"]
        if change.type == "UPDATE":
            assert set(line["updated"]) == change.changed()
        assert line["mysqlType"].items() <= column_types(mysql, scratch_schema).items()
        assert (
            line["sqlType"].keys()
            == line["mysqlType"].keys()
            == (line["after"] or line["before"]).keys()
        )
        assert line["sqlType"].items() <= CANAL_SQL_TYPES.items()
    ddl = [line for line in run.lines if line.get("isDdl")]
    assert [(d["type"], d["table"]) for d in ddl] == [("ALTER", TABLE)], ddl
