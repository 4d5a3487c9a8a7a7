"""The Kafka checks of ``canal-bridge check``: the cluster answers, each topic a destination
writes to exists with the partitions it routes by and takes records as large as it sends."""

from __future__ import annotations

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from bridge.check.base import CheckResult
from bridge.check.exactly_once import check_exactly_once
from bridge.check.topics import TopicUse, topic_uses
from bridge.config import BridgeConfig, KafkaConfig
from bridge.mq.exceptions import BrokersRefused, MqError
from bridge.mq.producer import TopicInspector


def check_kafka(config: BridgeConfig, timeout_s: float = 10.0) -> list[CheckResult]:
    kafka = config.kafka
    try:
        inspector = TopicInspector(kafka, timeout_s)
        first = config.destinations[0].mq.topic
        inspector.partitions_of(first)
    except BrokersRefused as exc:
        return [CheckResult("kafka", "connection", "FAIL", f"{kafka.bootstrap_servers}: {exc}")]
    except MqError as exc:
        return [
            CheckResult(
                "kafka",
                "connection",
                "FAIL",
                f"{kafka.bootstrap_servers}: {exc}; check kafka.bootstrap_servers, the "
                "security settings and that the brokers are running",
            )
        ]
    results = [CheckResult("kafka", "connection", "PASS", kafka.bootstrap_servers)]
    for destination in config.destinations:
        uses, unknown = topic_uses(destination)
        for use in uses:
            results += _check_topic(inspector, kafka, use)
        for rule in unknown:
            results.append(
                CheckResult(
                    destination.name,
                    "dynamic topics",
                    "SKIP",
                    f"topics of {rule!r} are named after the tables it matches: not checked",
                )
            )
    results += check_exactly_once(config, timeout_s)
    return results


def _check_topic(inspector: TopicInspector, kafka: KafkaConfig, use: TopicUse) -> list[CheckResult]:
    scope, topic = use.destination, use.topic
    try:
        actual = inspector.partitions_of(topic)
    except MqError as exc:
        return [CheckResult(scope, f"topic {topic}", "FAIL", str(exc))]
    if actual is None:
        wanted = use.partitions or 1
        return [
            CheckResult(
                scope,
                f"topic {topic}",
                "FAIL",
                f"topic {topic} ({use.why}) does not exist: create it, e.g. kafka-topics.sh "
                f"--create --topic {topic} --partitions {wanted}",
            )
        ]
    results = []
    if use.partitions is not None and actual != use.partitions:
        results.append(
            CheckResult(
                scope,
                f"topic {topic}",
                "FAIL",
                f"topic {topic} has {actual} partitions but the configuration routes by "
                f"{use.partitions} (mq.partitions / mq.dynamic_topic_partitions): set it to "
                f"{actual}, or add partitions with kafka-topics.sh --alter --topic {topic} "
                f"--partitions {use.partitions} (only ever up; keys move to other partitions)",
            )
        )
    else:
        results.append(CheckResult(scope, f"topic {topic}", "PASS", f"{actual} partitions"))
    results.append(_check_size(inspector, kafka, use))
    return results


def _check_size(inspector: TopicInspector, kafka: KafkaConfig, use: TopicUse) -> CheckResult:
    scope, topic, limit = use.destination, use.topic, kafka.max_message_bytes
    try:
        accepted = inspector.max_message_bytes_of(topic)
    except MqError as exc:
        return CheckResult(scope, f"size {topic}", "FAIL", str(exc))
    if accepted < limit:
        return CheckResult(
            scope,
            f"size {topic}",
            "FAIL",
            f"topic {topic} accepts records up to {accepted} bytes (max.message.bytes) but the "
            f"producer may send {limit} (kafka.producer.message.max.bytes): set "
            f"kafka.producer.message.max.bytes to at most {accepted} so that mq.oversize "
            "applies, or raise the topic's max.message.bytes",
        )
    return CheckResult(
        scope, f"size {topic}", "PASS", f"topic max.message.bytes {accepted} >= producer {limit}"
    )
