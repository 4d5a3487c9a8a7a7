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

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import pymysql
from confluent_kafka import KafkaError, KafkaException, Producer

# ConfigResource is public in confluent_kafka.admin; its stubs do not export it.
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from bridge.config import BridgeConfig, DestinationConfig, KafkaConfig
from bridge.exceptions import BridgeError
from bridge.mq.exceptions import BrokersRefused, MqError
from bridge.mq.producer import LibrdkafkaLog, TopicInspector, connection_settings, masked
from bridge.mq.routing import CanalTopicRouter, TopicPartitions
from bridge.mq.transactional import transactional_id
from bridge.parse.binlog.gtid import is_mariadb_gtid_set
from bridge.parse.source import (
    REQUIRED_CHECKS,
    AccountAuth,
    SourceVariables,
    account_auth,
    open_connection,
    read_variables,
    source_time_zone,
    translate_error,
)

Outcome = Literal["PASS", "WARN", "FAIL", "SKIP"]
ONE_DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class CheckResult:
    scope: str  # a destination's name, or "kafka"
    check: str
    outcome: Outcome
    detail: str


# --- sources ----------------------------------------------------------------------------------


def check_source(destination: DestinationConfig) -> list[CheckResult]:
    """Connect to the destination's source and run every source check on it."""
    name, source = destination.name, destination.source
    try:
        with open_connection(source) as conn:
            variables = read_variables(conn)
            results = [
                CheckResult(name, "connection", "PASS", f"{source.address}: {_server(variables)}")
            ]
            results += _required(destination, variables)
            results.append(_row_metadata(name, variables))
            results.append(_compression(name, variables))
            if variables.row_value_options is not None:
                results.append(_partial_json(name, variables))
            results.append(_retention(name, variables))
            results.append(_gtid(destination, variables, _purged_outside(conn, destination)))
            results.append(_auth_plugin(destination, variables, account_auth(conn)))
            results.append(_time_zone(destination, conn))
            return results
    except BridgeError as exc:
        return [CheckResult(name, "connection", "FAIL", str(exc))]
    except pymysql.MySQLError as exc:
        return [CheckResult(name, "connection", "FAIL", str(translate_error(exc, source)))]


def _server(v: SourceVariables) -> str:
    return f"{'MariaDB' if 'mariadb' in v.version.lower() else 'MySQL'} {v.version}"


def _required(destination: DestinationConfig, v: SourceVariables) -> Iterator[CheckResult]:
    found = {
        "binary log": "log_bin is on",
        "binlog format": f"binlog_format={v.binlog_format}",
        "row image": f"binlog_row_image={v.row_image}",
        "server id": f"server_id {v.server_id}, slave_id {destination.source.slave_id}",
        "privileges": "SELECT, REPLICATION SLAVE, REPLICATION CLIENT",
    }
    for check_name, check in REQUIRED_CHECKS:
        problem = check(destination.source, v)
        if problem is None:
            yield CheckResult(destination.name, check_name, "PASS", found[check_name])
        else:
            yield CheckResult(destination.name, check_name, "FAIL", str(problem))


def _row_metadata(name: str, v: SourceVariables) -> CheckResult:
    if v.row_metadata_full:
        return CheckResult(name, "row metadata", "PASS", "binlog_row_metadata=FULL")
    found = (
        f"binlog_row_metadata is {v.row_metadata}"
        if v.row_metadata is not None
        else "the server has no binlog_row_metadata (MariaDB < 10.5, MySQL < 8.0.1)"
    )
    return CheckResult(
        name,
        "row metadata",
        "PASS",
        f"{found}: column names come from the destination's schema history, the definitions "
        "at each row's position (the cheaper path: smaller TABLE_MAP events); FULL also "
        "puts the names in the binlog, checked against the history, and a lost history is "
        "then rebuilt from them (docs/schema-history.md)",
    )


def _compression(name: str, v: SourceVariables) -> CheckResult:
    if v.server.mariadb and (v.mariadb_log_bin_compress or "").upper() == "ON":
        return CheckResult(
            name,
            "binlog compression",
            "FAIL",
            "log_bin_compress=ON: MariaDB's compressed binlog events cannot be read, a run stops "
            "at the first; SET GLOBAL log_bin_compress=OFF (and in the server's config file)",
        )
    if v.transaction_compression is None:
        found = (
            f"log_bin_compress={v.mariadb_log_bin_compress}"
            if v.mariadb_log_bin_compress is not None
            else "the server does not compress binlogs"
        )
        return CheckResult(name, "binlog compression", "PASS", found)
    on = v.transaction_compression.upper() == "ON"
    return CheckResult(
        name,
        "binlog compression",
        "PASS",
        f"binlog_transaction_compression={v.transaction_compression}"
        + (": compressed transactions (zstd) are decoded" if on else ""),
    )


def _partial_json(name: str, v: SourceVariables) -> CheckResult:
    if "PARTIAL_JSON" not in (v.row_value_options or "").upper():
        return CheckResult(
            name,
            "partial JSON",
            "PASS",
            "binlog_row_value_options is empty: JSON updates carry whole documents",
        )
    if v.row_image.upper() == "FULL":
        return CheckResult(
            name,
            "partial JSON",
            "PASS",
            "binlog_row_value_options=PARTIAL_JSON with binlog_row_image=FULL: JSON diffs are "
            "applied to the before image, rows carry whole documents",
        )
    return CheckResult(
        name,
        "partial JSON",
        "FAIL",
        f"binlog_row_value_options=PARTIAL_JSON with binlog_row_image={v.row_image}: the before "
        "image leaves unchanged JSON columns out, so a JSON_SET/JSON_REPLACE/JSON_REMOVE update "
        "cannot be rebuilt and a run stops at it; set binlog_row_image=FULL (or "
        "binlog_row_value_options='')",
    )


def _retention(name: str, v: SourceVariables) -> CheckResult:
    seconds = v.binlog_expire_logs_seconds or 0
    if not seconds and v.expire_logs_days:
        seconds = int(v.expire_logs_days * ONE_DAY_S)
    # Name only the variables this server has: MySQL 8.4 removed expire_logs_days.
    if v.binlog_expire_logs_seconds is not None and v.expire_logs_days is not None:
        unset, variables = (
            "binlog_expire_logs_seconds and expire_logs_days are 0",
            "binlog_expire_logs_seconds (or expire_logs_days)",
        )
    elif v.expire_logs_days is not None:
        unset, variables = "expire_logs_days is 0", "expire_logs_days"
    else:
        unset, variables = "binlog_expire_logs_seconds is 0", "binlog_expire_logs_seconds"
    fix = f"set {variables} to cover the longest stop you want to survive, at least 86400 s (1 day)"
    if not v.expire_logs_auto_purge:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            "binlog_expire_logs_auto_purge=OFF: binlogs go only when purged by hand, which may "
            "remove the cursor's file; purge only files older than the cursor canal-bridge "
            f"status shows, or set binlog_expire_logs_auto_purge=ON and {variables}",
        )
    if seconds <= 0:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            f"{unset}: nothing tells how long binlogs are kept (manual purges may remove the "
            f"cursor's file); {fix}",
        )
    if seconds < ONE_DAY_S:
        return CheckResult(
            name,
            "binlog retention",
            "WARN",
            f"binlogs expire after {seconds / 3600:.1f} h: a longer stop loses the cursor's "
            f"position (error 1236); {fix}",
        )
    return CheckResult(
        name, "binlog retention", "PASS", f"binlogs kept {seconds / ONE_DAY_S:.1f} days"
    )


def _purged_outside(
    conn: pymysql.connections.Connection[Any], destination: DestinationConfig
) -> str | None:
    """For a MySQL ``start.gtid``: why the source cannot stream from it (transactions the set
    lacks were purged, or MySQL cannot read the set); None when it can, or nothing to ask."""
    gtid = destination.start.gtid
    if not gtid or is_mariadb_gtid_set(gtid):
        return None
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT @@global.gtid_purged, GTID_SUBSET(@@global.gtid_purged, %s)", (gtid,)
            )
            row = cur.fetchone()
    except pymysql.MySQLError as exc:
        if exc.args and exc.args[0] == 1193:  # no gtid_purged: MariaDB, judged by _gtid
            return None
        return f"MySQL does not read it as a GTID set ({exc.args[-1]})"
    if row is None or int(row[1]):
        return None
    purged = str(row[0]).replace("\n", "")
    return (
        f"the source purged transactions it lacks (gtid_purged {purged}): error 1236 at start; "
        "give a start.gtid that contains @@global.gtid_purged"
    )


def _gtid(destination: DestinationConfig, v: SourceVariables, purged: str | None) -> CheckResult:
    name, start_gtid = destination.name, destination.start.gtid
    by_file = "or start from start.journal_name + start.position"

    def result(outcome: Outcome, detail: str) -> CheckResult:
        return CheckResult(name, "gtid", outcome, detail)

    if v.server.mariadb:
        if start_gtid and not is_mariadb_gtid_set(start_gtid):
            return result(
                "FAIL",
                f"start.gtid {start_gtid!r} is no MariaDB GTID list (domain-server-sequence) but "
                f"the source is MariaDB: set start.gtid from SELECT @@gtid_binlog_pos, {by_file}",
            )
        return result("PASS", "MariaDB logs a GTID with every transaction")
    mode = (v.gtid_mode or "OFF").upper()
    enforce = (v.enforce_gtid_consistency or "OFF").upper()
    if start_gtid and is_mariadb_gtid_set(start_gtid):
        return result(
            "FAIL",
            f"start.gtid {start_gtid!r} is a MariaDB GTID but the source is MySQL: set start.gtid "
            f"to a MySQL GTID set (uuid:1-100, from SELECT @@global.gtid_executed), {by_file}",
        )
    if mode == "OFF":
        if start_gtid:
            return result(
                "FAIL",
                "start.gtid is set but gtid_mode=OFF: a GTID start needs gtid_mode=ON "
                "(enforce_gtid_consistency=ON, then gtid_mode OFF_PERMISSIVE, ON_PERMISSIVE, "
                f"ON); remove start.gtid {by_file}",
            )
        return result("PASS", "gtid_mode=OFF: positions are file offsets (start.gtid unusable)")
    if mode != "ON":
        return result(
            "WARN",
            f"gtid_mode={mode} is a migration step: transactions without a GTID stop a GTID "
            "start (start.gtid) at the first one; finish with enforce_gtid_consistency=ON and "
            f"gtid_mode=ON before using start.gtid, {by_file}",
        )
    if enforce != "ON":
        return result(
            "WARN",
            f"gtid_mode=ON with enforce_gtid_consistency={enforce}: set "
            "enforce_gtid_consistency=ON (gtid_mode=ON requires it)",
        )
    if purged is not None:
        return result("FAIL", f"start.gtid {start_gtid!r}: {purged}, {by_file}")
    return result(
        "PASS",
        "gtid_mode=ON, enforce_gtid_consistency=ON: start.gtid works from any set that contains "
        "@@global.gtid_purged",
    )


def _auth_plugin(
    destination: DestinationConfig, v: SourceVariables, auth: AccountAuth | None
) -> CheckResult:
    name, source = destination.name, destination.source
    if auth is None:
        return CheckResult(
            name, "auth plugin", "SKIP", "the account's plugin is not readable from mysql.user"
        )
    found = f"{auth.account} uses {auth.plugin}"
    alter = f"ALTER USER {auth.account} IDENTIFIED WITH caching_sha2_password BY '<password>'"
    if v.server.mariadb or auth.plugin not in ("mysql_native_password", "sha256_password"):
        if auth.plugin == "caching_sha2_password" and source.ssl is None:
            found += (
                " (no source.ssl: the password goes over the TLS the server offers, else "
                "RSA-encrypted)"
            )
        return CheckResult(name, "auth plugin", "PASS", found)
    if auth.plugin == "mysql_native_password":
        why = "which MySQL 8.4 turns off by default and 9.0 removes: an upgrade locks it out"
    else:
        why = "which is deprecated since MySQL 8.0.16"
    return CheckResult(name, "auth plugin", "WARN", f"{found}, {why}; {alter}")


def _time_zone(
    destination: DestinationConfig, conn: pymysql.connections.Connection[Any]
) -> CheckResult:
    name, configured = destination.name, destination.timestamp_time_zone
    zone = source_time_zone(conn, configured)
    if configured:
        return CheckResult(
            name, "time zone", "PASS", f"TIMESTAMP rendered in {configured} (timestamp_time_zone)"
        )
    if not isinstance(zone, dt.timezone) or zone.utcoffset(None) == dt.timedelta(0):
        return CheckResult(
            name, "time zone", "PASS", f"TIMESTAMP rendered in the server's zone {zone}"
        )
    return CheckResult(
        name,
        "time zone",
        "WARN",
        f"the server's zone is a fixed offset ({zone}) taken from SYSTEM or an offset setting: "
        "TIMESTAMP values shift by an hour across daylight-saving changes; set "
        "timestamp_time_zone (e.g. Asia/Shanghai) or the server's time_zone to a named zone",
    )


# --- kafka ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicUse:
    destination: str
    topic: str
    # The partition count the configuration routes by; None: any count works (partition 0 only).
    partitions: int | None
    why: str


def topic_uses(destination: DestinationConfig) -> tuple[list[TopicUse], list[str]]:
    """The topics a destination writes to, and the rules whose topics cannot be known ahead
    (bare regex patterns of dynamic_topic, named after the tables they match)."""
    mq, name = destination.mq, destination.name
    counts = TopicPartitions(mq.partitions, mq.dynamic_topic_partitions)
    router = CanalTopicRouter(mq.topic, mq.dynamic_topic)
    static = router.default_topic
    uses = [TopicUse(name, static, counts.count_for(static), "mq.topic")]
    known, unknown = router.rule_topics()
    uses += [TopicUse(name, t, counts.count_for(t), "mq.dynamic_topic") for t in known]
    if mq.ddl.mode == "topic":
        uses.append(TopicUse(name, mq.ddl.topic, None, "mq.ddl"))
    if mq.oversize.mode == "dead_letter":
        uses.append(TopicUse(name, mq.oversize.topic, None, "mq.oversize"))
    return _unique(uses), unknown


def _unique(uses: Iterable[TopicUse]) -> list[TopicUse]:
    seen: dict[str, TopicUse] = {}
    for use in uses:
        seen.setdefault(use.topic, use)
    return list(seen.values())


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


# --- exactly-once -------------------------------------------------------------------------------
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


# --- everything -------------------------------------------------------------------------------


def run_checks(config: BridgeConfig) -> list[CheckResult]:
    results: list[CheckResult] = []
    for destination in config.destinations:
        results += check_source(destination)
    if config.broker == "kafka":
        results += check_kafka(config)
    else:
        detail = f"broker {config.broker}: no Kafka cluster to check"
        results.append(CheckResult(config.broker, "broker", "SKIP", detail))
    return results


def render(results: Iterable[CheckResult]) -> str:
    rows = [("SCOPE", "CHECK", "RESULT", "DETAIL")]
    rows += [(r.scope, r.check, r.outcome, r.detail) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def print_check(config: BridgeConfig, out: TextIO) -> int:
    """Run every check, print the table and a summary; 1 if anything failed, else 0."""
    results = run_checks(config)
    out.write(render(results))
    failed = sum(r.outcome == "FAIL" for r in results)
    warned = sum(r.outcome == "WARN" for r in results)
    out.write(f"\n{len(results)} checks: {failed} failed, {warned} warnings\n")
    return 1 if failed else 0
