"""Exactly-once delivery end to end: the bridge killed -9 twenty times at random moments while
a mixed load runs; a read_committed consumer then sees every change exactly once, in order.
The same run in at-least-once delivery shows the duplicates the kills cause (the test can
fail)."""

from __future__ import annotations

import random
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import (
    BridgeProcess,
    read_to_end,
    wait_for_final_state,
)
from tests.e2e.workload import (
    assert_complete_and_ordered,
    create_tables,
    keyed_run,
    workload,
)

pytestmark = [pytest.mark.services, pytest.mark.timeout(600)]

KILLS = 20
KEYS, ROUNDS = 30, 30


@pytest.mark.parametrize("delivery", ["exactly_once", "at_least_once"])
def test_twenty_kill_9_during_a_mixed_load(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    delivery: str,
) -> None:
    create_tables(mysql, scratch_schema)
    offsets = f"eo-offsets-{uuid.uuid4().hex[:8]}"
    topic, config = keyed_run(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        "eo",
        delivery=delivery,
        offsets_topic=offsets,
        batch_size=20,
    )
    rng = random.Random(20261125)
    final: dict[tuple[str, str], int] = {}
    writer = threading.Thread(
        target=lambda: final.update(
            workload(mysql, scratch_schema, keys=KEYS, rounds=ROUNDS, pause_s=0.05)
        )
    )
    bridge = BridgeProcess(config).start()
    kills_during_load = 0
    try:
        bridge.wait_for_output("reading")
        writer.start()
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.2, 1.2))
            kills_during_load += writer.is_alive()
            bridge.signal(signal.SIGKILL)
            bridge.wait(30)
            bridge = BridgeProcess(config).start()
            bridge.wait_for_output("reading")
        writer.join(300)
        wait_for_final_state(kafka_bootstrap, topic, final)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    assert kills_during_load >= KILLS // 2, "the load ended before most kills"
    records: list[tuple[int, int, bytes | None, dict[str, Any]]] = read_to_end(
        kafka_bootstrap, topic
    )
    duplicates = assert_complete_and_ordered(records, KEYS, ROUNDS, scratch_schema)
    print(f"{delivery}: {len(records)} records, {duplicates} duplicate row changes")
    if delivery == "exactly_once":
        assert duplicates == 0, _where_repeated(records)
    else:
        assert duplicates > 0, "at-least-once delivery through 20 kill -9 sent nothing twice"


def _where_repeated(records: list[tuple[int, int, bytes | None, dict[str, Any]]]) -> str:
    """The row changes that arrived more than once, with the records carrying them."""
    seen: dict[tuple[str, str, str, str], list[tuple[int, int, int]]] = {}
    for partition, offset, _, message in records:
        for row in message.get("data") or ():
            change = (message["table"], row["id"], message["type"], row["version"])
            seen.setdefault(change, []).append((partition, offset, message["id"]))
    return "repeated: " + str({c: w for c, w in seen.items() if len(w) > 1})
