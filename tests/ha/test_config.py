"""The zookeeper section and meta.store zookeeper: parsed, validated, documented defaults."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bridge.config import InvalidConfig, parse_config
from bridge.ha import node_address


def _config(**top: Any) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "destinations": [
            {
                "name": "d1",
                "source": {"address": "db:3306", "username": "canal", "slave_id": 7},
                "mq": {"topic": "t"},
            }
        ],
        **top,
    }


def test_ha_is_off_without_the_section() -> None:
    assert parse_config(_config()).zookeeper is None


def test_zookeeper_section_with_defaults() -> None:
    config = parse_config(_config(zookeeper={"hosts": "zk1:2181, zk2:2181"}))
    assert config.zookeeper is not None
    assert config.zookeeper.hosts == "zk1:2181,zk2:2181"
    assert config.zookeeper.session_timeout_ms == 30_000
    assert config.zookeeper.root == "/otter/canal"
    assert config.zookeeper.address is None


def test_zookeeper_store_needs_the_section() -> None:
    with pytest.raises(InvalidConfig) as caught:
        parse_config(_config(meta={"store": "zookeeper"}))
    assert any(p.startswith("meta.store: 'zookeeper' needs") for p in caught.value.problems)
    config = parse_config(_config(meta={"store": "zookeeper"}, zookeeper={"hosts": "zk:2181"}))
    assert config.meta.store == "zookeeper"


@pytest.mark.parametrize(
    ("key", "value", "path"),
    [
        ("hosts", "nohost", "zookeeper.hosts"),
        ("root", "otter/canal", "zookeeper.root"),
        ("root", "/otter//canal", "zookeeper.root"),
        ("root", "/", "zookeeper.root"),
        ("session_timeout_ms", 10, "zookeeper.session_timeout_ms"),
        ("address", "no-port", "zookeeper.address"),
        ("chroot", "/x", "zookeeper.chroot"),
    ],
)
def test_bad_zookeeper_values_name_their_path(key: str, value: object, path: str) -> None:
    section = {"hosts": "zk:2181", key: value}
    with pytest.raises(InvalidConfig) as caught:
        parse_config(_config(zookeeper=section))
    assert any(p.startswith(path) for p in caught.value.problems), caught.value.problems


def test_node_address_prefers_config_then_admin_then_pid() -> None:
    explicit = parse_config(_config(zookeeper={"hosts": "zk:2181", "address": "10.0.0.5:11111"}))
    assert node_address(explicit) == "10.0.0.5:11111"
    admin = parse_config(_config(zookeeper={"hosts": "zk:2181"}, admin={"listen": "1.2.3.4:9"}))
    assert node_address(admin) == "1.2.3.4:9"
    wildcard = parse_config(_config(zookeeper={"hosts": "zk:2181"}, admin={"listen": "0.0.0.0:9"}))
    assert not node_address(wildcard).startswith("0.0.0.0") and node_address(wildcard).endswith(
        ":9"
    )
    no_admin = parse_config(_config(zookeeper={"hosts": "zk:2181"}, admin={"listen": None}))
    assert node_address(no_admin).endswith(f":{os.getpid()}")
