"""One smoke test per real service: each proves the local service works as the product needs."""

from __future__ import annotations

import time
import uuid

import pymysql
import pytest
from confluent_kafka import Consumer, Producer
from kazoo.client import KazooClient
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import master_position


@pytest.mark.both_servers
def test_row_event_read_from_the_binlog(
    mysql: MysqlEndpoint,
    admin_connection: pymysql.connections.Connection,
    scratch_schema: str,  # type: ignore[type-arg]
) -> None:
    end = master_position(admin_connection)
    with admin_connection.cursor() as cur:
        cur.execute(f"CREATE TABLE `{scratch_schema}`.t (id INT PRIMARY KEY, note VARCHAR(20))")
        cur.execute(f"INSERT INTO `{scratch_schema}`.t VALUES (7, 'seven')")
    stream = BinLogStreamReader(
        connection_settings={
            "host": mysql.host,
            "port": mysql.port,
            "user": mysql.user,
            "password": mysql.password,
        },
        server_id=4242,
        log_file=end.journal_name,
        log_pos=end.position,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent],
        only_schemas=[scratch_schema],
    )
    try:
        rows = [row["values"] for event in stream for row in event.rows]
    finally:
        stream.close()
    assert rows == [{"id": 7, "note": "seven"}]


def test_kafka_produce_acks_all_and_consume(kafka_bootstrap: str) -> None:
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "acks": "all", "enable.idempotence": True}
    )
    reports: list[str | None] = []
    producer.produce(
        topic, key=b"k", value=b"hello", on_delivery=lambda err, msg: reports.append(err)
    )
    assert producer.flush(30) == 0
    assert reports == [None]
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            candidate = consumer.poll(1.0)
            if candidate is not None and candidate.error() is None:
                message = candidate
    finally:
        consumer.close()
    assert message is not None, "the produced message was not consumed within 30s"
    assert (message.key(), message.value()) == (b"k", b"hello")


def test_zookeeper_ephemeral_node(zookeeper_hosts: str) -> None:
    path = f"/canal-bridge-smoke/{uuid.uuid4().hex}"
    owner = KazooClient(hosts=zookeeper_hosts, timeout=10)
    observer = KazooClient(hosts=zookeeper_hosts, timeout=10)
    owner.start(timeout=15)
    observer.start(timeout=15)
    try:
        owner.create(path, b"running", ephemeral=True, makepath=True)
        data, stat = observer.get(path)
        assert data == b"running"
        assert stat.ephemeralOwner == owner.client_id[0]
        owner.stop()
        deadline = time.monotonic() + 15
        while observer.exists(path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert observer.exists(path) is None, "ephemeral node outlived its session"
    finally:
        owner.stop()
        observer.stop()
