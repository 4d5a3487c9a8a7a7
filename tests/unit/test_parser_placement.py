"""``parser_process: auto``: a child process per destination while a process has no more
destinations than cores, a thread each beyond (many quiet destinations)."""

from __future__ import annotations

import pytest

from bridge.config import BridgeConfig
from bridge.runner import parser_placement


def _config(parser_process: object, count: int) -> BridgeConfig:
    destinations = [
        {
            "name": f"d{i}",
            "source": {
                "address": "127.0.0.1:3306",
                "username": "canal",
                "password": "x",
                "slave_id": 100 + i,
            },
            "mq": {"topic": "t"},
            "parser_process": parser_process,
        }
        for i in range(count)
    ]
    return BridgeConfig.model_validate(
        {"kafka": {"bootstrap_servers": "127.0.0.1:9092"}, "destinations": destinations}
    )


@pytest.mark.parametrize(("count", "in_child"), [(1, True), (2, True), (3, False), (100, False)])
def test_auto_takes_a_child_per_destination_up_to_the_cores(
    monkeypatch: pytest.MonkeyPatch, count: int, in_child: bool
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    config = _config("auto", count)
    placed = {
        parser_placement(d, len(config.destinations)).parser_process for d in config.destinations
    }
    assert placed == {in_child}


@pytest.mark.parametrize("chosen", [True, False])
def test_a_chosen_placement_is_kept(monkeypatch: pytest.MonkeyPatch, chosen: bool) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    for count in (1, 100):
        config = _config(chosen, count)
        (first, *_) = config.destinations
        assert parser_placement(first, count).parser_process is chosen
