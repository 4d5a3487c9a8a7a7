"""The Kafka broker dies mid-run: the bridge waits without spinning, loses nothing, resumes."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import (
    BridgeProcess,
    consume,
    cpu_seconds,
    create_topic,
    write_config,
)
from tests.integration.kafka_broker import ThrowawayKafka


def insert_rows(mysql: MysqlEndpoint, schema: str, first: int, count: int) -> None:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        for i in range(first, first + count):
            cur.execute(f"INSERT INTO `{schema}`.t VALUES (%s, %s)", (i, f"row {i}"))
    conn.close()


def test_broker_outage_loses_nothing_and_waits_quietly(
    tmp_path: Path, mysql: MysqlEndpoint, scratch_schema: str
) -> None:
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, note VARCHAR(20))")
    conn.close()
    with ThrowawayKafka(tmp_path / "kafka") as broker:
        topic = f"outage-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap, topic, 1)
        config = write_config(
            tmp_path / "destinations.yaml",
            mysql,
            broker.bootstrap,
            scratch_schema,
            topic,
            producer={"message.timeout.ms": 2000},  # fail fast: rollback and backoff
        )
        bridge = BridgeProcess(config).start()
        try:
            bridge.wait_for_output("reading")
            insert_rows(mysql, scratch_schema, 0, 50)
            deadline = time.monotonic() + 30
            while "50 rows" not in bridge.output() and time.monotonic() < deadline:
                time.sleep(0.5)  # the worker logs its totals every few seconds
            broker.stop(kill=True)
            insert_rows(mysql, scratch_schema, 50, 50)  # written while Kafka is down
            assert bridge.process is not None
            cpu_before, wall_before = cpu_seconds(bridge.process.pid), time.monotonic()
            time.sleep(10)
            cpu = cpu_seconds(bridge.process.pid) - cpu_before
            wall = time.monotonic() - wall_before
            print(f"\nbridge CPU while Kafka was down: {cpu:.2f} s over {wall:.1f} s")
            assert cpu / wall < 0.2, f"{cpu:.2f} s CPU in {wall:.1f} s: busy while waiting"
            assert "rolled back" in bridge.output()
            broker.start()
            ids: set[str] = set()
            deadline = time.monotonic() + 120
            for partition, _, _, message in consume(broker.bootstrap, topic):
                if partition >= 0 and not message.get("isDdl"):
                    ids.update(row["id"] for row in message["data"])
                if len(ids) >= 100 or time.monotonic() > deadline:
                    break
            bridge.signal(signal.SIGTERM)
            assert bridge.wait(60) == 0, bridge.output()
        finally:
            bridge.kill()
    assert ids == {str(i) for i in range(100)}
