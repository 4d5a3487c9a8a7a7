"""The exactly-once checks of ``canal-bridge check``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from bridge.check.base import CheckResult
from bridge.check.topics import topic_uses
from bridge.config import BridgeConfig, DestinationConfig, KafkaConfig
from bridge.mq.exceptions import MqError
from bridge.mq.producer import LibrdkafkaLog, connection_settings, masked
from bridge.mq.transactional import transactional_id

#
# Reading the cluster (``_Cluster``, ``probe_transactions``) is kept apart from judging what was
# read (the ``judge_*`` functions), which are pure and tested with made-up answers.

# Kafka transactions exist since 0.11; we require 2.5 (the transaction protocol fixes since).
MIN_BROKER_VERSION = (2, 5)
# How long the probe may wait for the transaction coordinator (it hangs when the transaction
# log cannot be created: a replication factor above the broker count).
PROBE_TIMEOUT_S = 10.0
_VERSION = re.compile(r"^(\d+)\.(\d+)")


def probe_id(destination: str) -> str:
    """The transactional.id ``check`` initialises: not the destination's own, which would
    fence (stop) the bridge running it."""
    return f"canal-bridge-check-{destination}"


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """What the brokers say about transactions; a setting is None when no broker reports it.
    Where brokers differ, the highest value (the one that hangs first) is kept."""

    brokers: int
    protocol_version: str | None
    replication_factor: int | None
    min_isr: int | None


def judge_broker_version(settings: BrokerSettings) -> CheckResult:
    found = settings.protocol_version
    wanted = ".".join(map(str, MIN_BROKER_VERSION))
    if found is None:
        # Every broker from 0.10 to 3.9 reports it; Kafka 4.0 removed it (KRaft only).
        return CheckResult(
            "kafka",
            "broker version",
            "PASS",
            "the brokers report no inter.broker.protocol.version: Kafka >= 4.0, transactions "
            "are probed per destination",
        )
    match = _VERSION.match(found)
    if match is None:
        return CheckResult(
            "kafka",
            "broker version",
            "WARN",
            f"inter.broker.protocol.version {found!r} is not a version: transactions are probed "
            "per destination",
        )
    if (int(match[1]), int(match[2])) < MIN_BROKER_VERSION:
        return CheckResult(
            "kafka",
            "broker version",
            "FAIL",
            f"inter.broker.protocol.version={found}: mq.delivery exactly_once needs Kafka >= "
            f"{wanted}; upgrade the brokers and raise inter.broker.protocol.version to {wanted} "
            "or later, or set mq.delivery to at_least_once",
        )
    return CheckResult(
        "kafka", "broker version", "PASS", f"inter.broker.protocol.version {found} >= {wanted}"
    )


def judge_transaction_log(settings: BrokerSettings) -> CheckResult:
    brokers, factor, min_isr = settings.brokers, settings.replication_factor, settings.min_isr
    if factor is None or min_isr is None:
        return CheckResult(
            "kafka",
            "transaction log",
            "SKIP",
            "the brokers report no transaction.state.log.replication.factor / min.isr: not "
            "checked, transactions are probed per destination",
        )
    found = (
        f"transaction.state.log.replication.factor={factor}, "
        f"transaction.state.log.min.isr={min_isr}"
    )
    single = (
        "set transaction.state.log.replication.factor=1 and transaction.state.log.min.isr=1 in "
        "the broker's server.properties on a single-broker dev setup (or add brokers) and "
        "restart it"
    )
    if factor > brokers:
        return CheckResult(
            "kafka",
            "transaction log",
            "FAIL",
            f"{found} but the cluster has {brokers} broker(s): the transaction log "
            f"(__transaction_state) cannot be created and every transaction hangs; {single}",
        )
    if min_isr > factor:
        return CheckResult(
            "kafka",
            "transaction log",
            "FAIL",
            f"{found}: fewer replicas than the minimum in sync, so no transaction can commit; "
            f"set transaction.state.log.min.isr to at most {factor}",
        )
    return CheckResult("kafka", "transaction log", "PASS", f"{found}, {brokers} broker(s)")


def judge_transactions(
    destination: DestinationConfig, error: KafkaError | None, timeout_s: float
) -> CheckResult:
    """The probe's outcome: ``error`` is what initialising transactions raised, None if it
    worked."""
    name, probe = destination.name, probe_id(destination.name)
    if error is None:
        return CheckResult(
            name,
            "transactions",
            "PASS",
            f"transactions initialised and aborted with the probe id {probe}",
        )
    if error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        topics = ", ".join(use.topic for use in topic_uses(destination)[0])
        real = transactional_id(name)
        return CheckResult(
            name,
            "transactions",
            "FAIL",
            f"not authorized to use the transactional.id {probe}: grant WRITE and DESCRIBE on "
            f"TransactionalId {real} and {probe} (or one PREFIXED ACL on canal-bridge-), WRITE "
            f"on the topics {topics}, and WRITE and READ on the offsets topic "
            f"{destination.mq.offsets_topic}",
        )
    if error.code() in (KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE):
        return CheckResult(
            name,
            "transactions",
            "FAIL",
            f"initialising transactions got no answer within {timeout_s:.0f} s "
            f"({error.name()}): the transaction coordinator is not available; see the kafka "
            "transaction log row, and the broker's log for __transaction_state",
        )
    return CheckResult(
        name,
        "transactions",
        "FAIL",
        f"initialising transactions failed ({error.name()}: {error.str()}): exactly-once "
        "needs Kafka >= 2.5 with transactions enabled, or set mq.delivery to at_least_once",
    )


def judge_offsets_topic(destination: DestinationConfig, policy: str | None) -> CheckResult:
    """``policy``: the offsets topic's cleanup.policy, None when the topic does not exist."""
    name, topic = destination.name, destination.mq.offsets_topic
    if policy is None:
        return CheckResult(
            name,
            f"offsets topic {topic}",
            "PASS",
            "does not exist yet: the bridge creates it compacted (1 partition) on start, which "
            "needs CREATE on the topic",
        )
    if "compact" in policy:
        return CheckResult(name, f"offsets topic {topic}", "PASS", f"cleanup.policy={policy}")
    return CheckResult(
        name,
        f"offsets topic {topic}",
        "FAIL",
        f"the offsets topic {topic} has cleanup.policy={policy}, so retention would delete "
        f"committed cursors: set it to compact (kafka-configs.sh --alter --entity-type topics "
        f"--entity-name {topic} --add-config cleanup.policy=compact), or name another topic in "
        "mq.offsets_topic",
    )


class _Cluster:
    """The admin requests behind the exactly-once rows; failures are reported as text."""

    def __init__(self, kafka: KafkaConfig, timeout_s: float) -> None:
        self._settings = connection_settings(kafka)
        self._timeout_s = timeout_s
        admin_settings: dict[str, Any] = {**self._settings, "logger": LibrdkafkaLog(self._settings)}
        self._admin = AdminClient(admin_settings)

    def broker_settings(self) -> BrokerSettings:
        """Raises MqError when the cluster does not answer or refuses DescribeConfigs."""
        try:
            metadata = self._admin.list_topics(timeout=self._timeout_s)
            resources = [
                ConfigResource(ConfigResource.Type.BROKER, str(broker))
                for broker in sorted(metadata.brokers)
            ]
            described = self._admin.describe_configs(resources)
            configs = [future.result(timeout=self._timeout_s) for future in described.values()]
        except KafkaException as exc:
            raise MqError(masked(exc.args[0].str(), self._settings)) from None

        def highest(key: str) -> str | None:
            values = [config[key].value for config in configs if key in config]
            present = [value for value in values if value is not None]
            return max(present, key=_version_key) if present else None

        factor, min_isr = (
            highest("transaction.state.log.replication.factor"),
            highest("transaction.state.log.min.isr"),
        )
        return BrokerSettings(
            brokers=len(metadata.brokers),
            protocol_version=highest("inter.broker.protocol.version"),
            replication_factor=None if factor is None else int(factor),
            min_isr=None if min_isr is None else int(min_isr),
        )

    def cleanup_policy(self, topic: str) -> str | None:
        """The topic's cleanup.policy; None when it does not exist. Raises MqError."""
        try:
            if topic not in self._admin.list_topics(timeout=self._timeout_s).topics:
                return None
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
            future = self._admin.describe_configs([resource])[resource]
            return str(future.result(timeout=self._timeout_s)["cleanup.policy"].value)
        except KafkaException as exc:
            raise MqError(masked(exc.args[0].str(), self._settings)) from None


def _version_key(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", value))


def probe_transactions(kafka: KafkaConfig, destination: str, timeout_s: float) -> KafkaError | None:
    """Initialise, begin and abort a transaction with ``probe_id(destination)`` and the
    destination producer's settings; the error that stopped it, or None."""
    settings: dict[str, Any] = kafka.as_librdkafka_dict()
    settings["transactional.id"] = probe_id(destination)
    settings["logger"] = LibrdkafkaLog(settings)
    try:
        producer = Producer(settings)
        producer.init_transactions(timeout_s)
        producer.begin_transaction()
        producer.abort_transaction(timeout_s)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error
    producer.flush(0)
    return None


def check_exactly_once(config: BridgeConfig, timeout_s: float = 10.0) -> list[CheckResult]:
    """The rows of what exactly-once delivery needs; none without such a destination."""
    destinations = [d for d in config.destinations if d.mq.delivery == "exactly_once"]
    if not destinations:
        return []
    cluster = _Cluster(config.kafka, timeout_s)
    try:
        settings = cluster.broker_settings()
        results = [judge_broker_version(settings), judge_transaction_log(settings)]
    except MqError as exc:
        results = [
            CheckResult(
                "kafka",
                "transaction log",
                "SKIP",
                f"cannot read the brokers' configuration ({exc}): version and "
                "transaction.state.log.* not checked, transactions are probed per destination "
                "(grant DESCRIBE_CONFIGS on the cluster to check them)",
            )
        ]
    probe_timeout_s = min(timeout_s, PROBE_TIMEOUT_S)
    for destination in destinations:
        error = probe_transactions(config.kafka, destination.name, probe_timeout_s)
        results.append(judge_transactions(destination, error, probe_timeout_s))
        try:
            policy = cluster.cleanup_policy(destination.mq.offsets_topic)
        except MqError as exc:
            scope, topic = destination.name, destination.mq.offsets_topic
            results.append(CheckResult(scope, f"offsets topic {topic}", "FAIL", str(exc)))
            continue
        results.append(judge_offsets_topic(destination, policy))
    return results
