"""``canal-bridge run`` with ``mq.flat_message: false``: the topic holds canal's protobuf
Messages, decoded here with the generated classes back to the source's rows."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from bridge.mq.canal_protocol import canal_packet_pb2 as packets
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.routing import CanalPartitionRouter
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, write_config

pytestmark = pytest.mark.services

PARTITIONS = 3
HASH = r".*\..*:$pk$"
# The workload's row changes, in source order.
EXPECTED = [
    ("INSERT", {"id": "1", "note": "one", "n": "10"}),
    ("INSERT", {"id": "2", "note": None, "n": "20"}),
    ("INSERT", {"id": "3", "note": "c", "n": "30"}),
    ("UPDATE", {"id": "1", "note": "uno", "n": "10"}),
    ("DELETE", {"id": "2", "note": None, "n": "20"}),
    ("DELETE", {"id": "3", "note": "c", "n": "30"}),
]


def _entries(
    bootstrap: str, topic: str, want_rows: int, want_ddl: int, timeout_s: float
) -> list[tuple[int, pb.Entry]]:
    """(partition, Entry) of every record's Messages until ``want_rows`` row changes and
    ``want_ddl`` DDL entries were seen or time runs out. Both counts matter: with hashed
    partitions the DDL sits on partition 0 while the rows may all sit on others, so the
    rows alone can be complete before the consumer has fetched partition 0."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}"})
    metadata = consumer.list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
    got: list[tuple[int, pb.Entry]] = []
    rows = ddl = 0
    deadline = time.monotonic() + timeout_s
    try:
        while (rows < want_rows or ddl < want_ddl) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            packet = packets.Packet.FromString(message.value())
            assert packet.type == packets.MESSAGES
            for data in packets.Messages.FromString(packet.body).messages:
                entry = pb.Entry.FromString(data)
                got.append((message.partition(), entry))
                if entry.entryType == pb.ROWDATA:
                    change = pb.RowChange.FromString(entry.storeValue)
                    ddl += change.isDdl
                    rows += len(change.rowDatas)
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("hashed", [False, True], ids=["one-partition", "pk-hash"])
def test_protobuf_messages_carry_the_source_rows(
    tmp_path: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str, hashed: bool
) -> None:
    topic = f"pb-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, PARTITIONS if hashed else 1)
    routing = {"partitions": PARTITIONS, "partition_hash": HASH} if hashed else {}
    config = write_config(
        tmp_path / "destinations.yaml",
        mysql,
        kafka_bootstrap,
        scratch_schema,
        topic,
        flat_message=False,
        **routing,
    )
    conn = connect_admin(mysql)
    bridge = BridgeProcess(config).start()
    table = f"`{scratch_schema}`.t"
    try:
        bridge.wait_for_output("reading")
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(20), n INT)")
            cur.execute(f"INSERT INTO {table} VALUES (1, 'one', 10), (2, NULL, 20), (3, 'c', 30)")
            cur.execute(f"UPDATE {table} SET note = 'uno' WHERE id = 1")
            cur.execute(f"DELETE FROM {table} WHERE id IN (2, 3)")
        got = _entries(kafka_bootstrap, topic, want_rows=len(EXPECTED), want_ddl=1, timeout_s=60)
        bridge.signal(signal.SIGTERM)
        assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
        conn.close()
    kinds = {pb.EntryType.Name(e.entryType) for _, e in got}
    # canal sends transaction markers only when nothing routes entries one by one.
    assert ("TRANSACTIONBEGIN" in kinds and "TRANSACTIONEND" in kinds) is not hashed
    changes = [
        (p, e, pb.RowChange.FromString(e.storeValue)) for p, e in got if e.entryType == pb.ROWDATA
    ]
    ddl = [c for _, _, c in changes if c.isDdl]
    assert [pb.EventType.Name(c.eventType) for c in ddl] == ["CREATE"]
    assert all(p == 0 for p, _, c in changes if c.isDdl)
    rows = []
    router = CanalPartitionRouter(HASH)
    for partition, entry, change in changes:
        if change.isDdl:
            continue
        assert entry.header.schemaName == scratch_schema and entry.header.tableName == "t"
        for row in change.rowDatas:
            image = row.beforeColumns if change.eventType == pb.DELETE else row.afterColumns
            values = {c.name: (None if c.isNull else c.value) for c in image}
            rows.append((pb.EventType.Name(change.eventType), values, row))
            if hashed:  # one entry per row, on canal's partition for its key
                assert len(change.rowDatas) == 1
                expected = router.partition_for(scratch_schema, "t", values, ["id"], PARTITIONS)
                assert partition == expected
    got_rows = [(kind, values) for kind, values, _ in rows]
    if hashed:  # per-key order holds; keys on different partitions interleave freely
        for key in ("1", "2", "3"):
            assert [r for r in got_rows if r[1]["id"] == key] == [
                r for r in EXPECTED if r[1]["id"] == key
            ]
    assert sorted(map(repr, got_rows)) == sorted(map(repr, EXPECTED))
    if not hashed:
        assert got_rows == EXPECTED
    update = next(row for kind, _, row in rows if kind == "UPDATE")
    assert [c.value for c in update.beforeColumns] == ["1", "one", "10"]
    assert [(c.name, c.updated, c.isKey) for c in update.afterColumns] == [
        ("id", False, True),
        ("note", True, False),
        ("n", False, False),
    ]
    assert [c.mysqlType for c in update.afterColumns] == ["int(11)", "varchar(20)", "int(11)"]
    assert [c.sqlType for c in update.afterColumns] == [4, 12, 4]
