"""The operator's actions refused before anything is touched: no source, broker or meta store
is reached for these, so a refusal leaves every cursor as it was."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.config import parse_config
from bridge.exceptions import ActionRefused
from bridge.instance import UnknownDestination
from bridge.runner import Runner


def _runner(meta: str = "file", **mq: Any) -> Runner:
    return Runner(
        parse_config(
            {
                "kafka": {"bootstrap_servers": "127.0.0.1:1"},
                "meta": {"store": meta, "dir": "/nonexistent"},
                "admin": {"listen": None},
                "destinations": [
                    {
                        "name": "d",
                        "source": {"address": "127.0.0.1:1", "username": "u", "slave_id": 7},
                        "mq": {"topic": "t", **mq},
                    }
                ],
            }
        )
    )


def test_an_unknown_destination_is_named() -> None:
    runner = _runner()
    for action in (runner.pause, runner.resume):
        with pytest.raises(UnknownDestination, match="nope"):
            action("nope")
    with pytest.raises(UnknownDestination, match="nope"):
        runner.move_cursor("nope", "mysql-bin.000001:4")


def test_a_malformed_target_is_refused_naming_the_forms() -> None:
    with pytest.raises(ActionRefused, match=r"destination d: 'later' is not .* file:position"):
        _runner().move_cursor("d", "later")


def test_an_exactly_once_cursor_is_not_rewritten() -> None:
    with pytest.raises(ActionRefused, match=r"exactly_once: .*offsets topic.*new name"):
        _runner(delivery="exactly_once").move_cursor("d", "mysql-bin.000001:4")


def test_a_memory_meta_store_can_neither_pause_nor_move() -> None:
    runner = _runner(meta="memory")
    with pytest.raises(ActionRefused, match=r"meta\.store memory keeps none"):
        runner.pause("d")
    with pytest.raises(ActionRefused, match=r"meta\.store memory keeps none"):
        runner.move_cursor("d", "mysql-bin.000001:4")
