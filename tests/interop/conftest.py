"""Fixtures of the interop tests: the consumers' jar, and topics that ``canal-bridge run`` wrote
from the source workload (tests/interop/source.py), one run per set of ``mq`` settings, shared
by the tests of a module."""

from __future__ import annotations

import hashlib
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end, write_config
from tests.interop import consumers
from tests.interop.source import Change, create_table, run_workload


@pytest.fixture(scope="session")
def consumers_jar() -> Path:
    return consumers.build()


@dataclass(frozen=True)
class Streamed:
    """A topic the bridge wrote the workload to, and the source's view of that workload."""

    topic: str
    schema: str
    changes: list[Change]
    bridge: BridgeProcess


Stream = Callable[..., Streamed]


@pytest.fixture(scope="module")
def stream(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
) -> Iterator[Stream]:
    """``stream(**mq)``: the workload streamed by a bridge with these ``mq`` settings into a
    new one-partition topic (so the topic's order is the commit order). The same settings
    asked twice give the same run. JSON topics are waited for until every row change and the
    DDL are in; a protobuf topic is not (the consumer waits for the rows itself)."""
    runs: dict[str, Streamed] = {}
    schemas: list[str] = []

    def streamed(**mq: Any) -> Streamed:
        settings = repr(sorted(mq.items()))
        if settings in runs:
            return runs[settings]
        digest = hashlib.sha1(f"{request.node.nodeid}{settings}".encode()).hexdigest()[:6]
        schema = f"t_interop_{digest}_{uuid.uuid4().hex[:6]}"
        schemas.append(schema)
        conn = connect_admin(mysql)
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{schema}` CHARACTER SET utf8mb4")
        conn.close()
        create_table(mysql, schema)
        topic = f"interop-{uuid.uuid4().hex[:8]}"
        create_topic(kafka_bootstrap, topic, 1)
        ddl = str(mq.get("ddl", ""))
        if ddl.startswith("topic:"):
            create_topic(kafka_bootstrap, ddl.removeprefix("topic:"), 1)
        folder = tmp_path_factory.mktemp("interop")
        config = write_config(
            folder / "destinations.yaml", mysql, kafka_bootstrap, schema, topic, **mq
        )
        bridge = BridgeProcess(config).start()
        bridge.wait_for_output("reading")  # the start position is taken before the workload
        changes = run_workload(mysql, schema)
        if mq.get("flat_message", True):
            wait_for_rows(kafka_bootstrap, topic, len(changes), bridge)
        runs[settings] = Streamed(topic, schema, changes, bridge)
        return runs[settings]

    yield streamed
    for run in runs.values():
        run.bridge.signal(signal.SIGTERM)
        try:
            run.bridge.wait(30)
        finally:
            run.bridge.kill()
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        for schema in schemas:
            cur.execute(f"DROP DATABASE IF EXISTS `{schema}`")
    conn.close()


def wait_for_rows(bootstrap: str, topic: str, rows: int, bridge: BridgeProcess) -> None:
    deadline = time.monotonic() + 120
    while True:
        messages = [m for _, _, _, m in read_to_end(bootstrap, topic)]
        written = sum(len(m.get("data") or ()) for m in messages if not m.get("isDdl"))
        if written >= rows:
            return
        assert bridge.process is not None and bridge.process.poll() is None, bridge.output()
        assert time.monotonic() < deadline, f"{written} of {rows} row changes in {topic}"
        time.sleep(0.5)
