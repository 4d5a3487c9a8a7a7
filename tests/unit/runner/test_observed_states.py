"""How the admin endpoint sees a destination that has no instance running: paused with its
stored cursor, failed to start with its error on one line, or about to start."""

from __future__ import annotations

from bridge.admin import RunnerObserver
from bridge.config import InvalidConfig, parse_config
from bridge.position import EntryPosition
from bridge.runner import Runner


def _runner() -> Runner:
    return Runner(
        parse_config(
            {
                "kafka": {"bootstrap_servers": "127.0.0.1:1"},
                "meta": {"store": "memory"},
                "admin": {"listen": None},
                "destinations": [
                    {
                        "name": name,
                        "source": {"address": "127.0.0.1:1", "username": "u", "slave_id": i},
                        "mq": {"topic": "t"},
                    }
                    for i, name in enumerate(("paused", "broken", "new"), start=1)
                ],
            }
        )
    )


def test_paused_failed_and_starting_destinations_without_an_instance() -> None:
    runner = _runner()
    cursor = EntryPosition(journal_name="mysql-bin.000003", position=1234)
    runner.paused["paused"] = cursor
    runner.start_errors["broken"] = InvalidConfig("source", ["one: bad", "two: worse"])
    snapshots = {s.destination: s for s in RunnerObserver(runner).snapshots()}
    assert (snapshots["paused"].state, snapshots["paused"].cursor) == ("paused", cursor)
    assert snapshots["broken"].state == "failed"
    assert snapshots["broken"].error == (
        "source: invalid configuration (2 problems); one: bad; two: worse"
    )
    assert (snapshots["new"].state, snapshots["new"].error) == ("starting", None)
    assert runner.failed() == ["broken"]
    assert runner.alive()  # a paused destination keeps the process up
