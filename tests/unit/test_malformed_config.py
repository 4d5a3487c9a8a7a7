"""The malformed-config table: what ``canal-bridge validate`` prints for each kind of broken
file. Every case exits 2 with no traceback, and its problem is one line that starts with the
place in the file (the key path, or the file for a file-level problem) and says what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from bridge.cli import app
from tests.unit.test_config import base, with_

SECRET = "n0t-a-Real-Pa55"


def _destination(**changes: Any) -> dict[str, Any]:
    data = base()
    data["destinations"][0].update(changes)
    return data


def _two_named(name: str) -> dict[str, Any]:
    data = base()
    source = dict(data["destinations"][0]["source"], slave_id=4321)
    data["destinations"].append(dict(data["destinations"][0], name=name, source=source))
    return data


# (id, the file's content: YAML text or data to dump, where the problem is, words it must say)
CASES: list[tuple[str, str | dict[str, Any], str, str]] = [
    ("yaml-syntax", "kafka: [unclosed\n", "{file}", "YAML"),
    ("not-a-mapping", "- just\n- a list\n", "{file}", "mapping"),
    ("empty-file", "", "{file}", "empty"),
    ("no-kafka", {"destinations": base()["destinations"]}, "kafka", "required"),
    ("no-destinations", {"kafka": base()["kafka"]}, "destinations", "required"),
    ("empty-destinations", with_("destinations", []), "destinations", "at least one"),
    ("unknown-top-key", with_("kafak", {}), "kafak", "did you mean kafka?"),
    ("unknown-destination-key", with_("destinations.0.topic", "x"), "destinations[0].topic", ""),
    ("duplicate-names", _two_named("example"), "destinations", "example"),
    ("name-with-slash", with_("destinations.0.name", "a/b"), "destinations[0].name", ""),
    ("address-no-port", with_("destinations.0.source.address", "db"), "source.address", "port"),
    ("port-too-big", with_("destinations.0.source.address", "db:70000"), "source.address", ""),
    ("slave-id-zero", with_("destinations.0.source.slave_id", 0), "source.slave_id", ""),
    ("username-empty", with_("destinations.0.source.username", ""), "source.username", ""),
    (
        "password-and-file",
        with_(
            "destinations.0.source.password_file",
            "/etc/hostname",
            with_("destinations.0.source.password", SECRET),
        ),
        "source",
        "password_file",
    ),
    (
        "password-file-missing",
        with_("destinations.0.source.password_file", "/nonexistent/canal.pw"),
        "source.password_file",
        "/nonexistent/canal.pw",
    ),
    (
        "env-not-set",
        with_("destinations.0.source.password", "${CANAL_BRIDGE_NO_SUCH_VARIABLE}"),
        "source.password",
        "CANAL_BRIDGE_NO_SUCH_VARIABLE",
    ),
    ("position-without-file", with_("destinations.0.start.position", 4), "start", "journal_name"),
    (
        "position-below-4",
        with_("destinations.0.start", {"journal_name": "b.1", "position": 3}),
        "start.position",
        "",
    ),
    ("bad-regex", with_("destinations.0.filter.regex", "demo\\.(t"), "filter.regex", ""),
    ("bad-field-filter", with_("destinations.0.filter.field", "demo.t:"), "filter.field", ""),
    (
        "buffer-not-power-of-2",
        with_("destinations.0.store.buffer_size", 1000),
        "store.buffer_size",
        "power of two",
    ),
    ("store-mode", with_("destinations.0.store.mode", "BYTES"), "store.mode", "ITEMSIZE"),
    (
        "batch-over-store",
        _destination(batch_size=4096, store={"buffer_size": 1024}),
        "destinations[0]",
        "lower batch_size or raise store.buffer_size",
    ),
    ("topic-chars", with_("destinations.0.mq.topic", "a topic"), "mq.topic", ""),
    ("partition-out-of-range", with_("destinations.0.mq.partition", 3), "mq", "partitions"),
    (
        "partition-hash",
        with_("destinations.0.mq.partition_hash", "demo\\..*:"),
        "mq.partition_hash",
        "",
    ),
    ("dynamic-topic", with_("destinations.0.mq.dynamic_topic", "t:("), "mq.dynamic_topic", ""),
    ("ddl-empty-topic", with_("destinations.0.mq.ddl", "topic:"), "mq.ddl", ""),
    ("oversize-policy", with_("destinations.0.mq.oversize", "drop"), "mq.oversize", "split"),
    ("delivery", with_("destinations.0.mq.delivery", "twice"), "mq.delivery", "exactly_once"),
    ("value-mode", with_("destinations.0.mq.value_mode", "java"), "mq.value_mode", "canal"),
    ("on-purged", _destination(on_purged="skip"), "on_purged", "oldest"),
    ("time-zone", _destination(timestamp_time_zone="Mars/Olympus"), "timestamp_time_zone", ""),
    ("meta-store", with_("meta.store", "redis"), "meta.store", "file"),
    (
        "zookeeper-root",
        with_("zookeeper", {"hosts": "127.0.0.1:2181", "root": "otter"}),
        "zookeeper.root",
        "absolute",
    ),
    ("admin-listen", with_("admin.listen", "nohost"), "admin.listen", ""),
    ("kafka-bootstrap", with_("kafka.bootstrap_servers", ""), "kafka.bootstrap_servers", ""),
    ("zookeeper-store-without-zookeeper", with_("meta.store", "zookeeper"), "meta", "zookeeper"),
]


@pytest.mark.parametrize(
    ("content", "where", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_malformed_file_gives_one_line_with_its_place(
    tmp_path: Path, content: str | dict[str, Any], where: str, says: str
) -> None:
    path = tmp_path / "destinations.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    result = CliRunner().invoke(app, ["validate", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    output = result.stderr
    assert "Traceback" not in output and SECRET not in output
    *_, problem = output.strip().splitlines()
    problem = problem.strip().removeprefix("error: ")
    assert problem.startswith(where.format(file=path)) or f"{where}:" in problem, output
    assert says in problem, output


def test_the_table_is_as_long_as_promised() -> None:
    assert len(CASES) >= 30
    assert len({case[0] for case in CASES}) == len(CASES)
