"""The configuration models: frozen pydantic models, secrets as ``SecretStr``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from bridge.config.fields import (
    NAME,
    SECRET_WORDS,
    Address,
    CanalRule,
    ProducerValue,
    Topic,
    address_list,
    field_filter,
    regex_list,
    split_address,
    time_zone_name,
    topic_name,
    truncate_rule,
)
from bridge.config.rules import (
    DdlPolicy,
    DynamicTopic,
    OversizePolicy,
    PartitionHash,
    TopicPartitionCounts,
)

_FORMATS = ("flat_message", "protobuf")
_BOOL = TypeAdapter(bool)

# librdkafka's default message.max.bytes: the record size limit unless the producer sets one.
DEFAULT_MAX_RECORD_BYTES = 1_000_000


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


# --- kafka ------------------------------------------------------------------------------------


class KafkaSasl(_Model):
    mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    username: str = Field(min_length=1)
    password: SecretStr


class KafkaTls(_Model):
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: SecretStr | None = None


class KafkaConfig(_Model):
    bootstrap_servers: Annotated[str, AfterValidator(address_list)]
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] | None = None
    sasl: KafkaSasl | None = None
    ssl: KafkaTls | None = None
    producer: dict[str, Any] = Field(default_factory=dict)

    @field_validator("producer")
    @classmethod
    def _check_producer(cls, value: dict[str, Any]) -> dict[str, Any]:
        problems = []
        for key, setting in value.items():
            if key == "bootstrap.servers":
                problems.append(f"{key!r}: set kafka.bootstrap_servers instead")
            elif any(word in key.lower() for word in SECRET_WORDS):
                problems.append(
                    f"{key!r}: secrets go in kafka.sasl.password or kafka.ssl.key_password "
                    "(or their *_file forms) so that they stay out of logs"
                )
            elif not isinstance(setting, ProducerValue):
                problems.append(f"{key!r}: must be a string, number or boolean")
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @property
    def max_message_bytes(self) -> int:
        """The producer's record size limit (librdkafka ``message.max.bytes``)."""
        return int(self.producer.get("message.max.bytes", DEFAULT_MAX_RECORD_BYTES))

    def as_librdkafka_dict(self) -> dict[str, ProducerValue]:
        """librdkafka settings: safe defaults, TLS/SASL, then the user's ``producer`` overrides.

        ``linger.ms`` is canal's default, 1 ms, not librdkafka's 5: the MQ worker builds each
        batch itself and waits for its confirmation, and a batch held back 5 ms after its
        produce waited for nothing (while the next batch is built, 1 ms lets it go).

        The only place where Kafka secrets are unwrapped.
        """
        settings: dict[str, ProducerValue] = {
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 1,
        }
        protocol: str | None = self.security_protocol
        if protocol is None and (self.sasl or self.ssl):
            protocol = ("SASL_" if self.sasl else "") + ("SSL" if self.ssl else "PLAINTEXT")
        if protocol is not None:
            settings["security.protocol"] = protocol
        if self.sasl is not None:
            settings["sasl.mechanism"] = self.sasl.mechanism
            settings["sasl.username"] = self.sasl.username
            settings["sasl.password"] = self.sasl.password.get_secret_value()
        if self.ssl is not None:
            for name, value in (
                ("ssl.ca.location", self.ssl.ca_location),
                ("ssl.certificate.location", self.ssl.certificate_location),
                ("ssl.key.location", self.ssl.key_location),
            ):
                if value is not None:
                    settings[name] = value
            if self.ssl.key_password is not None:
                settings["ssl.key.password"] = self.ssl.key_password.get_secret_value()
        settings.update(self.producer)
        settings["bootstrap.servers"] = self.bootstrap_servers
        return settings


# --- server-wide ------------------------------------------------------------------------------


class MetaConfig(_Model):
    """Where acked cursors are kept: ``file`` (``dir``/<destination>/meta.dat), ``memory``, or
    ``zookeeper`` (``{zookeeper.root}/destinations/<destination>/<client_id>/cursor``, needs the
    ``zookeeper`` section); ``flush_period_ms`` paces the file and ZooKeeper writes. The kinds
    are ``memory`` and the names in ``bridge.meta.factory.CURSOR_STORES``."""

    store: Literal["file", "memory", "zookeeper"] = "file"
    dir: Path = Path("var/meta")
    flush_period_ms: int = Field(default=1000, ge=1)


def _zk_root(value: str) -> str:
    parts = value.split("/")
    if not value.startswith("/") or value == "/" or any(p in ("", ".", "..") for p in parts[1:]):
        raise ValueError(f"expected an absolute ZooKeeper path like /otter/canal, got {value!r}")
    return value


class ZooKeeperConfig(_Model):
    """Its presence turns HA on (canal's ZooKeeper layout below ``root``): every process with
    this config registers, and per destination the one that creates the ``running`` node runs
    it while the others stand by. ``address`` is what this process registers as (canal's
    ip:port); by default the admin listen address, or ``<host ip>:<pid>`` without one."""

    hosts: Annotated[str, AfterValidator(address_list)]
    session_timeout_ms: int = Field(default=30_000, ge=1000, le=600_000)
    root: Annotated[str, AfterValidator(_zk_root)] = "/otter/canal"
    address: Address | None = None


class AdminTls(_Model):
    """HTTPS on the admin endpoint: PEM files of the server certificate (chain) and its key."""

    cert_file: Path
    key_file: Path


class AdminConfig(_Model):
    """Health and metrics HTTP endpoint; ``listen: null`` turns it off. ``token_file`` holds
    the bearer token that details (``/status``) and control actions need; probes and metrics
    stay open. Both files are read when the endpoint starts (a bad one stops the run first)."""

    listen: Address | None = "127.0.0.1:11112"
    token_file: Path | None = None
    tls: AdminTls | None = None


# --- one destination --------------------------------------------------------------------------


class SourceTls(_Model):
    """TLS to the source, as the MySQL client's ssl-ca / ssl-cert / ssl-key options."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify_cert: bool = True
    verify_identity: bool = False


class SourceConfig(_Model):
    address: Address
    username: str = Field(min_length=1)
    password: SecretStr | None = None
    slave_id: int = Field(ge=1, le=2**32 - 1)
    ssl: SourceTls | None = None
    connect_timeout_s: float = Field(default=10, gt=0)

    @property
    def host(self) -> str:
        return split_address(self.address)[0]

    @property
    def port(self) -> int:
        return split_address(self.address)[1]


class StartConfig(_Model):
    """Where a destination starts when no cursor is stored (canal's master position)."""

    journal_name: str | None = None
    position: int | None = Field(default=None, ge=4)
    timestamp: int | None = Field(default=None, ge=0, description="ms since the epoch")
    gtid: str | None = None

    @model_validator(mode="after")
    def _position_needs_file(self) -> StartConfig:
        if self.position is not None and not self.journal_name:
            raise ValueError("position is given without journal_name")
        return self


class FilterConfig(_Model):
    """canal's filters: comma-separated regexes over ``schema.table``, case-insensitive."""

    regex: Annotated[str, AfterValidator(regex_list)] = r".*\..*"
    black_regex: Annotated[str, AfterValidator(regex_list)] = ""
    field: Annotated[str, AfterValidator(field_filter)] = ""
    black_field: Annotated[str, AfterValidator(field_filter)] = ""
    # Change kinds left out (canal's filter.dml.insert/update/delete, Debezium's
    # skipped.operations); the cursor still moves past them.
    skip: tuple[Literal["insert", "update", "delete", "ddl"], ...] = ()

    @field_validator("skip", mode="before")
    @classmethod
    def _skip_list(cls, value: Any) -> Any:
        """A list, or canal-style one comma-separated string; each kind once."""
        if isinstance(value, str):
            value = [item.strip() for item in value.split(",") if item.strip()]
        if isinstance(value, list | tuple) and len(set(value)) != len(value):
            raise ValueError("names a change kind twice")
        return value


class ColumnsConfig(_Model):
    """Column shaping before anything is produced (``bridge.sink.shaping``): rules in the
    field filter's syntax; a NULL stays NULL. ``hash_salt`` is a secret (or ``hash_salt_file``)."""

    mask: Annotated[str, AfterValidator(field_filter)] = ""
    mask_length: int = Field(default=8, ge=1, le=1024)
    hash: Annotated[str, AfterValidator(field_filter)] = ""
    hash_salt: SecretStr | None = None
    truncate: Annotated[str, AfterValidator(truncate_rule)] = ""
    # A masked or hashed key column is refused (the destination stops) unless this accepts
    # that record keys and partitions then follow the masked value.
    mask_keys: bool = False

    @model_validator(mode="after")
    def _hash_needs_a_salt(self) -> ColumnsConfig:
        if self.hash and (self.hash_salt is None or not self.hash_salt.get_secret_value()):
            raise ValueError(
                "hash needs hash_salt: set hash_salt: ${PII_SALT} (an environment variable) or "
                "hash_salt_file: <path>, the same in every process that must give equal hashes"
            )
        return self


class StoreConfig(_Model):
    buffer_size: int = Field(default=16384, ge=1)
    mem_unit: int = Field(default=1024, ge=1)
    mode: Literal["ITEMSIZE", "MEMSIZE"] = "ITEMSIZE"
    ddl_isolation: bool = False

    @field_validator("buffer_size")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError(f"must be a power of two, got {value}")
        return value


class SchemaHistoryConfig(_Model):
    """The table definitions rows are decoded with (docs/schema-history.md). ``recover``:
    what a start does when the stored history cannot say how a table looked at the start
    position (no history and DDL on the table since, a rewind before the history, a damaged
    history) and the binlog carries no column names: ``never`` refuses with the tables
    named; ``live`` takes today's definitions for them and logs the binlog range whose rows
    may be misnamed. Set it for one start, then remove it. ``drift_check_s``: how often,
    while the stream is caught up, the history is compared with the live tables (0: never)."""

    recover: Literal["never", "live"] = "never"
    drift_check_s: float = Field(default=300, ge=0)


class SnapshotConfig(_Model):
    """Reading the rows tables already hold (docs/snapshots.md): in primary-key chunks between
    binlog watermarks, interleaved with the stream, without locks or writes."""

    # initial: snapshot the filtered tables when the destination has no cursor, then stream;
    # never: stream only (changes from the start position on); initial_only: snapshot, stop.
    mode: Literal["initial", "never", "initial_only"] = "initial"
    # Narrows the destination's filter for snapshots (canal's regex syntax); '' : every table.
    tables: Annotated[str, AfterValidator(regex_list)] = ""
    chunk_size: int = Field(default=4096, ge=1, le=1_000_000)
    parallelism: int = Field(default=2, ge=1, le=64)
    max_rows_per_second: int | None = Field(default=None, ge=1)
    # Snapshot the existing rows of tables the filter newly selects at a start (docs/
    # snapshots.md, "Tables newly selected by the filter"); false: only their changes stream.
    backfill: bool = True


class MqConfig(_Model):
    """A destination's output. The routing, DDL and oversize rules are written in canal's
    syntax and held parsed (``bridge.config.rules``); ``str()`` of one gives the syntax back."""

    topic: Topic
    dynamic_topic: Annotated[DynamicTopic, CanalRule(DynamicTopic.parse)] = DynamicTopic()
    partitions: int = Field(default=1, ge=1)
    partition: int = Field(
        default=0, ge=0, description="fixed partition when partition_hash is empty"
    )
    partition_hash: Annotated[PartitionHash, CanalRule(PartitionHash.parse)] = PartitionHash()
    dynamic_topic_partitions: Annotated[
        TopicPartitionCounts, CanalRule(TopicPartitionCounts.parse)
    ] = TopicPartitionCounts()
    database_hash: bool = True
    # The output format, a name in bridge.mq.formats.ENCODERS: flat_message (canal's
    # FlatMessage JSON, canal-json) or protobuf (canal's protobuf Message). flat_message is
    # canal's boolean for it (canal.mq.flatMessage), kept as an alias: false means protobuf.
    format: Literal["flat_message", "protobuf"] = "flat_message"
    flat_message: bool = True
    ddl: Annotated[DdlPolicy, CanalRule(DdlPolicy.parse)] = DdlPolicy()
    oversize: Annotated[OversizePolicy, CanalRule(OversizePolicy.parse)] = OversizePolicy()
    # at_least_once: a batch is acked once Kafka confirmed it (a restart may send it again);
    # exactly_once: each batch is one Kafka transaction that also commits the cursor to
    # offsets_topic, and a restart or take-over fences the previous producer.
    delivery: Literal["at_least_once", "exactly_once"] = "at_least_once"
    offsets_topic: Topic = "canal-bridge-offsets"
    # faithful: values as the source holds them (labels for ENUM/SET, exact decimals);
    # canal: values spelled exactly as canal 1.1.x spells them (ENUM index, SET bitmask, ...).
    value_mode: Literal["faithful", "canal"] = "faithful"
    # How binary column values become JSON strings: latin1 (canal: one char per byte) or
    # base64 (what Flink's JSON BYTES type expects).
    binary_encoding: Literal["latin1", "base64"] = "latin1"
    # split: a primary-key-changing UPDATE goes out as a DELETE of the old key plus an INSERT
    # of the new one, each on its key's partition (per-key order holds across partitions);
    # update: one UPDATE hashed by the new key, as canal sends it.
    key_change: Literal["split", "update"] = "split"
    # A null-value record after each DELETE record keyed by its row, same key and partition
    # (Debezium's tombstones.on.delete), so a compacted topic forgets deleted keys.
    tombstones: bool = False
    # The columns that key a table's records (and $pk$ partitioning, pkNames): tables
    # without a primary key, or overriding it. Field filter syntax: 'shop\\.events:tenant/seq'.
    key_columns: Annotated[str, AfterValidator(field_filter)] = ""

    @model_validator(mode="before")
    @classmethod
    def _flat_message_names_the_format(cls, data: Any) -> Any:
        """``format`` and its alias ``flat_message`` agree once validated: either given sets
        the other; both given and contradicting is refused."""
        if not isinstance(data, dict):
            return data
        given = data.get("format")
        if data.get("flat_message") is None:
            if given in _FORMATS:
                return {**data, "flat_message": given == "flat_message"}
            return data
        try:
            flat = _BOOL.validate_python(data["flat_message"])
        except ValidationError:
            return data  # the field reports it
        named = "flat_message" if flat else "protobuf"
        if given is None:
            return {**data, "format": named}
        if given != named:
            raise ValueError(
                f"format {given!r} contradicts flat_message {str(flat).lower()} (canal's "
                f"alias of format: {str(flat).lower()} means {named}); remove flat_message"
            )
        return data

    @field_validator("ddl", "oversize")
    @classmethod
    def _policy_topic(cls, value: DdlPolicy | OversizePolicy) -> DdlPolicy | OversizePolicy:
        if value.topic:
            topic_name(value.topic)
        return value

    @model_validator(mode="after")
    def _partition_in_range(self) -> MqConfig:
        if self.partition >= self.partitions:
            raise ValueError(f"partition {self.partition} must be < partitions {self.partitions}")
        return self

    @model_validator(mode="after")
    def _tombstones_need_row_keys(self) -> MqConfig:
        if self.tombstones and self.format != "flat_message":
            raise ValueError(
                "tombstones needs format flat_message: a protobuf record holds a whole batch "
                "under an empty key, which a tombstone cannot delete; remove tombstones"
            )
        return self


class DestinationConfig(_Model):
    name: str = Field(pattern=rf"^{NAME.pattern}$", max_length=64)
    source: SourceConfig
    start: StartConfig = StartConfig()
    filter: FilterConfig = FilterConfig()
    columns: ColumnsConfig = ColumnsConfig()
    # Entries per batch (and batch_size * mem_unit bytes of binlog at most). The worker builds
    # the next batch while Kafka confirms the one before, so smaller batches overlap better
    # and hold less memory; 1024 beat 2048 and 4096 on every benchmark workload (faster, and
    # the 500k-row transaction's peak RSS 150 MB instead of 175-205: bench/results/history.md).
    # The store's buffer_size must be larger to keep the parser busy.
    batch_size: int = Field(default=1024, ge=1)
    get_timeout_ms: int | None = Field(default=100, description="None: now; <= 0: block; > 0: wait")
    transaction_size: int = Field(default=1024, ge=1)
    store: StoreConfig = StoreConfig()
    mq: MqConfig
    timestamp_time_zone: Annotated[str | None, AfterValidator(time_zone_name)] = None
    on_purged: Literal["fail", "oldest", "latest", "snapshot"] = "fail"
    snapshot: SnapshotConfig = SnapshotConfig()
    schema_history: SchemaHistoryConfig = SchemaHistoryConfig()
    fallback_interval_s: int = Field(default=60, ge=0)
    heartbeat_period_s: float = Field(default=15, gt=0)
    # Read and decode the binlog in a child process (a second core), or in a thread; auto: a
    # child while the process has no more destinations than cores (bridge.runner).
    parser_process: bool | Literal["auto"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _explicit_start_streams(cls, data: Any) -> Any:
        """A ``start`` position means "stream from there": ``snapshot.mode`` left out then
        defaults to ``never`` (a snapshot too would deliver every row that existed at the
        start twice: once read, once streamed)."""
        if not isinstance(data, dict) or not _names_a_start(data.get("start")):
            return data
        snapshot = data.get("snapshot")
        if snapshot is None:
            snapshot = {}
        if isinstance(snapshot, dict) and "mode" not in snapshot:
            return {**data, "snapshot": {**snapshot, "mode": "never"}}
        return data

    @model_validator(mode="after")
    def _start_or_snapshot(self) -> DestinationConfig:
        start = self.start
        named = (start.journal_name, start.timestamp, start.gtid)
        if any(v is not None for v in named) and self.snapshot.mode != "never":
            raise ValueError(
                f"snapshot.mode {self.snapshot.mode} with an explicit start: every row that "
                "existed at the start would arrive twice (snapshotted and streamed); remove "
                "start to snapshot and then stream from the end, or set snapshot.mode: never "
                "to stream from start"
            )
        return self

    @model_validator(mode="after")
    def _transaction_fits_the_store(self) -> DestinationConfig:
        # The transaction buffer flushes up to transaction_size entries in one put.
        if self.transaction_size > self.store.buffer_size:
            raise ValueError(
                f"transaction_size {self.transaction_size} must not exceed "
                f"store.buffer_size {self.store.buffer_size}"
            )
        return self

    @model_validator(mode="after")
    def _batch_fits_the_store(self) -> DestinationConfig:
        # A get waits for batch_size entries (or its timeout): more than the store holds
        # would never come, and with get_timeout_ms <= 0 the worker would wait for ever.
        if self.store.mode == "ITEMSIZE" and self.batch_size > self.store.buffer_size:
            raise ValueError(
                f"batch_size {self.batch_size} must not exceed store.buffer_size "
                f"{self.store.buffer_size}: lower batch_size or raise store.buffer_size"
            )
        return self


class BridgeConfig(_Model):
    # Where records go, a name in bridge.mq.senders.SENDERS: kafka (the kafka section's
    # cluster) | memory (kept in memory and confirmed at once, for tests: bridge.mq.memory).
    broker: Literal["kafka", "memory"] = "kafka"
    kafka: KafkaConfig
    meta: MetaConfig = MetaConfig()
    admin: AdminConfig = AdminConfig()
    zookeeper: ZooKeeperConfig | None = None
    destinations: tuple[DestinationConfig, ...]

    @field_validator("destinations", mode="before")
    @classmethod
    def _not_empty(cls, value: object) -> object:
        # Not Field(min_length=1): pydantic would also report it when some items are invalid.
        if isinstance(value, list | tuple) and not value:
            raise ValueError("list at least one destination")
        return value

    def destination(self, name: str) -> DestinationConfig:
        for destination in self.destinations:
            if destination.name == name:
                return destination
        raise KeyError(name)


def _names_a_start(start: Any) -> bool:
    """Whether a destination's raw ``start`` section names a position."""
    if isinstance(start, StartConfig):
        start = start.model_dump()
    if not isinstance(start, dict):
        return False
    return any(start.get(k) is not None for k in ("journal_name", "position", "timestamp", "gtid"))
