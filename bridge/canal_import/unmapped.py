"""Why a canal key has no place in ``destinations.yaml``: one reason per key or key family.

Every key the mappings did not read is looked up here; a key found nowhere is reported as
unknown (a typo, or a setting of a newer canal), never dropped silently.
"""

from __future__ import annotations

import re

_NO_TCP = "canal's tcp server for canal clients; canal-bridge serves none (Kafka mode only)"
_ADMIN = "canal-admin (remote config manager); canal-bridge's configuration is destinations.yaml"
_DETECTING = (
    "canal's SQL heartbeat against the source; canal-bridge asks the source for replication "
    "heartbeats (heartbeat_period_s) and reconnects with back-off"
)
_TSDB = (
    "canal's table-schema history (tsdb); canal-bridge always keeps a schema history of its "
    "own beside each destination's cursor (schema.dat in meta.dir), begun from the live "
    "tables at the first start and advanced by every DDL: nothing to configure "
    "(docs/schema-history.md)"
)
_STANDBY = (
    "canal's switch to a standby source; canal-bridge reads one source per destination and, "
    "when that address fails over, finds its place by time (fallback_interval_s)"
)
_JKS = (
    "a Java keystore, which canal-bridge cannot read: export the certificates as PEM and set "
    "source.ssl (ca, cert, key)"
)

REASONS: dict[str, str] = {
    "canal.id": _ADMIN,
    "canal.ip": _NO_TCP,
    "canal.register.ip": _NO_TCP,
    "canal.port": _NO_TCP,
    "canal.user": _NO_TCP,
    "canal.passwd": _NO_TCP,
    "canal.withoutNetty": _NO_TCP,
    "canal.socketChannel": _NO_TCP,
    "canal.destinations.expr": _ADMIN,
    "canal.conf.dir": "where canal finds the instance folders: the folder given to import-canal",
    "canal.auto.scan.interval": (
        "canal rescans conf/ for new instances; canal-bridge reads destinations.yaml again "
        "within a second of a change (and on SIGHUP) and starts, stops or restarts only the "
        "destinations that changed (docs/operations.md)"
    ),
    "canal.zookeeper.flush.period": "used with ZooKeeper meta (default-instance.xml) only",
    "canal.file.data.dir": "used with file meta (file-instance.xml) only",
    "canal.file.flush.period": "used with file meta (file-instance.xml) only",
    "canal.instance.global.mode": (
        "spring: the files import-canal reads; manager (configs from canal-admin) has no equivalent"
    ),
    "canal.instance.global.lazy": (
        "canal starts an instance on the first client request; canal-bridge starts every "
        "destination at once"
    ),
    "canal.instance.global.manager.address": _ADMIN,
    "canal.instance.memory.rawEntry": (
        "canal keeps the raw event bytes to size its store; canal-bridge charges each entry its "
        "event size in MEMSIZE mode without a switch"
    ),
    "canal.instance.filter.druid.ddl": (
        "canal's DDL parser choice; canal-bridge parses DDL with its own parser"
    ),
    "canal.instance.filter.query.dcl": (
        "canal drops GRANT/REVOKE-like queries when true; canal-bridge sends no DCL"
    ),
    "canal.instance.filter.query.dml": (
        "canal drops statement-format DML when true; canal-bridge reads ROW events only"
    ),
    "canal.instance.filter.query.ddl": (
        "canal drops DDL when true; in canal-bridge mq.ddl decides (inline | topic:<name> | skip)"
    ),
    "canal.instance.filter.table.error": (
        "canal skips tables whose metadata fails when true; canal-bridge stops the destination "
        "with SchemaMismatch instead of losing rows"
    ),
    "canal.instance.filter.rows": "canal drops all row changes when true; no equivalent",
    "canal.instance.filter.transaction.entry": (
        "transaction begin/end entries never reach Kafka (canal's MQ mode does not send them)"
    ),
    "canal.instance.binlog.format": (
        "canal's accepted formats; canal-bridge requires binlog_format=ROW (canal-bridge check "
        "verifies it)"
    ),
    "canal.instance.binlog.image": (
        "canal's accepted row images; canal-bridge requires binlog_row_image=FULL (canal-bridge "
        "check verifies it)"
    ),
    "canal.instance.parser.parallelThreadSize": (
        "canal's decoder threads; canal-bridge decodes in one child process (parser_process)"
    ),
    "canal.instance.parser.parallelBufferSize": (
        "canal's decoder ring size; canal-bridge decodes in one child process (parser_process)"
    ),
    "canal.instance.connectionCharset": (
        "canal decodes text with this one charset; canal-bridge decodes each column by its own "
        "character set"
    ),
    "canal.instance.defaultDatabaseName": (
        "initial schema of canal's metadata connection; canal-bridge needs none"
    ),
    "canal.instance.multi.stream.on": "PolarDB-X multi-stream binlog; not supported",
    "canal.instance.pwdPublicKey": (
        "druid's public key for an encrypted dbPassword; the password comes from the "
        "environment variable named in source.password"
    ),
    "canal.instance.master.tlsVersions": (
        "TLS versions are negotiated by the Python ssl module's defaults (TLS 1.2+)"
    ),
    "canal.instance.master.trustCertificateKeyStoreType": _JKS,
    "canal.instance.master.trustCertificateKeyStoreUrl": _JKS,
    "canal.instance.master.trustCertificateKeyStorePassword": _JKS,
    "canal.instance.master.clientCertificateKeyStoreType": _JKS,
    "canal.instance.master.clientCertificateKeyStoreUrl": _JKS,
    "canal.instance.master.clientCertificateKeyStorePassword": _JKS,
    "canal.mq.accessChannel": "Aliyun message trace (RocketMQ); not supported",
    "canal.mq.send.thread.size": (
        "canal's sender pool; canal-bridge sends one batch at a time per destination"
    ),
    "canal.mq.build.thread.size": (
        "canal's message-building pool; canal-bridge builds records in the parser process"
    ),
    "canal.mq.enableDynamicQueuePartition": (
        "RocketMQ only (queue counts asked from the broker); Kafka partitions come from "
        "mq.partitions / mq.dynamic_topic_partitions, as in canal's Kafka mode"
    ),
    "canal.mq.flatMessage": "read from canal.properties only (canal ignores it here)",
    "canal.mq.canalBatchSize": "read from canal.properties only (canal ignores it here)",
    "canal.mq.canalGetTimeout": "read from canal.properties only (canal ignores it here)",
    "canal.mq.database.hash": "read from canal.properties only (canal ignores it here)",
}

PREFIX_REASONS: tuple[tuple[str, str], ...] = (
    ("canal.admin.", _ADMIN),
    ("canal.aliyun.", "Aliyun access keys (RDS, Aliyun MQ); not supported"),
    ("canal.instance.rds.", "Aliyun RDS binlog download from OSS; not supported"),
    ("canal.instance.detecting.", _DETECTING),
    (
        "canal.instance.network.",
        (
            "socket buffers and read timeout of canal's binlog link; canal-bridge uses the OS "
            "defaults and notices a dead link by missing heartbeats (heartbeat_period_s)"
        ),
    ),
    ("canal.instance.tsdb.", _TSDB),
    ("canal.instance.standby.", _STANDBY),
    ("rocketmq.", "canal's RocketMQ mode; canal-bridge writes to Kafka only"),
    ("rabbitmq.", "canal's RabbitMQ mode; canal-bridge writes to Kafka only"),
    ("pulsarmq.", "canal's Pulsar mode; canal-bridge writes to Kafka only"),
)

# canal.instance.<destination>.mode / lazy / manager.address: per-destination overrides of the
# canal.instance.global.* keys.
_PER_DESTINATION = re.compile(r"canal\.instance\.([^.]+)\.(mode|lazy|manager\.address)")


def reason_for(key: str) -> str:
    if key in REASONS:
        return REASONS[key]
    for prefix, reason in PREFIX_REASONS:
        if key.startswith(prefix):
            return reason
    match = _PER_DESTINATION.fullmatch(key)
    if match:
        return REASONS["canal.instance.global." + match.group(2)]
    return (
        "unknown to import-canal (not a canal 1.1.8 setting it knows: a typo, or a newer "
        "canal's); check by hand whether destinations.yaml needs it"
    )
