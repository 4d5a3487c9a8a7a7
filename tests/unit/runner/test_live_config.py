"""Checking and applying a new configuration text without services: what it would change,
the refusals that leave the running configuration alone, and the file written atomically."""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import (
    ConfigChange,
    DestinationConfig,
    InvalidConfig,
    load_config,
    parse_config,
)
from bridge.exceptions import ActionRefused, BridgeError, ConfigError
from bridge.runner import Runner
from bridge.runner.config_file import write_atomically


def _document(*names: str, topic: str = "t") -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": "127.0.0.1:1"},
        "meta": {"store": "memory"},
        "admin": {"listen": None},
        "destinations": [
            {
                "name": name,
                "source": {"address": "127.0.0.1:1", "username": "u", "slave_id": 7 + i},
                "mq": {"topic": f"{topic}-{name}"},
            }
            for i, name in enumerate(names)
        ],
    }


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    path = tmp_path / "destinations.yaml"
    path.write_text(yaml.safe_dump(_document("a", "b", "c")))
    path.chmod(0o640)
    return Runner(load_config(path), path)


def test_check_says_what_would_change_and_applies_nothing(runner: Runner) -> None:
    document = _document("a", "c", "d")
    document["destinations"][1]["mq"]["topic"] = "elsewhere"
    change = runner.check_config(yaml.safe_dump(document))
    assert change == ConfigChange(added=("d",), removed=("b",), changed=("c",), unchanged=("a",))
    assert change.describe() == "added d; removed b; changed c"
    assert [d.name for d in runner.config.destinations] == ["a", "b", "c"]


def test_a_bad_text_is_refused_with_every_problem_and_nothing_is_written(
    runner: Runner,
) -> None:
    path = runner.live.path
    assert path is not None
    before = path.read_text()
    document = _document("a", "b")
    document["destinations"][1]["batch_size"] = 0
    document["kafka"]["bootstrap_servers"] = "127.0.0.1:2"
    with pytest.raises(InvalidConfig) as caught:
        runner.apply_config(yaml.safe_dump(document))
    problems = caught.value.problems
    assert [p.split(":")[0] for p in problems] == ["destinations[1].batch_size"], problems
    document["destinations"][1]["batch_size"] = 1
    with pytest.raises(InvalidConfig, match=r"kafka: changed; .*restart it"):
        runner.apply_config(yaml.safe_dump(document))
    with pytest.raises(ConfigError, match="YAML syntax error"):
        runner.apply_config("destinations: [")
    assert path.read_text() == before
    assert [d.name for d in runner.config.destinations] == ["a", "b", "c"]


def test_an_applied_text_is_written_with_the_files_permissions_then_run(runner: Runner) -> None:
    path = runner.live.path
    assert path is not None
    text = yaml.safe_dump(_document("a", "b"))
    assert runner.apply_config(text).describe() == "removed c"
    assert path.read_text() == text
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [d.name for d in runner.config.destinations] == ["a", "b"]
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_a_runner_without_a_file_checks_but_does_not_apply() -> None:
    runner = Runner(parse_config(_document("a")))
    assert runner.check_config(yaml.safe_dump(_document("a", "b"))).added == ("b",)
    with pytest.raises(ActionRefused, match="without a configuration file"):
        runner.apply_config(yaml.safe_dump(_document("a", "b")))


def test_a_file_that_cannot_be_written_is_refused_in_one_line(tmp_path: Path) -> None:
    target = tmp_path / "gone" / "destinations.yaml"  # a folder unmounted meanwhile
    with pytest.raises(ActionRefused, match=r"cannot write .*nothing was applied") as caught:
        write_atomically(target, "new")
    assert "\n" not in str(caught.value)


def test_the_watch_acts_once_per_content_and_logs_a_bad_file_once(
    runner: Runner, caplog: pytest.LogCaptureFixture
) -> None:
    path = runner.live.path
    assert path is not None
    caplog.set_level(logging.INFO, logger="bridge.runner.reload")
    runner.live.poll()
    assert caplog.messages == []  # the content it runs
    bad = _document("a", "b")
    bad["destinations"][0]["batch_size"] = 0
    path.write_text(yaml.safe_dump(bad))
    for _ in range(2):
        runner.live.poll()
    assert caplog.messages == [
        f"{path}: invalid configuration (1 problem):",
        "destinations[0].batch_size: must be >= 1",
        f"{path}: the running configuration is unchanged",
    ]
    runner.live.poll(force=True)  # SIGHUP: read and reported again
    assert len(caplog.messages) == 6
    caplog.clear()
    path.unlink()
    for _ in range(2):
        runner.live.poll()
    assert caplog.messages == [
        f"{path}: cannot read the file: No such file or directory",
        f"{path}: the running configuration is unchanged",
    ]
    caplog.clear()
    path.write_text(yaml.safe_dump(_document("a", "b")))
    runner.live.poll()
    assert caplog.messages == ["configuration reloaded: removed c"]
    assert [d.name for d in runner.config.destinations] == ["a", "b"]


def test_a_destination_that_cannot_start_is_failed_and_the_others_start(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []

    def start(destination: DestinationConfig) -> None:
        if destination.name == "e":
            raise BridgeError("e: the producer cannot be made; fix its mq section")
        started.append(destination.name)

    monkeypatch.setattr(runner, "_start_destination", start)
    text = yaml.safe_dump(_document("a", "b", "c", "d", "e", "f"))
    assert runner.apply_config(text).added == ("d", "e", "f")
    assert started == ["d", "f"]
    assert [d.name for d in runner.config.destinations] == ["a", "b", "c", "d", "e", "f"]
    assert runner.failed() == ["e"] and "fix its mq section" in str(runner.start_errors["e"])
    assert runner.apply_config(yaml.safe_dump(_document("a", "b"))).removed == ("c", "d", "e", "f")
    assert runner.failed() == []
