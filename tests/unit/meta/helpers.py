"""Positions and ranges for the meta tests, and a scratch root on the real ZooKeeper."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bridge.position import EntryPosition, LogIdentity, LogPosition, PositionRange

IDENTITY = LogIdentity("127.0.0.1:3306", 1234)


def pos(offset: int, file: str = "mysql-bin.000001", **kw: object) -> LogPosition:
    return LogPosition(
        IDENTITY,
        EntryPosition(
            journal_name=file,
            position=offset,
            server_id=1,
            timestamp=1_700_000_000_000 + offset,
            **kw,  # type: ignore[arg-type]
        ),
    )


def span(start: int, end: int, ack: int | None = None) -> PositionRange:
    return PositionRange(pos(start), pos(end), None if ack is None else pos(ack))


@contextmanager
def scratch_zookeeper(hosts: str) -> Iterator[tuple[KazooClient, str]]:
    """A started client and a fresh root below /canal-bridge-test, deleted afterwards."""
    root = f"/canal-bridge-test/{uuid.uuid4().hex[:12]}"
    client = KazooClient(hosts)
    client.start(10)
    try:
        yield client, root
    finally:
        try:
            client.delete(root, recursive=True)
        except NoNodeError:
            pass  # nothing was created
        finally:
            client.stop()
            client.close()
