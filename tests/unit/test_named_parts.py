"""The configuration selects every registered part by name: each config ``Literal`` is exactly
its registry's keys (the output format, the meta store, the broker), so a name the config
takes always resolves, and a registered part is always reachable from the config."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from bridge.check import CheckResult, report, run_checks
from bridge.config import BridgeConfig, MetaConfig, MqConfig, parse_config
from bridge.meta.factory import CURSOR_STORES, MEMORY
from bridge.mq.formats import ENCODERS
from bridge.mq.senders import SENDERS


def names(model: Any, field: str) -> set[str]:
    return set(get_args(model.model_fields[field].annotation))


def test_mq_format_is_the_encoders_registry() -> None:
    assert names(MqConfig, "format") == set(ENCODERS)


def test_meta_store_is_memory_and_the_cursor_stores_registry() -> None:
    assert names(MetaConfig, "store") == {MEMORY, *CURSOR_STORES}
    assert MEMORY not in CURSOR_STORES


def test_broker_is_the_senders_registry() -> None:
    assert names(BridgeConfig, "broker") == set(SENDERS)


def test_an_unknown_broker_names_the_registered_ones() -> None:
    data = {
        "broker": "rabbit",
        "kafka": {"bootstrap_servers": "127.0.0.1:1"},
        "destinations": [
            {
                "name": "example",
                "source": {"address": "127.0.0.1:3306", "username": "u", "slave_id": 9},
                "mq": {"topic": "t"},
            }
        ],
    }
    with pytest.raises(Exception, match="broker: must be one of 'kafka' or 'memory'"):
        parse_config(data, environ={})
    del data["broker"]
    assert parse_config(data, environ={}).broker == "kafka"
    data["broker"] = "memory"
    config = parse_config(data, environ={})

    def no_kafka(*_: object, **__: object) -> list[CheckResult]:
        raise AssertionError("the memory broker has no Kafka cluster to check")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "check_source", lambda destination: [])
        patch.setattr(report, "check_kafka", no_kafka)
        (result,) = run_checks(config)
    assert (result.scope, result.check, result.outcome) == ("memory", "broker", "SKIP")
