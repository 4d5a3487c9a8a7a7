"""Fixtures of the HA tests: sessions on the shared ZooKeeper, each test under its own root."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bridge.ha import ZkLayout, ZkSession


@pytest.fixture
def zk_root(zookeeper_hosts: str) -> Iterator[str]:
    """A fresh root below /canal-bridge-test, deleted afterwards."""
    root = f"/canal-bridge-test/{uuid.uuid4().hex[:12]}"
    yield root
    client = KazooClient(zookeeper_hosts)
    client.start(10)
    try:
        client.delete(root, recursive=True)
    except NoNodeError:
        pass  # nothing was created
    finally:
        client.stop()
        client.close()


@pytest.fixture
def layout(zk_root: str) -> ZkLayout:
    return ZkLayout(zk_root)


@pytest.fixture
def new_session(zookeeper_hosts: str) -> Iterator[Callable[..., ZkSession]]:
    """Start ZooKeeper sessions (4 s timeout by default); all are closed afterwards."""
    sessions: list[ZkSession] = []

    def make(hosts: str = zookeeper_hosts, timeout_ms: int = 4000) -> ZkSession:
        session = ZkSession(hosts, timeout_ms)
        session.start()
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.stop()


def eventually(predicate: Callable[[], object], timeout_s: float, what: str) -> float:
    """Poll ``predicate`` until true; returns the seconds it took, fails after ``timeout_s``."""
    started = time.monotonic()
    while not predicate():
        elapsed = time.monotonic() - started
        assert elapsed < timeout_s, f"not within {timeout_s}s: {what}"
        time.sleep(0.05)
    return time.monotonic() - started
