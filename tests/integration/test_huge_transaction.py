"""A 1,000,000-row single transaction streams through with memory bounded by the store."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from bridge.config import DestinationConfig
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import Connection, execute, master_position

ROWS = 1_000_000
PEAK_RSS_LIMIT_MB = 300


def test_million_row_transaction_streams_with_bounded_memory(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    execute(
        admin_connection,
        f"CREATE TABLE `{scratch_schema}`.big (id INT PRIMARY KEY, note VARCHAR(32), n BIGINT)",
    )
    start = master_position(admin_connection)
    settings = {
        "name": "huge",
        "source": {
            "address": mysql.address,
            "username": mysql.user,
            "password": mysql.password,
            "slave_id": 7001,
        },
        "start": {"journal_name": start.journal_name, "position": start.position},
        "filter": {"regex": scratch_schema + r"\..*"},
        "batch_size": 64,
        "transaction_size": 128,
        "store": {"buffer_size": 256},
        "mq": {"topic": "unused"},
        "snapshot": {"mode": "never"},  # the transaction streamed from start, nothing else
    }
    DestinationConfig.model_validate(settings)  # fail here, not in the child, if invalid
    # Written while the consumer already runs, so the whole transaction passes the small store.
    writer = threading.Timer(
        1.0,
        execute,
        (
            admin_connection,
            f"INSERT INTO `{scratch_schema}`.big "
            f"SELECT seq, CONCAT('row-', seq), seq * 3 FROM `{scratch_schema}`.seq_1_to_{ROWS}",
        ),
    )
    writer.start()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.huge_transaction_consumer",
            json.dumps(settings),
            str(ROWS),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    writer.join()
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"1M-row transaction: {figures}")
    assert figures["rows"] == ROWS
    assert figures["max_batch"] <= 64
    assert figures["peak_rss_mb"] < PEAK_RSS_LIMIT_MB, figures
