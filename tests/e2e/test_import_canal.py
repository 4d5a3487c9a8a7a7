"""``canal-bridge import-canal`` end to end: canal 1.1.8's shipped conf/, pointed at the local
MariaDB and Kafka the way a canal user's conf would be, imported and run; a row written to the
source arrives in the topic as canal's FlatMessage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.canal_conf import canal_conf
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, consume, create_topic
from tests.ops.helpers import free_port

pytestmark = pytest.mark.services


def test_the_imported_shipped_conf_streams_a_row(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> None:
    topic = f"import-canal-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    conf = canal_conf(
        tmp_path,
        server={
            "kafka.bootstrap.servers": kafka_bootstrap,
            "canal.metrics.pull.port": str(free_port()),
        },
        instance={
            "canal.instance.master.address": mysql.address,
            "canal.instance.dbUsername": mysql.user,
            "canal.instance.mysql.slaveId": str(30000 + os.getpid() % 10000),
            "canal.instance.filter.regex": scratch_schema + "\\\\..*",
            "canal.mq.topic": topic,
        },
    )
    config = tmp_path / "destinations.yaml"
    imported = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "import-canal",
            "--conf",
            str(conf),
            "-o",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    source = yaml.safe_load(config.read_text())["destinations"][0]["source"]
    assert source["password"] == "${CANAL_EXAMPLE_PASSWORD}"
    assert not (conf / "example" / "meta.dat").exists()
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{scratch_schema}`.orders (id INT PRIMARY KEY, note TEXT)")
    bridge = BridgeProcess(config, env={"CANAL_EXAMPLE_PASSWORD": mysql.password}).start()
    try:
        bridge.wait_for_output("reading")
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{scratch_schema}`.orders VALUES (7, 'from canal conf')")
        deadline = time.monotonic() + 60
        for partition, _, _, message in consume(kafka_bootstrap, topic):
            assert time.monotonic() < deadline, f"no row in {topic}: {bridge.output()}"
            if partition >= 0 and message.get("type") == "INSERT":
                break
        assert (message["database"], message["table"]) == (scratch_schema, "orders")
        assert message["data"] == [{"id": "7", "note": "from canal conf"}]
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
        conn.close()
    # The cursor went where canal keeps its own: conf/<destination>/meta.dat.
    assert (conf / "example" / "meta.dat").is_file()
