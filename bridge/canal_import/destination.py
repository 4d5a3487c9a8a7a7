"""One canal instance (``conf/<destination>/instance.properties`` over ``canal.properties``) as
one entry of ``destinations``: source, start position, filters, batches, store and routing.

Values are canal's, including canal's defaults where a key is absent, so that the destination
behaves as the instance did; the MQ-wide keys canal reads from ``canal.properties`` only
(``canal.mq.canalBatchSize`` ...) come from ``server``.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from bridge.canal_import.findings import Note
from bridge.canal_import.values import Reader

_SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
# Server ids import-canal derives from a destination's name when canal generated one.
_DERIVED_SLAVE_IDS = (1001, 2**31 - 1)


def password_variable(destination: str) -> str:
    return "CANAL_" + re.sub(r"[^A-Za-z0-9]", "_", destination).upper() + "_PASSWORD"


def destination_entry(
    name: str, instance: Reader, server: Reader, slave_ids: set[int]
) -> dict[str, Any]:
    """The destination's mapping; ``slave_ids`` holds the ids already given (updated)."""
    entry: dict[str, Any] = {
        "name": name,
        "source": _source(name, instance, slave_ids),
        "start": _start(instance),
        "filter": {
            "regex": instance.text("canal.instance.filter.regex") or "",
            "black_regex": instance.text("canal.instance.filter.black.regex") or "",
            "field": instance.text("canal.instance.filter.field") or "",
            "black_field": instance.text("canal.instance.filter.black.field") or "",
            "skip": _skip(instance),
        },
        "batch_size": server.integer("canal.mq.canalBatchSize"),
        "get_timeout_ms": _get_timeout(server),
        "transaction_size": instance.integer("canal.instance.transaction.size"),
        "store": {
            "buffer_size": instance.integer("canal.instance.memory.buffer.size"),
            "mem_unit": instance.integer("canal.instance.memory.buffer.memunit"),
            "mode": (instance.text("canal.instance.memory.batch.mode") or "").upper(),
            "ddl_isolation": instance.flag("canal.instance.get.ddl.isolation"),
        },
        "mq": _mq(instance, server),
        "on_purged": "latest" if instance.flag("canal.auto.reset.latest.pos.mode") else "fail",
        "fallback_interval_s": instance.integer("canal.instance.fallbackIntervalInSeconds"),
        "parser_process": _parser_process(instance),
    }
    return entry


def _skip(instance: Reader) -> list[str]:
    """canal's ``filter.dml.insert/update/delete`` flags as the change kinds to skip."""
    kinds = ("insert", "update", "delete")
    return [kind for kind in kinds if instance.flag(f"canal.instance.filter.dml.{kind}")]


def _source(name: str, instance: Reader, slave_ids: set[int]) -> dict[str, Any]:
    findings = instance.findings
    source: dict[str, Any] = {
        "address": instance.text("canal.instance.master.address"),
        "username": instance.text("canal.instance.dbUsername"),
        "password": None,
        "slave_id": _slave_id(name, instance, slave_ids),
    }
    # Only whether a password is set is looked at: its value is never copied.
    if instance.settings.get("canal.instance.dbPassword") is not None:
        source["password"] = findings.secret(
            password_variable(name), f"canal.instance.dbPassword of {name}"
        )
    if instance.flag("canal.instance.enableDruid"):
        findings.changed.append(
            Note(
                instance.origin("canal.instance.enableDruid"),
                "canal.instance.enableDruid",
                f"dbPassword is druid-encrypted: set {password_variable(name)} to the plain "
                "password",
            )
        )
    ssl = _source_tls(instance)
    if ssl is not None:
        source["ssl"] = ssl
    return source


def _slave_id(name: str, instance: Reader, slave_ids: set[int]) -> int | None:
    key = "canal.instance.mysql.slaveId"
    configured = instance.integer(key)
    if configured is not None and configured > 0:
        slave_ids.add(configured)
        return configured
    low, high = _DERIVED_SLAVE_IDS
    derived = low + zlib.crc32(name.encode()) % (high - low)
    while derived in slave_ids:
        derived = low + (derived - low + 1) % (high - low)
    slave_ids.add(derived)
    instance.findings.changed.append(
        Note(
            instance.origin(key),
            key,
            f"not set, so canal made one up from the host's address at each start; "
            f"source.slave_id is {derived} (from the destination's name): keep it unique "
            "among the source's replicas",
        )
    )
    return derived


def _source_tls(instance: Reader) -> dict[str, Any] | None:
    key = "canal.instance.master.sslMode"
    mode = (instance.text(key) or "").upper()
    if mode not in _SSL_MODES:
        instance.findings.bad_value(instance.origin(key), key, mode, " | ".join(_SSL_MODES))
        return None
    if mode == "PREFERRED":
        instance.findings.changed.append(
            Note(
                instance.origin(key),
                key,
                "PREFERRED: canal-bridge does not try TLS on its own; the import connects "
                "without it (set source.ssl to require TLS)",
            )
        )
    if mode in ("DISABLED", "PREFERRED"):
        return None
    verify = mode in ("VERIFY_CA", "VERIFY_IDENTITY")
    if verify:
        instance.findings.changed.append(
            Note(
                instance.origin(key),
                key,
                f"{mode}: the CA comes from canal's Java trust store, which is not copied; "
                "set source.ssl.ca to it as PEM",
            )
        )
    return {"verify_cert": verify, "verify_identity": mode == "VERIFY_IDENTITY"}


def _start(instance: Reader) -> dict[str, Any]:
    start: dict[str, Any] = {
        "journal_name": instance.text("canal.instance.master.journal.name"),
        "position": instance.integer("canal.instance.master.position"),
        "timestamp": instance.integer("canal.instance.master.timestamp"),
        "gtid": None,
    }
    gtid_key = "canal.instance.master.gtid"
    gtid = instance.text(gtid_key)
    if instance.flag("canal.instance.gtidon"):
        start["gtid"] = gtid
        instance.findings.changed.append(
            Note(
                instance.origin("canal.instance.gtidon"),
                "canal.instance.gtidon",
                "canal-bridge has no GTID switch: it dumps by GTID set when start.gtid is "
                + ("set (from canal.instance.master.gtid)" if gtid else "set (empty here)")
                + ", by binlog file and position otherwise",
            )
        )
    elif gtid is not None:
        instance.findings.unmapped.append(
            Note(instance.origin(gtid_key), gtid_key, "canal ignores it: gtidon is false")
        )
    return start


def _get_timeout(server: Reader) -> int | None:
    """canal waits for a full batch up to canalGetTimeout ms when it is > 0 and returns what
    there is at once otherwise, which is canal-bridge's ``get_timeout_ms: null``."""
    timeout = server.integer("canal.mq.canalGetTimeout")
    return timeout if timeout is not None and timeout > 0 else None


def _mq(instance: Reader, server: Reader) -> dict[str, Any]:
    mq: dict[str, Any] = {
        "topic": instance.text("canal.mq.topic"),
        "dynamic_topic": instance.text("canal.mq.dynamicTopic") or "",
        "partitions": instance.integer("canal.mq.partitionsNum"),
        "partition": instance.integer("canal.mq.partition"),
        "partition_hash": instance.text("canal.mq.partitionHash") or "",
        "dynamic_topic_partitions": instance.text("canal.mq.dynamicTopicPartitionNum") or "",
        "database_hash": server.flag("canal.mq.database.hash"),
        # canal's canal.mq.flatMessage (canal.properties): JSON FlatMessages, or its protobuf
        # Message when false; canal-bridge writes either.
        "format": "protobuf" if server.flag("canal.mq.flatMessage") is False else "flat_message",
        # What canal's consumers read today: canal 1.1.x's value spellings and one UPDATE
        # for a key change (docs/canal-compatibility.md).
        "value_mode": "canal",
        "key_change": "update",
    }
    return mq


def _parser_process(instance: Reader) -> bool | None:
    key = "canal.instance.parser.parallel"
    parallel = instance.flag(key)
    instance.findings.changed.append(
        Note(
            instance.origin(key),
            key,
            "parser_process: canal decodes with a thread pool, canal-bridge in a child "
            "process (true) or a thread (false)",
        )
    )
    return parallel
