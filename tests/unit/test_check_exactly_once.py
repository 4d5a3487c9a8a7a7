"""The exactly-once rows of ``canal-bridge check`` judged on made-up answers: what a broker
version, transaction-log settings, a probe error or an offsets topic's policy make of a row,
and that every setting a fix names exists. The real broker's answers: tests/ops."""

from __future__ import annotations

import re
from typing import Any

import pytest
from confluent_kafka import KafkaError

from bridge.check import (
    BrokerSettings,
    CheckResult,
    judge_broker_version,
    judge_offsets_topic,
    judge_transaction_log,
    judge_transactions,
)
from bridge.config import DestinationConfig, MqConfig


def destination(**mq: Any) -> DestinationConfig:
    return DestinationConfig.model_validate(
        {
            "name": "orders",
            "source": {"address": "db:3306", "username": "canal", "slave_id": 9},
            "mq": {"topic": "shop", "delivery": "exactly_once", **mq},
        }
    )


def assert_fix_names_real_keys(result: CheckResult) -> None:
    """One line, and every ``mq.x`` the detail names is a key of the mq config."""
    assert "\n" not in result.detail
    for key in re.findall(r"\bmq\.([a-z_]+)", result.detail):
        assert key in MqConfig.model_fields, (key, result.detail)


def settings(
    brokers: int = 1,
    version: str | None = "3.9-IV0",
    factor: int | None = 1,
    min_isr: int | None = 1,
) -> BrokerSettings:
    return BrokerSettings(brokers, version, factor, min_isr)


@pytest.mark.parametrize(
    ("version", "outcome"),
    [
        ("3.9-IV0", "PASS"),
        ("2.5-IV0", "PASS"),
        ("10.0", "PASS"),
        ("2.4-IV1", "FAIL"),
        ("0.11.0", "FAIL"),
        (None, "PASS"),
        ("latest", "WARN"),
    ],
)
def test_broker_version(version: str | None, outcome: str) -> None:
    result = judge_broker_version(settings(version=version))
    assert (result.scope, result.check, result.outcome) == ("kafka", "broker version", outcome)
    assert_fix_names_real_keys(result)
    if outcome == "FAIL":
        assert result.detail == (
            f"inter.broker.protocol.version={version}: mq.delivery exactly_once needs Kafka >= "
            "2.5; upgrade the brokers and raise inter.broker.protocol.version to 2.5 or later, "
            "or set mq.delivery to at_least_once"
        )


def test_a_replication_factor_above_the_broker_count_fails_with_the_single_broker_fix() -> None:
    result = judge_transaction_log(settings(brokers=1, factor=3, min_isr=2))
    assert result.outcome == "FAIL"
    assert result.detail == (
        "transaction.state.log.replication.factor=3, transaction.state.log.min.isr=2 but the "
        "cluster has 1 broker(s): the transaction log (__transaction_state) cannot be created "
        "and every transaction hangs; set transaction.state.log.replication.factor=1 and "
        "transaction.state.log.min.isr=1 in the broker's server.properties on a single-broker "
        "dev setup (or add brokers) and restart it"
    )
    assert judge_transaction_log(settings(brokers=3, factor=3, min_isr=2)).outcome == "PASS"


def test_a_min_isr_above_the_replication_factor_fails() -> None:
    result = judge_transaction_log(settings(brokers=3, factor=2, min_isr=3))
    assert result.outcome == "FAIL"
    assert "set transaction.state.log.min.isr to at most 2" in result.detail


def test_unreported_transaction_log_settings_are_skipped() -> None:
    assert judge_transaction_log(settings(factor=None, min_isr=None)).outcome == "SKIP"


def test_an_unauthorized_transactional_id_names_every_acl_to_grant() -> None:
    error = KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    result = judge_transactions(destination(ddl="topic:shop_ddl"), error, 10)
    assert (result.scope, result.check, result.outcome) == ("orders", "transactions", "FAIL")
    assert result.detail == (
        "not authorized to use the transactional.id canal-bridge-check-orders: grant WRITE and "
        "DESCRIBE on TransactionalId canal-bridge-orders and canal-bridge-check-orders (or one "
        "PREFIXED ACL on canal-bridge-), WRITE on the topics shop, shop_ddl, and WRITE and READ "
        "on the offsets topic canal-bridge-offsets"
    )


def test_a_probe_that_times_out_points_at_the_transaction_coordinator() -> None:
    result = judge_transactions(destination(), KafkaError(KafkaError._TIMED_OUT), 10)
    assert result.outcome == "FAIL"
    assert "no answer within 10 s (_TIMED_OUT)" in result.detail
    assert "transaction log row" in result.detail


def test_other_probe_errors_fail_with_the_error_and_the_way_out() -> None:
    error = KafkaError(KafkaError.UNSUPPORTED_VERSION, "no InitProducerId")
    result = judge_transactions(destination(), error, 10)
    assert result.outcome == "FAIL"
    assert "UNSUPPORTED_VERSION: no InitProducerId" in result.detail
    assert "set mq.delivery to at_least_once" in result.detail
    assert_fix_names_real_keys(result)
    assert judge_transactions(destination(), None, 10).outcome == "PASS"


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [(None, "PASS"), ("compact", "PASS"), ("compact,delete", "PASS"), ("delete", "FAIL")],
)
def test_offsets_topic_policy(policy: str | None, outcome: str) -> None:
    result = judge_offsets_topic(destination(offsets_topic="eo-offsets"), policy)
    assert (result.check, result.outcome) == ("offsets topic eo-offsets", outcome)
    assert_fix_names_real_keys(result)
    if policy is None:
        assert "creates it compacted (1 partition) on start" in result.detail
    if outcome == "FAIL":
        assert "cleanup.policy=delete, so retention would delete committed cursors" in (
            result.detail
        )
        assert "or name another topic in mq.offsets_topic" in result.detail
