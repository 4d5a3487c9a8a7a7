"""canal's ``kafka.*`` settings (the Java producer's) as the ``kafka`` section: brokers,
SASL/TLS, and librdkafka ``producer`` settings.

canal hands every ``kafka.<name>`` to the Java producer. librdkafka spells most of them the
same; a few are renamed or mean something slightly different (flagged), and some cannot hold
under canal-bridge's idempotent producer (``acks=all``, ``enable.idempotence=true``: librdkafka
refuses ``retries=0`` or ``acks=1`` with it), so they are listed with the reason instead.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bridge.canal_import.findings import Findings, Note
from bridge.canal_import.properties import Settings

# The same name and meaning in the Java producer and librdkafka.
SAME_NAME = frozenset(
    {
        "compression.type",
        "batch.size",
        "linger.ms",
        "request.timeout.ms",
        "retry.backoff.ms",
        "client.id",
        "delivery.timeout.ms",
        "metadata.max.age.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "connections.max.idle.ms",
        "socket.connection.setup.timeout.ms",
    }
)
# Java name -> librdkafka name, where only the name differs.
RENAMED = {
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
}
_NOT_MAPPED = {
    "key.serializer": "canal-bridge writes canal's FlatMessage JSON bytes itself",
    "value.serializer": "canal-bridge writes canal's FlatMessage JSON bytes itself",
    "partitioner.class": "partitions come from canal.mq.partitionHash (mq.partition_hash)",
    "max.block.ms": "librdkafka does not block on a full queue: the batch waits for delivery",
    "transactional.id": "set per destination by mq.delivery: exactly_once",
    "enable.idempotence": "canal-bridge's producer is always idempotent",
    "ssl.key.password": "the key is in a Java keystore: export it as PEM for kafka.ssl",
}
_JAVA_KEYSTORE = (
    "a Java keystore, which librdkafka cannot read: export the certificates as PEM and set "
    "kafka.ssl (ca_location, certificate_location, key_location)"
)
# canal's older names, still read by its Kafka producer when the kafka.* key is absent.
OLD_NAMES = {
    "canal.mq.servers": "kafka.bootstrap.servers",
    "canal.mq.acks": "kafka.acks",
    "canal.mq.compressionType": "kafka.compression.type",
    "canal.mq.retries": "kafka.retries",
    "canal.mq.batchSize": "kafka.batch.size",
    "canal.mq.lingerMs": "kafka.linger.ms",
    "canal.mq.maxRequestSize": "kafka.max.request.size",
    "canal.mq.bufferMemory": "kafka.buffer.memory",
    "canal.mq.kafka.kerberos.enable": "kafka.kerberos.enable",
    "canal.mq.kafka.kerberos.krb5.file": "kafka.kerberos.krb5.file",
    "canal.mq.kafka.kerberos.jaas.file": "kafka.kerberos.jaas.file",
}
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_PASSWORD_ENV = "CANAL_KAFKA_SASL_PASSWORD"
_JAAS_USERNAME = re.compile(r"""\busername\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S+?);?(?:\s|$))""")


def kafka_section(server: Settings, findings: Findings) -> dict[str, Any]:
    layer = server.layers[0]
    names = {key: key for key in layer.values if key.startswith("kafka.")}
    for old, new in OLD_NAMES.items():
        if old in layer.values and new not in names:
            names[new] = old
    section: dict[str, Any] = {"bootstrap_servers": _get(server, names, "kafka.bootstrap.servers")}
    protocol = _get(server, names, "kafka.security.protocol")
    if protocol is not None:
        section["security_protocol"] = protocol.upper()
    sasl = _sasl(server, names, findings)
    if sasl is not None:
        section["sasl"] = sasl
    producer: dict[str, Any] = {}
    for java_name in sorted(names):
        name = java_name.removeprefix("kafka.")
        if name in ("bootstrap.servers", "security.protocol") or name.startswith("sasl."):
            continue
        key = names[java_name]
        if not layer.values[key].strip():
            continue  # left empty: listed with the keys that set nothing
        value = server.get(key) or ""
        if name.startswith("kerberos."):
            kerberos = (_get(server, names, "kafka.kerberos.enable") or "false").lower()
            findings.unmapped.append(Note(layer.label, key, _kerberos(kerberos == "true")))
            continue
        _producer_setting(name, value, Note(layer.label, key, ""), producer, findings)
    if producer:
        section["producer"] = producer
    return section


def _get(server: Settings, names: dict[str, str], java_name: str) -> str | None:
    key = names.get(java_name)
    return server.get(key) if key else None


def _producer_setting(
    name: str, value: str, where: Note, producer: dict[str, Any], findings: Findings
) -> None:
    def unmapped(text: str) -> None:
        findings.unmapped.append(Note(where.origin, where.key, text))

    def changed(text: str) -> None:
        findings.changed.append(Note(where.origin, where.key, text))

    if name in SAME_NAME:
        producer[name] = scalar(value)
    elif name in RENAMED:
        producer[RENAMED[name]] = scalar(value)
    elif name == "acks":
        if value.lower() in ("all", "-1"):
            producer["acks"] = "all"
        else:
            unmapped(
                f"acks={value} is not kept: the idempotent producer needs acks=all (a record "
                "confirmed by one broker only can be lost)"
            )
    elif name == "retries":
        if value.isdigit() and int(value) > 0:
            producer["retries"] = int(value)
        else:
            unmapped(
                "not kept: canal-bridge's idempotent producer retries without reordering or "
                "duplicating (librdkafka refuses retries=0 with it); canal's retries=0 lost "
                "records on a transient broker error"
            )
    elif name == "max.in.flight.requests.per.connection":
        if value.isdigit() and 1 <= int(value) <= 5:
            producer[name] = int(value)
        else:
            unmapped("not kept: the idempotent producer keeps order with at most 5 in flight")
    elif name == "max.request.size":
        if not value.isdigit():
            findings.bad_value(where.origin, where.key, value, "a number of bytes")
            return
        producer["message.max.bytes"] = int(value)
        changed(
            "kafka.producer message.max.bytes: librdkafka limits each record (Java: each "
            "request); mq.oversize applies to records over it"
        )
    elif name == "buffer.memory":
        if not value.isdigit():
            findings.bad_value(where.origin, where.key, value, "a number of bytes")
            return
        producer["queue.buffering.max.kbytes"] = max(1, math.ceil(int(value) / 1024))
        changed("kafka.producer queue.buffering.max.kbytes: the same budget, counted in KiB")
    elif name in _NOT_MAPPED:
        unmapped(_NOT_MAPPED[name])
    elif name.startswith(("ssl.truststore.", "ssl.keystore.")):
        unmapped(_JAVA_KEYSTORE)
    else:
        unmapped(
            "not a producer setting import-canal knows how to translate; if librdkafka has it, "
            "add it under kafka.producer"
        )


def _sasl(server: Settings, names: dict[str, str], findings: Findings) -> dict[str, Any] | None:
    jaas_key = names.get("kafka.sasl.jaas.config")
    mechanism = (_get(server, names, "kafka.sasl.mechanism") or "").upper()
    jaas = server.get(jaas_key) if jaas_key else None
    for java_name, key in names.items():
        if java_name.startswith("kafka.sasl.") and java_name not in (
            "kafka.sasl.jaas.config",
            "kafka.sasl.mechanism",
        ):
            server.get(key)
            findings.unmapped.append(Note(server.origin(key), key, _SASL_OTHER))
    if jaas is None or jaas_key is None:
        return None
    origin = server.origin(jaas_key)
    if mechanism and mechanism not in SASL_MECHANISMS:
        findings.unmapped.append(
            Note(origin, jaas_key, f"SASL {mechanism} is not supported: PLAIN or SCRAM only")
        )
        return None
    match = _JAAS_USERNAME.search(jaas)
    if match is None:
        findings.unmapped.append(
            Note(origin, jaas_key, "no username= in the JAAS line: set kafka.sasl by hand")
        )
        return None
    username = next(group for group in match.groups() if group is not None)
    password = findings.secret(SASL_PASSWORD_ENV, "the password in canal's SASL JAAS line")
    findings.changed.append(
        Note(origin, jaas_key, f"kafka.sasl: username taken, password from ${SASL_PASSWORD_ENV}")
    )
    return {"mechanism": mechanism or "PLAIN", "username": username, "password": password}


def _kerberos(enabled: bool) -> str:
    if enabled:
        return "Kerberos (GSSAPI) is not supported: kafka.sasl takes PLAIN or SCRAM"
    return "Kerberos is off in canal: nothing to map"


_SASL_OTHER = "a Java SASL setting librdkafka has no equivalent for; check kafka.sasl by hand"


def scalar(value: str) -> str | int | bool:
    """A properties string as YAML's natural type: digits an int, true/false a bool."""
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value
