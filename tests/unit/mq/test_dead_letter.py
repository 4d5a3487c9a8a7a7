"""Dead-lettered records are visible: one log line each (table, sizes, key hash; never values)
and a count of the acked ones in the worker's progress (canal_bridge_dead_letter_records)."""

from __future__ import annotations

import logging

import pytest

from bridge.config import parse_config
from bridge.config.rules import OversizePolicy
from bridge.entry import Entry, EventType, RowData
from bridge.meta import ClientIdentity
from bridge.mq.dead_letter import key_hash
from bridge.mq.exceptions import DeliveryFailed
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.records import Placement, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from bridge.mq.worker import MqWorker, WorkerSettings
from tests.doubles import FakeClock, FakeSender, ScriptedService
from tests.unit.mq.conftest import EntryMaker

SECRET_NOTE = "row-value-that-must-not-be-logged"
BIG_ID = "918273645"


def dead_letter_builder() -> RecordBuilder:
    placement = Placement(
        CanalTopicRouter("orders", ""), CanalPartitionRouter(""), TopicPartitions(1, ""), 2000
    )
    return RecordBuilder(
        FlatMessageEncoder(placement, None, OversizePolicy.parse("dead_letter:dlq"))
    )


def batch(make: EntryMaker) -> list[Entry]:
    big = make.rows(EventType.INSERT, [RowData(after=make.order(BIG_ID, SECRET_NOTE * 100))])
    return [make.begin(), big, make.insert("1"), make.end()]


def test_each_dead_lettered_record_is_logged_once_without_values(
    make: EntryMaker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bridge.mq")
    records = dead_letter_builder().build(batch(make), 7, 1_700_000_000_000)
    assert [r.topic for r in records] == ["dlq", "orders"]
    lines = [r.getMessage() for r in caplog.records if r.name == "bridge.mq.dead_letter"]
    assert len(lines) == 1  # the small row is not dead-lettered
    (line,) = lines
    assert line.startswith("shop.orders INSERT record of ")
    assert "(limit " in line and "for orders[0] sent to dead-letter topic dlq" in line
    assert f"key hash {key_hash(records[0].key)}" in line
    assert "binlog mysql-bin.000003:" in line
    assert SECRET_NOTE not in line and BIG_ID not in line  # neither values nor the key


def test_acked_dead_letter_records_are_counted_once_despite_a_retry(make: EntryMaker) -> None:
    service = ScriptedService([batch(make)])
    failure = DeliveryFailed("_MSG_TIMED_OUT", "orders", "Local: Message timed out")
    sender = FakeSender([failure, None])  # the first send fails: rolled back, sent again
    worker = MqWorker(
        ClientIdentity("example"),
        service,
        dead_letter_builder(),
        sender,
        WorkerSettings(idle_interval_s=0, progress_log_interval_s=1e9, dead_letter_topic="dlq"),
        clock=FakeClock(),
        wait=lambda _: None,
    )
    service.on_drained = worker.stop
    worker.run()
    progress = worker.progress()
    assert len(sender.sent) == 2 and progress.batches_acked == 1
    assert (progress.dead_letter_records, progress.messages_sent) == (1, 2)


def test_worker_settings_take_the_dead_letter_topic_from_mq_oversize() -> None:
    def settings(oversize: str) -> WorkerSettings:
        config = parse_config(
            {
                "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
                "destinations": [
                    {
                        "name": "d",
                        "source": {"address": "127.0.0.1:3306", "username": "u", "slave_id": 9},
                        "mq": {"topic": "orders", "oversize": oversize},
                    }
                ],
            }
        )
        return WorkerSettings.for_destination(config.destinations[0])

    assert settings("dead_letter:too.big").dead_letter_topic == "too.big"
    assert settings("split").dead_letter_topic is None
