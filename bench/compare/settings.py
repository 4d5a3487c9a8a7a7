"""The settings each compared system runs with, generated from one ``RunSpec`` (pure).

Each system gets its recommended production settings, changed only where the benchmark needs
it (where to read, where to write, acks=all); the reasons are in docs/benchmarks.md.

- canal 1.1.7: the deployer's own defaults of canal.properties / instance.properties
  (memory store 16384 x 1 KB, MEMSIZE batches, parallel parser, canal.mq.canalBatchSize 50,
  canalGetTimeout 100 ms, kafka.acks=all, linger 1 ms, one request in flight), in MQ mode with
  flatMessage=true, the table filter and the start position set.
- Debezium Server (3.0.8 on MariaDB, 3.6.1 on MySQL: ``DEBEZIUM_RELEASES``): the connector of
  the source server (MariaDB's or MySQL's), the Kafka sink (acks=all), the JSON converter with
  schemas off, snapshot.mode=recovery (the schema from the tables as they are, no data)
  starting at the pre-seeded offset (bench/compare/debezium_offsets.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.source import Flavor

# canal.properties of the 1.1.7 deployer, the keys a single MQ-mode instance reads.
CANAL_DEFAULTS: dict[str, str] = {
    "canal.serverMode": "kafka",
    "canal.file.flush.period": "1000",
    "canal.instance.memory.buffer.size": "16384",
    "canal.instance.memory.buffer.memunit": "1024",
    "canal.instance.memory.batch.mode": "MEMSIZE",
    # CanalStarter turns raw entries off when flatMessage is on (no ByteString re-parse).
    "canal.instance.memory.rawEntry": "false",
    "canal.instance.detecting.enable": "false",
    "canal.instance.transaction.size": "1024",
    "canal.instance.network.receiveBufferSize": "16384",
    "canal.instance.network.sendBufferSize": "16384",
    "canal.instance.network.soTimeout": "30",
    "canal.instance.parser.parallel": "true",
    "canal.instance.connectionCharset": "UTF-8",
    "canal.instance.gtidon": "false",
    # The deployer's H2 table-meta history needs its Spring XML, which only the unpublished
    # deployer ships; without it canal asks the database for table definitions (no DDL runs
    # in the benchmark's range, so the rows are decoded the same).
    "canal.instance.tsdb.enable": "false",
    "canal.mq.flatMessage": "true",
    "canal.mq.canalBatchSize": "50",
    "canal.mq.canalGetTimeout": "100",
    "canal.mq.accessChannel": "local",
    "canal.mq.database.hash": "true",
    "canal.mq.send.thread.size": "30",
    "canal.mq.build.thread.size": "8",
    "canal.mq.partition": "0",
    "kafka.acks": "all",
    "kafka.compression.type": "none",
    "kafka.batch.size": "16384",
    "kafka.linger.ms": "1",
    "kafka.max.request.size": "1048576",
    "kafka.buffer.memory": "33554432",
    "kafka.max.in.flight.requests.per.connection": "1",
    "kafka.retries": "0",
    "kafka.kerberos.enable": "false",
}

# The JVM options of canal's startup.sh for a 64-bit Java 9+ (G1), without the options later
# JVMs reject.
CANAL_JAVA_OPTS = [
    *("-server", "-Xms2g", "-Xmx3g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=250"),
    *("-XX:+UseGCOverheadLimit", "-XX:+ExplicitGCInvokesConcurrent", "-Xss1m"),
    *("-XX:-OmitStackTraceInFastThrow", "-Djava.awt.headless=true"),
    *("-Djava.net.preferIPv4Stack=true", "-Dfile.encoding=UTF-8"),
]


@dataclass(frozen=True)
class RunSpec:
    """What every system reads and where it writes: the same binlog range, broker, account."""

    schema: str
    table: str
    start: tuple[str, int]  # the workload's first binlog position
    # The GTID state there, for Debezium: MariaDB's @@gtid_binlog_pos, MySQL's gtid_executed.
    start_gtids: str
    mysql: tuple[str, int]  # host, port
    user: str
    bootstrap: str
    slave_id: int
    flavor: Flavor = "mariadb"  # the source server's kind: which Debezium connector reads it


# flavor -> the Debezium Server release that reads it. MariaDB keeps 3.0.8, the release its
# recorded figures were taken with. MySQL needs a later one: 3.0.8's binlog client
# (mysql-binlog-connector-java 0.40.2) cannot parse a tagged GTID (``uuid:tag:1-4``, MySQL 8.3
# and later) in the server's gtid_executed and stops at the start of streaming; 3.6.1 (client
# 0.41) reads them.
DEBEZIUM_RELEASES: dict[Flavor, str] = {"mariadb": "3.0.8.Final", "mysql": "3.6.1.Final"}


def debezium_name(flavor: Flavor) -> str:
    """The name results give Debezium Server on ``flavor``: its release without ``.Final``."""
    return f"Debezium Server {DEBEZIUM_RELEASES[flavor].removesuffix('.Final')}"


# flavor -> Debezium's connector for it and the value of its database.ssl.mode meaning "no TLS"
# (the MariaDB connector takes the MariaDB driver's names, the MySQL one MySQL's).
DEBEZIUM_CONNECTORS: dict[Flavor, tuple[str, str]] = {
    "mariadb": ("io.debezium.connector.mariadb.MariaDbConnector", "disable"),
    "mysql": ("io.debezium.connector.mysql.MySqlConnector", "disabled"),
}


def canal_properties(spec: RunSpec, topic: str, data_dir: str) -> dict[str, str]:
    """canal.properties + instance.properties of one destination, canal's key names."""
    host, port = spec.mysql
    return {
        **CANAL_DEFAULTS,
        "canal.destinations": "bench",
        "canal.file.data.dir": data_dir,
        "canal.instance.master.address": f"{host}:{port}",
        "canal.instance.master.journal.name": spec.start[0],
        "canal.instance.master.position": str(spec.start[1]),
        "canal.instance.mysql.slaveId": str(spec.slave_id),
        "canal.instance.dbUsername": spec.user,  # the password: CANAL_PASSWORD, not the file
        "canal.instance.filter.regex": f"{spec.schema}\\..*",
        "canal.mq.topic": topic,
        "kafka.bootstrap.servers": spec.bootstrap,
    }


def debezium_topic(prefix: str, spec: RunSpec) -> str:
    """Debezium's data topic: ``<topic.prefix>.<database>.<table>``."""
    return f"{prefix}.{spec.schema}.{spec.table}"


def debezium_properties(spec: RunSpec, prefix: str, state_dir: str) -> dict[str, str]:
    """Debezium Server's application.properties; the password is left to the environment
    (``DEBEZIUM_SOURCE_DATABASE_PASSWORD``, which Debezium Server's config reads)."""
    host, port = spec.mysql
    connector, no_tls = DEBEZIUM_CONNECTORS[spec.flavor]
    source = "debezium.source."
    producer = "debezium.sink.kafka.producer."
    return {
        "debezium.sink.type": "kafka",
        producer + "bootstrap.servers": spec.bootstrap,
        producer + "acks": "all",
        producer + "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
        producer + "value.serializer": "org.apache.kafka.common.serialization.StringSerializer",
        "debezium.format.key": "json",
        "debezium.format.value": "json",
        "debezium.format.key.schemas.enable": "false",
        "debezium.format.value.schemas.enable": "false",
        source + "connector.class": connector,
        source + "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        source + "offset.storage.file.filename": f"{state_dir}/offsets.dat",
        source + "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        source + "schema.history.internal.file.filename": f"{state_dir}/schema-history.dat",
        source + "schema.history.internal.store.only.captured.tables.ddl": "true",
        source + "database.hostname": host,
        source + "database.port": str(port),
        source + "database.user": spec.user,
        source + "database.server.id": str(spec.slave_id),
        source + "database.ssl.mode": no_tls,
        source + "topic.prefix": prefix,
        source + "database.include.list": spec.schema,
        source + "table.include.list": f"{spec.schema}.{spec.table}",
        # The schema as the tables are now, then the binlog from the seeded offset; no table
        # locks (the canal account has no RELOAD, and no DDL runs meanwhile).
        source + "snapshot.mode": "recovery",
        source + "snapshot.locking.mode": "none",
        "quarkus.log.console.json": "false",
        "quarkus.log.level": "INFO",
    }


def properties_text(values: Mapping[str, str]) -> str:
    """A Java .properties file: backslashes doubled (the filter regex has one)."""
    lines = [f"{key}={value.replace(chr(92), chr(92) * 2)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"
