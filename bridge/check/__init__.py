"""``canal-bridge check``: is every source and the Kafka cluster ready for this configuration?

Each source is connected to once and judged by the same checks ``preflight`` refuses a source
on (``bridge.parse.source.REQUIRED_CHECKS``: binary log, ROW format, FULL row image, server id,
privileges), plus advisory ones a run does not refuse: row metadata, binlog compression,
partial JSON (MySQL), binlog retention, GTIDs against ``start.gtid``, the account's
authentication plugin and the time zone TIMESTAMP values are rendered in. Kafka is asked
(``TopicInspector``) whether it answers, whether each topic a destination writes to exists with
the partition count the configuration routes by, and whether the topic accepts records as large
as the producer may send. For destinations in exactly-once delivery it also reads the brokers'
protocol version and ``transaction.state.log.*`` settings, initialises transactions with a
probe ``transactional.id`` (never the destination's own, which would fence the running bridge)
and looks at the offsets topic (see the exactly-once section below).

Every result is one table row: PASS, WARN (works, but risky), FAIL (a run would fail or
misroute) or SKIP (cannot be checked ahead), with the fix in the detail. Any FAIL makes the
exit code 1. Details carry names and numbers only: never a password or a SASL secret.
"""

from bridge.check.base import CheckResult, Outcome
from bridge.check.exactly_once import (
    BrokerSettings,
    check_exactly_once,
    judge_broker_version,
    judge_offsets_topic,
    judge_transaction_log,
    judge_transactions,
    probe_id,
    probe_transactions,
)
from bridge.check.kafka import check_kafka
from bridge.check.report import print_check, render, run_checks
from bridge.check.source import check_source
from bridge.check.topics import TopicUse, topic_uses

__all__ = [
    "BrokerSettings",
    "CheckResult",
    "Outcome",
    "TopicUse",
    "check_exactly_once",
    "check_kafka",
    "check_source",
    "judge_broker_version",
    "judge_offsets_topic",
    "judge_transaction_log",
    "judge_transactions",
    "print_check",
    "probe_id",
    "probe_transactions",
    "render",
    "run_checks",
    "topic_uses",
]
