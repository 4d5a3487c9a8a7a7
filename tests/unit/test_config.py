"""bridge.config: every broken-config kind is reported with its path; secrets never leak."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bridge.config import (
    BridgeConfig,
    InvalidConfig,
    MqConfig,
    load_config,
    parse_config,
    split_address,
)
from bridge.config.rules import (
    DdlPolicy,
    DynamicTopic,
    HashRule,
    OversizePolicy,
    PartitionHash,
    TopicPartitionCounts,
)
from bridge.exceptions import ConfigError
from bridge.mq.flat_encoder import FlatMessageEncoder
from bridge.mq.formats import record_builder

REPO = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-Pa55"


def base() -> dict[str, Any]:
    """The smallest valid configuration."""
    return {
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "destinations": [
            {
                "name": "example",
                "source": {"address": "127.0.0.1:3306", "username": "canal", "slave_id": 1234},
                "mq": {"topic": "example"},
            }
        ],
    }


def with_(path: str, value: object, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of ``data`` (default: ``base()``) with ``value`` set at a dotted path."""
    data = copy.deepcopy(data if data is not None else base())
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return data


_DELETE = object()


def problems_of(data: object, **kwargs: Any) -> tuple[str, ...]:
    with pytest.raises(InvalidConfig) as info:
        parse_config(data, environ={}, **kwargs)
    return info.value.problems


# --- the example file -------------------------------------------------------------------------


def test_example_file_loads_with_the_documented_values() -> None:
    config = load_config(REPO / "config" / "destinations.yaml", environ={})
    (dest,) = config.destinations
    assert dest.name == "example"
    assert (dest.source.host, dest.source.port) == ("127.0.0.1", 13306)
    assert dest.source.password is not None
    assert dest.source.password.get_secret_value() == "canal"
    assert dest.filter.regex == r"demo\..*"
    assert dest.mq.topic == "example"
    assert config.kafka.bootstrap_servers == "127.0.0.1:19092"
    assert str(config.meta.dir) == "var/meta"


def test_example_file_takes_the_password_from_the_environment() -> None:
    config = load_config(REPO / "config" / "destinations.yaml", environ={"CANAL_PASSWORD": "x"})
    assert config.destinations[0].source.password.get_secret_value() == "x"  # type: ignore[union-attr]


def test_defaults() -> None:
    config = parse_config(base(), environ={})
    dest = config.destinations[0]
    assert (dest.batch_size, dest.get_timeout_ms, dest.transaction_size) == (1024, 100, 1024)
    assert (dest.store.buffer_size, dest.store.mem_unit, dest.store.mode) == (
        16384,
        1024,
        "ITEMSIZE",
    )
    assert not dest.store.ddl_isolation
    assert (dest.on_purged, dest.fallback_interval_s, dest.heartbeat_period_s) == ("fail", 60, 15)
    assert dest.timestamp_time_zone is None
    assert dest.parser_process == "auto"
    assert (dest.mq.partitions, dest.mq.ddl, dest.mq.oversize) == (1, DdlPolicy(), OversizePolicy())
    assert (str(dest.mq.ddl), str(dest.mq.oversize)) == ("inline", "fail")
    assert dest.filter.regex == r".*\..*"
    assert (config.meta.store, config.meta.flush_period_ms) == ("file", 1000)
    assert config.admin.listen == "127.0.0.1:11112"
    assert config.destination("example") is dest
    with pytest.raises(KeyError):
        config.destination("nope")


def test_models_are_frozen() -> None:
    config = parse_config(base(), environ={})
    with pytest.raises(ValidationError):
        config.destinations[0].mq.partitions = 3  # type: ignore[misc]


# --- environment interpolation ----------------------------------------------------------------


def test_env_interpolation() -> None:
    data = with_("destinations.0.source.address", "${DB_HOST}:${DB_PORT:-3306}")
    data = with_("destinations.0.source.slave_id", "${SLAVE_ID}", data)
    data = with_("destinations.0.mq.topic", "${TOPIC:-fallback}", data)
    data = with_("destinations.0.source.username", "$${literal}", data)
    config = parse_config(data, environ={"DB_HOST": "db", "SLAVE_ID": "77", "TOPIC": ""})
    source = config.destinations[0].source
    assert (source.address, source.slave_id, source.username) == ("db:3306", 77, "${literal}")
    assert config.destinations[0].mq.topic == "fallback"  # empty counts as unset, like bash


def test_unset_variable_is_one_line_naming_it_and_the_fix() -> None:
    data = with_("destinations.0.source.password", "${CANAL_PASSWORD}")
    with pytest.raises(ConfigError) as info:
        parse_config(data, environ={}, source="d.yaml")
    message = str(info.value)
    assert not isinstance(info.value, InvalidConfig)
    assert "\n" not in message
    assert message.startswith("d.yaml: destinations[0].source.password: ")
    assert "CANAL_PASSWORD is not set" in message
    assert "${CANAL_PASSWORD:-value}" in message


def test_set_but_empty_variable_without_default_is_empty() -> None:
    data = with_("destinations.0.source.password", "${EMPTY}")
    config = parse_config(data, environ={"EMPTY": ""})
    assert config.destinations[0].source.password.get_secret_value() == ""  # type: ignore[union-attr]


def test_malformed_reference_is_a_problem() -> None:
    data = with_("destinations.0.mq.topic", "${TOPIC:fallback}")
    assert any(p.startswith("destinations[0].mq.topic: malformed") for p in problems_of(data))


# --- secrets from files -----------------------------------------------------------------------


def test_password_file(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(SECRET + "\n")
    (tmp_path / "kafka").write_text("k-pass\r\n")
    (tmp_path / "key").write_text("key-pass")
    data = with_("destinations.0.source.password_file", str(tmp_path / "pw"))
    data = with_("kafka.sasl", {"username": "u", "password_file": str(tmp_path / "kafka")}, data)
    data = with_("kafka.ssl", {"key_password_file": str(tmp_path / "key")}, data)
    config = parse_config(data, environ={})
    assert config.destinations[0].source.password.get_secret_value() == SECRET  # type: ignore[union-attr]
    settings = config.kafka.as_librdkafka_dict()
    assert (settings["sasl.password"], settings["ssl.key.password"]) == ("k-pass", "key-pass")


def test_hash_salt_from_the_environment_or_a_file_as_the_hash_error_says(tmp_path: Path) -> None:
    (tmp_path / "salt").write_text(SECRET + "\n")
    rules = {"mask": r"shop\.users:email", "hash": "shop.users:ssn", "truncate": "shop.n:b=9"}
    from_env = with_("destinations.0.columns", {**rules, "hash_salt": "${PII_SALT}"})
    from_file = with_("destinations.0.columns", {**rules, "hash_salt_file": str(tmp_path / "salt")})
    for data, environ in ((from_env, {"PII_SALT": SECRET}), (from_file, {})):
        columns = parse_config(data, environ=environ).destinations[0].columns
        assert columns.hash_salt is not None
        assert columns.hash_salt.get_secret_value() == SECRET
        assert SECRET not in repr(columns)
    empty = with_("destinations.0.columns", {**rules, "hash_salt": "${PII_SALT:-}"})
    assert any("hash needs hash_salt" in p for p in problems_of(empty))


def test_password_file_path_from_environment(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(SECRET)
    data = with_("destinations.0.source.password_file", "${SECRETS}/pw")
    config = parse_config(data, environ={"SECRETS": str(tmp_path)})
    assert config.destinations[0].source.password.get_secret_value() == SECRET  # type: ignore[union-attr]


def test_password_file_problems(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    data = with_("destinations.0.source.password_file", str(tmp_path / "missing"))
    data = with_("kafka.sasl", {"username": "u", "password": "x", "password_file": "f"}, data)
    data = with_("kafka.ssl", {"key_password_file": str(tmp_path / "empty")}, data)
    problems = problems_of(data)
    assert (
        f"destinations[0].source.password_file: cannot read {tmp_path / 'missing'}: "
        "No such file or directory" in problems
    )
    assert "kafka.sasl: give either password or password_file, not both" in problems
    assert f"kafka.ssl.key_password_file: {tmp_path / 'empty'} is empty" in problems


def test_a_null_password_next_to_a_password_file_is_no_conflict(tmp_path: Path) -> None:
    """What a Helm chart renders when the inline value is left empty."""
    (tmp_path / "secret").write_text("s3cret\n")
    data = with_("kafka.sasl", {"username": "u", "password": None, "password_file": "x"})
    data = with_("kafka.sasl.password_file", str(tmp_path / "secret"), data)
    sasl = parse_config(data, environ={}).kafka.sasl
    assert sasl is not None and sasl.password.get_secret_value() == "s3cret"


# --- every broken kind, with its path ---------------------------------------------------------

BROKEN = [
    ("destinations.0.mq.partitions", 0, "destinations[0].mq.partitions: must be >= 1"),
    ("destinations.0.mq.partition", 1, "destinations[0].mq: partition 1 must be < partitions 1"),
    ("destinations.0.mq.partitions", "many", "destinations[0].mq.partitions: must be an integer"),
    ("destinations.0.mq.topic", "bad topic!", "destinations[0].mq.topic: 'bad topic!' is not"),
    ("destinations.0.mq.topic", _DELETE, "destinations[0].mq.topic: required"),
    ("destinations.0.mq.dynamic_topic", "t:(", "destinations[0].mq.dynamic_topic: bad regex"),
    ("destinations.0.mq.dynamic_topic", ":shop", "destinations[0].mq.dynamic_topic: empty topic"),
    (
        "destinations.0.mq.partition_hash",
        "shop.orders:",
        "destinations[0].mq.partition_hash: no key",
    ),
    ("destinations.0.mq.partition_hash", "[:id", "destinations[0].mq.partition_hash: bad regex"),
    (
        "destinations.0.mq.dynamic_topic_partitions",
        "t:x",
        "destinations[0].mq.dynamic_topic_partitions: the partition count must be",
    ),
    ("destinations.0.mq.ddl", "drop", "destinations[0].mq.ddl: expected 'inline', 'skip' or"),
    ("destinations.0.mq.ddl", "topic:a b", "destinations[0].mq.ddl: 'a b' is not a valid Kafka"),
    ("destinations.0.mq.oversize", "dead_letter:", "destinations[0].mq.oversize: expected 'fail'"),
    ("destinations.0.mq.oversize", "dead_letter:$", "destinations[0].mq.oversize: '$' is not"),
    ("destinations.0.mq.colour", "red", "destinations[0].mq.colour: unknown key"),
    ("destinations.0.mq", _DELETE, "destinations[0].mq: required"),
    (
        "destinations.0.source.address",
        "localhost",
        "destinations[0].source.address: expected host:port",
    ),
    (
        "destinations.0.source.address",
        "db:99999",
        "destinations[0].source.address: expected host:port",
    ),
    ("destinations.0.source.slave_id", 0, "destinations[0].source.slave_id: must be >= 1"),
    (
        "destinations.0.source.slave_id",
        2**32,
        "destinations[0].source.slave_id: must be <= 4294967295",
    ),
    ("destinations.0.source.username", "", "destinations[0].source.username: must not be empty"),
    (
        "destinations.0.source.ssl",
        {"ca": "x", "verify": 1},
        "destinations[0].source.ssl.verify: unknown key",
    ),
    ("destinations.0.source", _DELETE, "destinations[0].source: required"),
    ("destinations.0.source", "db:3306", "destinations[0].source: must be a mapping"),
    ("destinations.0.start", {"position": 4}, "destinations[0].start: position is given without"),
    ("destinations.0.start.position", 1, "destinations[0].start.position: must be >= 4"),
    ("destinations.0.filter.regex", "shop\\..*,(", "destinations[0].filter.regex: bad regex '('"),
    ("destinations.0.filter.black_regex", "[", "destinations[0].filter.black_regex: bad regex"),
    (
        "destinations.0.filter.field",
        "shop.orders",
        "destinations[0].filter.field: expected 'schema.table:",
    ),
    (
        "destinations.0.filter.black_field",
        "shop.t:",
        "destinations[0].filter.black_field: expected",
    ),
    (
        "destinations.0.filter.skip",
        ["delete", "remove"],
        "destinations[0].filter.skip[1]: must be one of 'insert', 'update', 'delete' or 'ddl'",
    ),
    (
        "destinations.0.filter.skip",
        "delete,delete",
        "destinations[0].filter.skip: names a change kind twice",
    ),
    (
        "destinations.0.columns",
        {"hash": "shop.users:ssn"},
        "destinations[0].columns: hash needs hash_salt: set hash_salt: ${PII_SALT}",
    ),
    (
        "destinations.0.columns.truncate",
        "shop.notes:body",
        "destinations[0].columns.truncate: expected column=length",
    ),
    (
        "destinations.0.columns.mask",
        "shop.users",
        "destinations[0].columns.mask: expected 'schema.table:col1/col2'",
    ),
    ("destinations.0.columns.mask_length", 0, "destinations[0].columns.mask_length: must be >= 1"),
    (
        "destinations.0.mq.key_columns",
        "shop.events",
        "destinations[0].mq.key_columns: expected 'schema.table:col1/col2'",
    ),
    (
        "destinations.0.mq",
        {"topic": "t", "format": "protobuf", "tombstones": True},
        "destinations[0].mq: tombstones needs format flat_message",
    ),
    (
        "destinations.0.store.buffer_size",
        1000,
        "destinations[0].store.buffer_size: must be a power of two",
    ),
    (
        "destinations.0.store.mode",
        "BYTES",
        "destinations[0].store.mode: must be one of 'ITEMSIZE' or 'MEMSIZE'",
    ),
    ("destinations.0.store.mem_unit", 0, "destinations[0].store.mem_unit: must be >= 1"),
    ("destinations.0.batch_size", 0, "destinations[0].batch_size: must be >= 1"),
    (
        "destinations.0.timestamp_time_zone",
        "Mars/Olympus",
        "destinations[0].timestamp_time_zone: unknown time zone",
    ),
    (
        "destinations.0.on_purged",
        "ignore",
        "destinations[0].on_purged: must be one of 'fail', 'oldest', 'latest' or 'snapshot'",
    ),
    ("destinations.0.heartbeat_period_s", 0, "destinations[0].heartbeat_period_s: must be > 0"),
    ("destinations.0.fallback_interval_s", -1, "destinations[0].fallback_interval_s: must be >= 0"),
    ("destinations.0.name", "a/b", "destinations[0].name: must match"),
    ("destinations", [], "destinations: list at least one destination"),
    ("destinations", {"name": "x"}, "destinations: must be a list"),
    ("kafka.bootstrap_servers", "a:1,b", "kafka.bootstrap_servers: expected host:port"),
    ("kafka", _DELETE, "kafka: required"),
    (
        "kafka.producer",
        {"bootstrap.servers": "x:1"},
        "kafka.producer: 'bootstrap.servers': set kafka",
    ),
    ("kafka.producer", {"linger.ms": [1]}, "kafka.producer: 'linger.ms': must be a string, number"),
    ("kafka.sasl", {"password": "x"}, "kafka.sasl.username: required"),
    ("kafka.security_protocol", "TLS", "kafka.security_protocol: must be one of"),
    ("meta.store", "etcd", "meta.store: must be one of 'file', 'memory' or 'zookeeper'"),
    ("meta.flush_period_ms", 0, "meta.flush_period_ms: must be >= 1"),
    ("admin.listen", "nowhere", "admin.listen: expected host:port"),
    ("surprise", 1, "surprise: unknown key"),
]


@pytest.mark.parametrize(("path", "value", "expected"), BROKEN, ids=[b[2][:60] for b in BROKEN])
def test_broken_config_is_reported_with_its_path(path: str, value: object, expected: str) -> None:
    problems = problems_of(with_(path, value))
    assert any(problem.startswith(expected) for problem in problems), problems


def test_valid_variants_pass() -> None:
    data = with_("destinations.0.timestamp_time_zone", "+08:00")
    data = with_("destinations.0.source.address", "[::1]:3306", data)
    data = with_("destinations.0.start", {"journal_name": "mysql-bin.000003", "position": 4}, data)
    data = with_(
        "destinations.0.mq",
        {
            "topic": "t",
            "partitions": 4,
            "partition": 3,
            "ddl": "topic:ddl-events",
            "oversize": "dead_letter:too.big",
            "partition_hash": r"shop\.orders:id^region,.*\..*",
            "dynamic_topic": r"mytest1.user,topic2:mytest2\..*,.*\..*",
            "dynamic_topic_partitions": "test.*:4,mycanal:6",
        },
        data,
    )
    data = with_("destinations.0.filter.field", "shop.orders:id/note,shop.users:id", data)
    data = with_("destinations.0.filter.skip", "delete, ddl", data)
    dest = parse_config(data, environ={}).destinations[0]
    assert (dest.source.host, dest.source.port) == ("::1", 3306)
    assert dest.filter.skip == ("delete", "ddl")
    assert dest.timestamp_time_zone == "+08:00"


RULES = {
    "dynamic_topic": r"mytest1.user,topic2:mytest2\..*,.*\..*",
    "partition_hash": r"shop\.orders:id^region,.*\..*:$pk$,shop.users",
    "dynamic_topic_partitions": "test.*:4,mycanal:6",
    "ddl": "topic:ddl-events",
    "oversize": "dead_letter:too.big",
}


def test_rules_are_parsed_once_into_types() -> None:
    mq = MqConfig.model_validate({"topic": "t", **RULES})
    assert isinstance(mq.dynamic_topic, DynamicTopic)
    assert [rule.topic for rule in mq.dynamic_topic.rules] == [None, "topic2", None]
    assert isinstance(mq.partition_hash, PartitionHash)
    assert [rule for _, rule in mq.partition_hash.rules] == [
        HashRule(columns=("id", "region")),
        HashRule(by_pk=True),
        HashRule(by_table=True),
    ]
    assert isinstance(mq.dynamic_topic_partitions, TopicPartitionCounts)
    assert [n for _, n in mq.dynamic_topic_partitions.rules] == [4, 6]
    assert (mq.ddl, mq.oversize) == (
        DdlPolicy("topic", "ddl-events"),
        OversizePolicy("dead_letter", "too.big"),
    )
    assert not MqConfig(topic="t").dynamic_topic  # no rule: falsy, as the empty string was


def test_rules_serialize_back_to_canals_syntax() -> None:
    mq = MqConfig.model_validate({"topic": "t", **RULES})
    dumped = mq.model_dump()
    assert {key: dumped[key] for key in RULES} == RULES
    assert MqConfig.model_validate(dumped) == mq
    # Blanks around items are dropped, ';' reads as ','.
    spaced = MqConfig(topic="t", dynamic_topic=" a.b : shop ; c:d ", ddl=" skip ")
    assert (str(spaced.dynamic_topic), str(spaced.ddl)) == ("a.b:shop,c:d", "skip")


def test_a_rule_given_parsed_is_taken_as_it_is() -> None:
    rules = PartitionHash.parse("shop.orders:id")
    assert MqConfig(topic="t", partition_hash=rules).partition_hash is rules
    assert problems_of(with_("destinations.0.mq.ddl", 3)) == (
        "destinations[0].mq.ddl: must be a string",
    )


@pytest.mark.parametrize(
    "start",
    [
        {"journal_name": "mysql-bin.000003", "position": 4},
        {"timestamp": 1_700_000_000_000},
        {"gtid": "0-1-42"},
    ],
    ids=["position", "timestamp", "gtid"],
)
def test_an_explicit_start_streams_from_there_without_a_snapshot(start: dict[str, object]) -> None:
    dest = parse_config(with_("destinations.0.start", start), environ={}).destinations[0]
    assert dest.snapshot.mode == "never"
    assert parse_config(base(), environ={}).destinations[0].snapshot.mode == "initial"


@pytest.mark.parametrize("mode", ["initial", "initial_only"])
def test_an_explicit_start_with_a_snapshot_is_refused_in_one_line(mode: str) -> None:
    data = with_("destinations.0.start", {"journal_name": "mysql-bin.000003", "position": 4})
    data = with_("destinations.0.snapshot", {"mode": mode, "chunk_size": 100}, data)
    problems = problems_of(data)
    assert len(problems) == 1, problems
    assert f"snapshot.mode {mode} with an explicit start" in problems[0]
    assert "set snapshot.mode: never" in problems[0]


def test_duplicate_names_and_slave_ids_across_destinations() -> None:
    data = base()
    data["destinations"].append(copy.deepcopy(data["destinations"][0]))
    data["destinations"].append(with_("destinations.0.name", "other")["destinations"][0])
    data["destinations"][2]["source"]["slave_id"] = "1234"
    problems = problems_of(data)
    assert "destinations[1].name: 'example' is already used by destinations[0]" in problems
    assert any(
        p.startswith("destinations[1].source.slave_id: 1234 is already used by destinations[0]")
        for p in problems
    )
    assert any(p.startswith("destinations[2].source.slave_id: 1234") for p in problems)


def test_every_problem_is_listed_at_once() -> None:
    data = with_("destinations.0.mq.partitions", 0)
    data = with_("destinations.0.store.buffer_size", 3, data)
    data = with_("kafka.bootstrap_servers", "nope", data)
    data = with_("meta.store", "disk", data)
    data["destinations"].append(copy.deepcopy(data["destinations"][0]))
    with pytest.raises(InvalidConfig) as info:
        parse_config(data, environ={}, source="dest.yaml")
    problems = info.value.problems
    assert len(problems) == 8, problems  # 2 per destination, kafka, meta, duplicate name + id
    message = str(info.value)
    assert message.startswith("dest.yaml: invalid configuration (8 problems):\n")
    for problem in problems:
        assert f"\n  {problem}" in message
    assert "destinations[1].store.buffer_size: must be a power of two, got 3" in problems


# --- secrets never show -----------------------------------------------------------------------


def test_secrets_are_not_in_repr_or_str() -> None:
    data = with_("destinations.0.source.password", SECRET)
    data = with_("kafka.sasl", {"username": "u", "password": SECRET}, data)
    config = parse_config(data, environ={})
    for text in (repr(config), str(config), repr(config.kafka), str(config.destinations[0])):
        assert SECRET not in text
    assert config.kafka.as_librdkafka_dict()["sasl.password"] == SECRET


def test_secrets_are_not_in_error_messages(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(SECRET)
    data = with_("destinations.0.source.password", [SECRET])  # wrong type
    data = with_("kafka.sasl", {"username": "u", "password": SECRET, "oops": SECRET}, data)
    data = with_("kafka.producer", {"sasl.password": SECRET, "ssl.keystore.password": SECRET}, data)
    data = with_(
        "kafka.ssl", {"key_password": SECRET, "key_password_file": str(tmp_path / "pw")}, data
    )
    data = with_("destinations.0.mq.partitions", 0, data)
    data = with_("destinations.0.mq.topic", "${T}", data)
    data = with_("destinations.0.columns", {"hash_salt": SECRET, "mask_length": SECRET}, data)
    with pytest.raises(InvalidConfig) as info:
        parse_config(data, environ={"T": SECRET})
    assert "destinations[0].source.password: must be a string" in info.value.problems
    assert any(
        p.startswith("kafka.producer: 'sasl.password': secrets go in") for p in info.value.problems
    )
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value)


def test_yaml_syntax_error_shows_position_not_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(f'kafka:\n  bootstrap_servers: a:1\n  password: "{SECRET}\n  x: [\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert message.startswith(f"{path}:")
    assert "YAML syntax error" in message
    assert "\n" not in message
    assert SECRET not in message


# --- files ------------------------------------------------------------------------------------


def test_missing_file_is_one_line_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.yaml")
    assert str(info.value) == (
        f"{tmp_path / 'nope.yaml'}: no such file; pass the path of your destinations.yaml "
        "(config/destinations.yaml is an example to copy)"
    )


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n"])
def test_file_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="expected a mapping with kafka, meta and destinations"):
        load_config(path, environ={})


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path)


# --- converters -------------------------------------------------------------------------------


def test_librdkafka_defaults_and_overrides() -> None:
    data = with_("kafka.producer", {"acks": 1, "linger.ms": 5, "enable.idempotence": False})
    settings = parse_config(data, environ={}).kafka.as_librdkafka_dict()
    assert settings == {
        "acks": 1,
        "enable.idempotence": False,
        "linger.ms": 5,
        "bootstrap.servers": "127.0.0.1:9092",
    }
    default = parse_config(base(), environ={}).kafka
    assert default.as_librdkafka_dict() == {
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 1,
        "bootstrap.servers": "127.0.0.1:9092",
    }
    assert default.max_message_bytes == 1_000_000


def test_librdkafka_security_settings() -> None:
    data = with_("kafka.sasl", {"mechanism": "SCRAM-SHA-512", "username": "u", "password": "p"})
    data = with_("kafka.ssl", {"ca_location": "/ca.pem"}, data)
    data = with_("kafka.producer", {"message.max.bytes": 2_000_000}, data)
    kafka = parse_config(data, environ={}).kafka
    settings = kafka.as_librdkafka_dict()
    assert settings["security.protocol"] == "SASL_SSL"
    assert (settings["sasl.mechanism"], settings["sasl.username"]) == ("SCRAM-SHA-512", "u")
    assert settings["sasl.password"] == "p"
    assert settings["ssl.ca.location"] == "/ca.pem"
    assert "ssl.key.location" not in settings
    assert kafka.max_message_bytes == 2_000_000
    only_sasl = with_("kafka.sasl", {"username": "u", "password": "p"})
    assert (
        parse_config(only_sasl, environ={}).kafka.as_librdkafka_dict()["security.protocol"]
        == "SASL_PLAINTEXT"
    )
    explicit = with_("kafka.security_protocol", "SSL", only_sasl)
    assert (
        parse_config(explicit, environ={}).kafka.as_librdkafka_dict()["security.protocol"] == "SSL"
    )


def test_mq_record_builder_wiring() -> None:
    data = with_(
        "destinations.0.mq",
        {
            "topic": "t",
            "partitions": 4,
            "partition": 2,
            "ddl": "skip",
            "oversize": "split",
            "dynamic_topic_partitions": "hot:8",
        },
    )
    mq = parse_config(data, environ={}).destinations[0].mq
    encoder = record_builder(mq, 5000, compiled=None).encoder
    assert isinstance(encoder, FlatMessageEncoder)
    placement = encoder.placement
    assert (encoder.ddl.mode, encoder.oversize.mode, placement.max_record_bytes) == (
        "skip",
        "split",
        5000,
    )
    assert placement.partitions.partition_for("a", "b", {"id": "1"}, ["id"], 4) == 2
    assert placement.partition_counts.count_for("hot") == 8
    assert placement.topics.topic_for("a", "b") == "t"


@pytest.mark.parametrize(
    ("address", "parts"),
    [("db:3306", ("db", 3306)), ("[::1]:13306", ("::1", 13306)), (" 10.0.0.1:1 ", ("10.0.0.1", 1))],
)
def test_split_address(address: str, parts: tuple[str, int]) -> None:
    assert split_address(address) == parts


def test_bridge_config_type_is_exported() -> None:
    assert isinstance(parse_config(base(), environ={}), BridgeConfig)


def test_transaction_size_must_fit_the_store() -> None:
    data = {
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "destinations": [
            {
                "name": "d",
                "source": {"address": "db:3306", "username": "u", "slave_id": 2},
                "transaction_size": 4096,
                "batch_size": 512,
                "store": {"buffer_size": 1024},
                "mq": {"topic": "t"},
            }
        ],
    }
    with pytest.raises(InvalidConfig, match="transaction_size 4096 must not exceed"):
        parse_config(data, source="test.yaml", environ={})


def test_batch_size_must_fit_the_store_in_item_mode() -> None:
    small_store = with_(
        "destinations.0.transaction_size",
        512,
        with_("destinations.0.store", {"buffer_size": 512, "mode": "ITEMSIZE"}),
    )
    problems = problems_of(small_store)
    assert any(
        "batch_size 1024 must not exceed store.buffer_size 512: lower batch_size" in p
        for p in problems
    ), problems
    fits = parse_config(with_("destinations.0.batch_size", 512, small_store), environ={})
    assert fits.destinations[0].batch_size == 512
    # In MEMSIZE mode batch_size counts mem_unit bytes, not slots.
    memsize = with_("destinations.0.store.mode", "MEMSIZE", small_store)
    assert parse_config(memsize, environ={}).destinations[0].batch_size == 1024


@pytest.mark.parametrize(
    ("given", "format_"),
    [
        ({}, "flat_message"),
        ({"format": "protobuf"}, "protobuf"),
        ({"flat_message": False}, "protobuf"),
        ({"flat_message": True}, "flat_message"),
        ({"format": "protobuf", "flat_message": False}, "protobuf"),
    ],
)
def test_mq_format_and_its_alias_flat_message(given: dict[str, object], format_: str) -> None:
    mq = parse_config(with_("destinations.0.mq", {"topic": "t", **given}), environ={})
    assert mq.destinations[0].mq.format == format_
    assert mq.destinations[0].mq.flat_message is (format_ == "flat_message")


def test_a_format_contradicting_flat_message_is_one_line_with_its_path() -> None:
    data = with_("destinations.0.mq", {"topic": "t", "format": "protobuf", "flat_message": True})
    (problem,) = problems_of(data)
    assert problem.startswith("destinations[0].mq: format 'protobuf' contradicts flat_message")
    assert "\n" not in problem
    # The keys it names are the model's.
    assert {"format", "flat_message"} <= set(MqConfig.model_fields)


def test_an_unknown_format_names_the_registered_ones() -> None:
    (problem,) = problems_of(with_("destinations.0.mq.format", "avro"))
    assert problem == "destinations[0].mq.format: must be one of 'flat_message' or 'protobuf'"
