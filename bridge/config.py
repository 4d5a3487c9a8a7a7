"""canal-bridge's configuration: ``destinations.yaml`` loaded into frozen pydantic models.

Loading happens in steps so that a bad file fails at once with *every* problem listed:

1. read and parse the YAML (a missing file or a syntax error is one line saying what to fix);
2. replace ``${VAR}`` / ``${VAR:-default}`` in string values (an unset variable without a
   default is one line naming it); ``$${`` stands for a literal ``${``;
3. read ``password_file`` / ``key_password_file`` keys into ``password`` / ``key_password``
   (the file's content, trailing newline removed);
4. validate the models, plus the checks across destinations (unique names and slave ids).

Problems of steps 3 and 4 are gathered and raised together as one ``InvalidConfig``, one line
per problem, each starting with its path in the file (``destinations[0].mq.partitions: ...``).
Secrets are ``SecretStr``: they never show in ``repr``/``str`` nor in error messages, and are
unwrapped only at the edge (``KafkaConfig.as_librdkafka_dict``, the source connection).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bridge.exceptions import ConfigError
from bridge.mq.exceptions import RuleSyntaxError
from bridge.mq.records import DEFAULT_MAX_RECORD_BYTES, DdlPolicy, OversizePolicy, RecordBuilder
from bridge.mq.routing import CanalPartitionRouter, CanalTopicRouter, TopicPartitions
from bridge.mq.rules import NamePattern

T = TypeVar("T")

ProducerValue = str | int | float | bool


class InvalidConfig(ConfigError):
    """The file was read but holds problems; ``problems`` lists them, path first."""

    def __init__(self, source: str, problems: list[str]) -> None:
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(f"{source}: invalid configuration ({count}):\n{lines}")
        self.source = source
        self.problems = tuple(problems)


# --- value checks shared by the models --------------------------------------------------------

_KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_OFFSET = re.compile(r"[+-]\d{2}:\d{2}")
_SECRET_WORDS = ("password", "secret")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 as ``[::1]:3306``) into its parts; ValueError if malformed."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected host:port with a port in 1..65535, got {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _address(value: str) -> str:
    split_address(value)
    return value.strip()


def _address_list(value: str) -> str:
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ValueError("expected host:port[,host:port...]")
    for item in items:
        split_address(item)
    return ",".join(items)


def _topic(value: str) -> str:
    if not _KAFKA_TOPIC.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"{value!r} is not a valid Kafka topic name (letters, digits, . _ -)")
    return value


def _regex_list(value: str) -> str:
    """canal filter syntax: comma-separated regexes, each matched against ``schema.table``."""
    for item in (part.strip() for part in value.split(",")):
        if item:
            _compile(item, item)
    return value


def _field_filter(value: str) -> str:
    """canal's field filter: ``schema.table:col1/col2,schema2.table2:col``."""
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        pattern, sep, columns = item.rpartition(":")
        if not sep or not pattern or not [c for c in columns.split("/") if c.strip()]:
            raise ValueError(f"expected 'schema.table:col1/col2', got {item!r}")
        _compile(pattern, item)
    return value


def _compile(pattern: str, item: str) -> None:
    try:
        NamePattern.compile(pattern, item)
    except RuleSyntaxError as exc:
        raise ValueError(str(exc)) from exc


def _rules(build: Callable[[str], object]) -> Callable[[str], str]:
    """A validator that compiles a routing rule with ``build``, reporting its syntax errors."""

    def check(value: str) -> str:
        try:
            build(value)
        except RuleSyntaxError as exc:
            raise ValueError(str(exc)) from exc
        return value

    return check


def _time_zone(value: str | None) -> str | None:
    if value is None or _OFFSET.fullmatch(value):
        return value
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {value!r} (use +08:00 or Asia/Shanghai)") from exc
    return value


Address = Annotated[str, AfterValidator(_address)]
Topic = Annotated[str, AfterValidator(_topic)]


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
    bootstrap_servers: Annotated[str, AfterValidator(_address_list)]
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
            elif any(word in key.lower() for word in _SECRET_WORDS):
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

        The only place where Kafka secrets are unwrapped.
        """
        settings: dict[str, ProducerValue] = {"acks": "all", "enable.idempotence": True}
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
    ``zookeeper`` section); ``flush_period_ms`` paces the file and ZooKeeper writes."""

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

    hosts: Annotated[str, AfterValidator(_address_list)]
    session_timeout_ms: int = Field(default=30_000, ge=1000, le=600_000)
    root: Annotated[str, AfterValidator(_zk_root)] = "/otter/canal"
    address: Address | None = None


class AdminConfig(_Model):
    """Health and metrics HTTP endpoint; ``listen: null`` turns it off."""

    listen: Address | None = "127.0.0.1:11112"


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

    regex: Annotated[str, AfterValidator(_regex_list)] = r".*\..*"
    black_regex: Annotated[str, AfterValidator(_regex_list)] = ""
    field: Annotated[str, AfterValidator(_field_filter)] = ""
    black_field: Annotated[str, AfterValidator(_field_filter)] = ""


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


class MqConfig(_Model):
    topic: Topic
    dynamic_topic: Annotated[str, AfterValidator(_rules(lambda r: CanalTopicRouter("x", r)))] = ""
    partitions: int = Field(default=1, ge=1)
    partition: int = Field(
        default=0, ge=0, description="fixed partition when partition_hash is empty"
    )
    partition_hash: Annotated[str, AfterValidator(_rules(CanalPartitionRouter))] = ""
    dynamic_topic_partitions: Annotated[
        str, AfterValidator(_rules(lambda r: TopicPartitions(1, r)))
    ] = ""
    database_hash: bool = True
    flat_message: bool = True
    ddl: Annotated[str, AfterValidator(_rules(DdlPolicy.parse))] = "inline"
    oversize: Annotated[str, AfterValidator(_rules(OversizePolicy.parse))] = "fail"

    @field_validator("flat_message")
    @classmethod
    def _flat_only(cls, value: bool) -> bool:
        if not value:
            raise ValueError("only true is supported (canal's protobuf format is not built)")
        return value

    @field_validator("ddl", "oversize")
    @classmethod
    def _policy_topic(cls, value: str) -> str:
        if ":" in value:
            _topic(value.split(":", 1)[1].strip())
        return value

    @model_validator(mode="after")
    def _partition_in_range(self) -> MqConfig:
        if self.partition >= self.partitions:
            raise ValueError(f"partition {self.partition} must be < partitions {self.partitions}")
        return self

    def topic_router(self) -> CanalTopicRouter:
        return CanalTopicRouter(self.topic, self.dynamic_topic)

    def partition_router(self) -> CanalPartitionRouter:
        return CanalPartitionRouter(
            self.partition_hash, database_hash=self.database_hash, fixed_partition=self.partition
        )

    def topic_partitions(self) -> TopicPartitions:
        return TopicPartitions(self.partitions, self.dynamic_topic_partitions)

    def record_builder(self, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> RecordBuilder:
        """Everything the MQ worker needs to turn batches into records."""
        return RecordBuilder(
            self.topic_router(),
            self.partition_router(),
            self.topic_partitions(),
            DdlPolicy.parse(self.ddl),
            OversizePolicy.parse(self.oversize),
            max_record_bytes,
        )


class DestinationConfig(_Model):
    name: str = Field(pattern=rf"^{_NAME.pattern}$", max_length=64)
    source: SourceConfig
    start: StartConfig = StartConfig()
    filter: FilterConfig = FilterConfig()
    batch_size: int = Field(default=1000, ge=1)
    get_timeout_ms: int | None = Field(default=100, description="None: now; <= 0: block; > 0: wait")
    transaction_size: int = Field(default=1024, ge=1)
    store: StoreConfig = StoreConfig()
    mq: MqConfig
    timestamp_time_zone: Annotated[str | None, AfterValidator(_time_zone)] = None
    on_purged: Literal["fail", "oldest", "latest"] = "fail"
    fallback_interval_s: int = Field(default=60, ge=0)
    heartbeat_period_s: float = Field(default=15, gt=0)


class BridgeConfig(_Model):
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


# --- loading ----------------------------------------------------------------------------------


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> BridgeConfig:
    """Read, interpolate and validate ``path``; ConfigError says what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file; pass the path of your destinations.yaml "
            "(config/destinations.yaml is an example to copy)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # Positions only: the line itself is not quoted, it may hold a secret.
        mark, context, start = exc.problem_mark, exc.context, exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        if context and start:
            context = f" {context} started at line {start.line + 1}, column {start.column + 1}"
        raise ConfigError(
            f"{where}: YAML syntax error: {exc.problem}{context or ''}; fix the file"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: YAML syntax error: {type(exc).__name__}") from None
    return parse_config(data, source=str(path), environ=environ)


def parse_config(
    data: object, *, source: str = "<config>", environ: Mapping[str, str] | None = None
) -> BridgeConfig:
    """Steps 2 to 4 of loading, for data already parsed from YAML."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with kafka, meta and destinations")
    env = os.environ if environ is None else environ
    unset: list[str] = []
    problems: list[str] = []
    data = _walk(data, (), lambda value, loc: _interpolate(value, loc, env, unset, problems))
    if unset:
        raise ConfigError(f"{source}: " + "; ".join(unset))
    data = _read_secret_files(data, (), problems)
    try:
        config = BridgeConfig.model_validate(data)
    except ValidationError as exc:
        problems += [_describe(error) for error in exc.errors()]
        config = None
    problems += _cross_checks(data)
    if problems or config is None:
        raise InvalidConfig(source, problems)
    return config


_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


def _interpolate(
    value: object,
    loc: tuple[str | int, ...],
    env: Mapping[str, str],
    unset: list[str],
    problems: list[str],
) -> object:
    if not isinstance(value, str) or "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            problems.append(f"{_path(loc)}: malformed ${{...}} reference (use ${{VAR}})")
            return ""
        found = env.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is None:
            unset.append(
                f"{_path(loc)}: environment variable {name} is not set; "
                f"export it or give a default as ${{{name}:-value}}"
            )
        return ""

    return _REFERENCE.sub(replace, value)


def _walk(
    value: object,
    loc: tuple[str | int, ...],
    visit: Callable[[object, tuple[str | int, ...]], object],
) -> object:
    if isinstance(value, dict):
        return {key: _walk(item, (*loc, str(key)), visit) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, (*loc, index), visit) for index, item in enumerate(value)]
    return visit(value, loc)


_SECRET_FILE_KEYS = ("password", "key_password")


def _read_secret_files(value: object, loc: tuple[str | int, ...], problems: list[str]) -> object:
    """Replace ``password_file: path`` by ``password: <content>`` anywhere in the tree."""
    if isinstance(value, list):
        return [_read_secret_files(item, (*loc, i), problems) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    result = {
        key: _read_secret_files(item, (*loc, str(key)), problems) for key, item in value.items()
    }
    for key in _SECRET_FILE_KEYS:
        file_key = f"{key}_file"
        if file_key not in result:
            continue
        file_name = result.pop(file_key)
        where = _path((*loc, file_key))
        if key in result:
            problems.append(f"{_path(loc)}: give either {key} or {file_key}, not both")
        elif not isinstance(file_name, str) or not file_name:
            problems.append(f"{where}: must be a file path")
        else:
            try:
                secret = Path(file_name).read_text(encoding="utf-8").rstrip("\r\n")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                problems.append(f"{where}: cannot read {file_name}: {reason}")
                continue
            if not secret:
                problems.append(f"{where}: {file_name} is empty")
            result[key] = secret
    return result


def _cross_checks(data: object) -> list[str]:
    """Problems no single destination can see: duplicate names and replica server ids; and
    a ZooKeeper meta store without a ``zookeeper`` section."""
    problems: list[str] = []
    if isinstance(data, dict):
        meta = data.get("meta")
        if (
            isinstance(meta, dict)
            and meta.get("store") == "zookeeper"
            and not data.get("zookeeper")
        ):
            problems.append(
                "meta.store: 'zookeeper' needs a zookeeper section (hosts, session_timeout_ms, "
                "root)"
            )
    destinations = data.get("destinations") if isinstance(data, dict) else None
    if not isinstance(destinations, list):
        return problems
    names: dict[object, int] = {}
    slave_ids: dict[object, int] = {}
    for index, destination in enumerate(destinations):
        if not isinstance(destination, dict):
            continue
        name = destination.get("name")
        if isinstance(name, str):
            if name in names:
                problems.append(
                    f"destinations[{index}].name: {name!r} is already used by "
                    f"destinations[{names[name]}]"
                )
            names.setdefault(name, index)
        source = destination.get("source")
        slave_id = source.get("slave_id") if isinstance(source, dict) else None
        if isinstance(slave_id, int | str) and str(slave_id).strip().isdigit():
            slave_id = int(slave_id)
            if slave_id in slave_ids:
                problems.append(
                    f"destinations[{index}].source.slave_id: {slave_id} is already used by "
                    f"destinations[{slave_ids[slave_id]}]; every replica needs its own server id"
                )
            slave_ids.setdefault(slave_id, index)
    return problems


def _path(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text or "(top level)"


_MESSAGES: dict[str, str] = {
    "missing": "required",
    "extra_forbidden": "unknown key",
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
}


def _describe(error: ErrorDetails) -> str:
    """One problem line, path first; never includes the offending input (it may be a secret)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in _MESSAGES:
        message = _MESSAGES[kind]
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
        bound = next(iter(ctx.values()))
        message = f"must be {op.get(kind, '<')} {bound}"
    elif kind == "literal_error":
        message = f"must be one of {ctx.get('expected')}"
    elif kind == "string_pattern_mismatch":
        message = f"must match {ctx.get('pattern')}"
    else:
        message = error["msg"].removeprefix("Value error, ")
    return f"{_path(tuple(error['loc']))}: {message}"
