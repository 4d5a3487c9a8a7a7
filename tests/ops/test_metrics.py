"""Metrics and probes of a real ``canal-bridge run`` child process, scraped over HTTP."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pymysql
import yaml

from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import BridgeProcess, create_topic, write_config
from tests.ops.helpers import free_port, get, metric, scrape, set_admin, wait_until

ROWS_PER_TXN = 5
TXNS = 6


def _cursor(samples: dict, name: str) -> tuple[float, float]:  # type: ignore[type-arg]
    index = metric(samples, "canal_bridge_cursor_file_index", destination=name)
    offset = metric(samples, "canal_bridge_cursor_offset", destination=name)
    assert index is not None and offset is not None, "no cursor gauges"
    return index, offset


def test_metric_values_move_as_rows_flow(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    admin_connection: pymysql.connections.Connection,  # type: ignore[type-arg]
    scratch_schema: str,
) -> None:
    topic = f"ops-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    with admin_connection.cursor() as cur:
        cur.execute(f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, note VARCHAR(40))")
    config = write_config(
        tmp_path / "destinations.yaml", mysql, kafka_bootstrap, scratch_schema, topic
    )
    port = free_port()
    set_admin(config, f"127.0.0.1:{port}")
    name = yaml.safe_load(config.read_text())["destinations"][0]["name"]
    base = f"http://127.0.0.1:{port}"

    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading")
        wait_until(lambda: get(f"{base}/readyz")[0] == 200, 30, "/readyz 200")
        before = scrape(base)
        with admin_connection.cursor() as cur:
            for txn in range(TXNS):
                cur.execute("BEGIN")
                for row in range(ROWS_PER_TXN):
                    key = txn * ROWS_PER_TXN + row
                    cur.execute(f"INSERT INTO `{scratch_schema}`.t VALUES (%s, 'n')", (key,))
                cur.execute("COMMIT")
        rows = ROWS_PER_TXN * TXNS
        wait_until(
            lambda: (
                (metric(scrape(base), "canal_bridge_rows_total", destination=name) or 0) >= rows
            ),
            60,
            f"{rows} rows counted",
        )
        after = scrape(base)

        def delta(sample: str) -> float:
            return (metric(after, sample, destination=name) or 0) - (
                metric(before, sample, destination=name) or 0
            )

        assert delta("canal_bridge_rows_total") == rows
        assert delta("canal_bridge_messages_total") >= TXNS  # one FlatMessage per rows event
        assert delta("canal_bridge_bytes_total") > 100 * TXNS
        assert delta("canal_bridge_batches_acked_total") >= 1
        assert metric(after, "canal_bridge_batches_rolled_back_total", destination=name) == 0
        assert metric(after, "canal_bridge_delivery_errors_total", destination=name) == 0
        assert _cursor(after, name) > _cursor(before, name)
        assert metric(after, "canal_bridge_store_capacity_items", destination=name) == 16384
        assert metric(after, "canal_bridge_ha_active", destination=name) == 1
        running = metric(after, "canal_bridge_destination_state", destination=name, state="running")
        assert running == 1

        # Idle afterwards: heartbeats (every 1 s here) keep the lag near 0 instead of growing.
        time.sleep(4)
        lag = metric(scrape(base), "canal_bridge_lag_seconds", destination=name)
        assert lag is not None and lag < 3, lag
        assert get(f"{base}/healthz") == (200, f"ok\n{name} ok\n")
        assert get(f"{base}/readyz") == (200, f"ok\n{name} ready\n")
        assert get(f"{base}/nothing")[0] == 404

        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    assert "health and metrics on http://127.0.0.1" in bridge.output()
