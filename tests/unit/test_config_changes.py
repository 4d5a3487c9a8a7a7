"""What a new file changes against the running configuration (``bridge.config.changes``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bridge.config import BridgeConfig, InvalidConfig, config_change, parse_config
from tests.unit.test_config import base, with_


def destination(name: str, slave_id: int, topic: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "source": {"address": "127.0.0.1:3306", "username": "canal", "slave_id": slave_id},
        "mq": {"topic": topic or name},
    }


def config(*destinations: dict[str, Any], data: dict[str, Any] | None = None) -> BridgeConfig:
    data = copy.deepcopy(data if data is not None else base())
    data["destinations"] = list(destinations)
    return parse_config(data, environ={})


def test_added_removed_changed_and_unchanged_destinations_in_file_order() -> None:
    running = config(destination("a", 1), destination("b", 2), destination("c", 3))
    new = config(destination("d", 4), destination("c", 3), destination("a", 1, topic="a2"))
    change = config_change(running, new, "destinations.yaml")
    assert (change.added, change.removed, change.changed, change.unchanged) == (
        ("d",),
        ("b",),
        ("a",),
        ("c",),
    )
    assert change.describe() == "added d; removed b; changed a"
    assert not change.empty


def test_the_same_file_changes_nothing() -> None:
    running = config(destination("a", 1))
    change = config_change(running, config(destination("a", 1)), "destinations.yaml")
    assert change.empty
    assert change.describe() == "no change"
    assert change.unchanged == ("a",)


@pytest.mark.parametrize(
    ("path", "value"),
    [("kafka.bootstrap_servers", "127.0.0.1:9093"), ("meta.dir", "/elsewhere")],
)
def test_a_shared_section_changed_refuses_the_whole_file(path: str, value: object) -> None:
    running = config(destination("a", 1))
    new = config(destination("a", 1), destination("b", 2), data=with_(path, value))
    with pytest.raises(InvalidConfig) as info:
        config_change(running, new, "destinations.yaml")
    section = path.split(".", maxsplit=1)[0]
    assert info.value.problems == (
        f"{section}: changed; a running canal-bridge applies changes to destinations only: "
        f"restart it to apply a new {section} section, or undo the change",
    )
