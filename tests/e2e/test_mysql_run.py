"""``canal-bridge run`` on MySQL 8.4/9.x with what a production MySQL writes: compressed
transactions (one of 25,000 rows), partial JSON updates, DDL and ordinary DML, while the bridge
is killed -9 and restarted; it starts with no configured position. The state replayed from the
topic must equal every source table.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, consume
from tests.e2e.workload import keyed_run

pytestmark = [
    pytest.mark.services,
    pytest.mark.only_on(
        "mysql", reason="compressed transactions and partial JSON updates are MySQL features"
    ),
]

PARTITIONS = 3
BULK_ROWS = 25_000
TABLES = ("items", "bulk")


def _create_tables(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{schema}`.items (id INT PRIMARY KEY, version INT NOT NULL, "
            "doc JSON, note VARCHAR(40))"
        )
        cur.execute(
            f"CREATE TABLE `{schema}`.bulk (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(64))"
        )
    conn.close()


def _workload(mysql: MysqlEndpoint, schema: str, pause_s: float) -> None:
    """Plain DML, compressed transactions (one of ``BULK_ROWS`` rows), partial JSON updates,
    a DDL, then more of each; ``pause_s`` spreads it so that kills land in the middle."""
    conn = connect_admin(mysql)
    try:
        _statements(conn, schema, pause_s)
    finally:
        conn.close()  # also after a failure: an open transaction would block DROP DATABASE


def _statements(conn: Any, schema: str, pause_s: float) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SET SESSION cte_max_recursion_depth = {BULK_ROWS + 1}")
        for key in range(60):
            doc = {"n": key, "tags": ["a", "b"], "nested": {"x": key, "y": "ü"}}
            cur.execute(
                f"INSERT INTO `{schema}`.items VALUES (%s, 0, %s, 'plain')",
                (key, json.dumps(doc)),
            )
            time.sleep(pause_s)
        cur.execute("SET SESSION binlog_transaction_compression = ON")
        cur.execute("BEGIN")
        cur.execute(
            f"INSERT INTO `{schema}`.bulk (id, v, pad) WITH RECURSIVE seq (n) AS "
            f"(SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {BULK_ROWS}) "
            "SELECT n, 0, REPEAT('x', 40) FROM seq"
        )
        cur.execute("COMMIT")
        for round_ in range(1, 11):
            cur.execute("BEGIN")
            cur.execute(
                f"UPDATE `{schema}`.bulk SET v = %s WHERE id %% 10 = %s", (round_, round_ % 10)
            )
            cur.execute(
                f"UPDATE `{schema}`.items SET version = %s WHERE id %% 7 = %s",
                (round_, round_ % 7),
            )
            cur.execute("COMMIT")
            time.sleep(pause_s * 5)
        cur.execute("SET SESSION binlog_transaction_compression = OFF")
        cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
        for key in range(60):
            statements = (
                "doc = JSON_SET(doc, '$.nested.x', %s)",
                "doc = JSON_REPLACE(doc, '$.tags[1]', 'z')",
                "doc = JSON_REMOVE(doc, '$.tags[0]')",
                "doc = JSON_SET(doc, '$.added', JSON_OBJECT('k', %s))",
            )
            statement = statements[key % len(statements)]
            args = (key * 100, key) if "%s" in statement else (key,)
            cur.execute(
                f"UPDATE `{schema}`.items SET {statement}, version = version + 1 WHERE id = %s",
                args,
            )
            time.sleep(pause_s)
        cur.execute(f"ALTER TABLE `{schema}`.items ADD COLUMN extra INT")
        cur.execute("SET SESSION binlog_transaction_compression = ON")
        for key in range(0, 60, 3):
            cur.execute(
                f"UPDATE `{schema}`.items SET extra = %s, "
                "doc = JSON_SET(doc, '$.late', TRUE) WHERE id = %s",
                (key, key),
            )
            time.sleep(pause_s)
        cur.execute(f"DELETE FROM `{schema}`.items WHERE MOD(id, 9) = 0")
        cur.execute(f"DELETE FROM `{schema}`.bulk WHERE id > %s", (BULK_ROWS - 500,))


def _source_state(mysql: MysqlEndpoint, schema: str) -> dict[str, dict[str, dict[str, Any]]]:
    conn = connect_admin(mysql)
    state: dict[str, dict[str, dict[str, Any]]] = {}
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute(f"SELECT * FROM `{schema}`.`{table}`")
            names = [d[0] for d in cur.description]
            state[table] = {
                str(row[0]): _normal(dict(zip(names, row, strict=True))) for row in cur.fetchall()
            }
    conn.close()
    return state


def _normal(row: dict[str, Any]) -> dict[str, Any]:
    """Values as comparable text: JSON documents parsed, the rest as strings (NULL as None)."""
    out: dict[str, Any] = {}
    for name, value in row.items():
        if value is None:
            out[name] = None
        elif name == "doc":
            out[name] = json.loads(value)
        else:
            out[name] = str(value)
    return out


def _replayed_state(
    bootstrap: str, topic: str, expected: dict[str, dict[str, dict[str, Any]]], timeout_s: float
) -> dict[str, dict[str, dict[str, Any]]]:
    """Apply the topic's row changes in order, per partition, until the state equals
    ``expected`` or time runs out; the last state is returned either way."""
    state: dict[str, dict[str, dict[str, Any]]] = {table: {} for table in TABLES}
    # A row last changed before ``ALTER TABLE ... ADD COLUMN`` has no such column in its
    # image: a mirror holds NULL there, as the source does.
    columns = {table: {c for row in rows.values() for c in row} for table, rows in expected.items()}
    deadline = time.monotonic() + timeout_s
    for partition, _, _, message in consume(bootstrap, topic):
        if partition >= 0 and not message.get("isDdl") and message.get("table") in state:
            rows = state[message["table"]]
            for row in message["data"]:
                if message["type"] == "DELETE":
                    rows.pop(row["id"], None)
                else:
                    rows[row["id"]] = _normal({**dict.fromkeys(columns[message["table"]]), **row})
        elif partition < 0 and (state == expected or time.monotonic() > deadline):
            return state
    return state


def test_mysql_features_survive_kill_9_and_replay_to_the_source_tables(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    assert mysql.flavor == "mysql"
    _create_tables(mysql, scratch_schema)
    topic, config = keyed_run(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, "e2e-mysql", batch_size=500
    )
    bridge = BridgeProcess(config).start()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            _workload(mysql, scratch_schema, 0.05)
        except BaseException as exc:
            failures.append(exc)

    writer = threading.Thread(target=write)
    try:
        bridge.wait_for_output("reading")  # no position configured: it starts at the end
        writer.start()
        for delay_s in (2.0, 3.0):
            time.sleep(delay_s)
            bridge.signal(signal.SIGKILL)
            bridge.wait(30)
            bridge = BridgeProcess(config).start()
            bridge.wait_for_output("reading")
        writer.join(180)
        assert not writer.is_alive(), "the workload did not finish"
        assert not failures, f"the workload failed: {failures[0]!r}"
        expected = _source_state(mysql, scratch_schema)
        assert len(expected["bulk"]) == BULK_ROWS - 500
        replayed = _replayed_state(kafka_bootstrap, topic, expected, timeout_s=120)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    for table in TABLES:
        missing = expected[table].keys() - replayed[table].keys()
        extra = replayed[table].keys() - expected[table].keys()
        wrong = [
            k
            for k in expected[table].keys() & replayed[table].keys()
            if expected[table][k] != replayed[table][k]
        ]
        examples = [(expected[table][k], replayed[table][k]) for k in wrong[:2]]
        assert not (missing or extra or wrong), (
            f"{table}: {len(missing)} missing (e.g. {sorted(missing)[:3]}), {len(extra)} extra, "
            f"{len(wrong)} differ (e.g. {examples})"
        )
    assert "unknown" not in bridge.output().lower()
