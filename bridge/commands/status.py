"""``canal-bridge status``: each destination's acked cursor and its distance to the source.

With a ``zookeeper`` section it also shows the HA cluster: the live processes, and per
destination the process running it (its running node) and the ones standing by.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, TextIO

import pymysql

from bridge.config import BridgeConfig, DestinationConfig
from bridge.exceptions import BridgeError
from bridge.meta import codec
from bridge.meta.file_store import META_FILE
from bridge.parse.source import binlog_status, open_connection, translate_error
from bridge.position import LogPosition

if TYPE_CHECKING:
    from bridge.ha import ClusterView, ZkSession


def stored_cursor(
    config: BridgeConfig, destination: str, zk: ZkSession | None = None
) -> LogPosition | None:
    """The acked cursor of the destination's MQ client, as the file (or ZooKeeper) meta store
    holds it."""
    if config.meta.store == "zookeeper" and zk is not None and config.zookeeper is not None:
        return _zookeeper_cursor(zk, config.zookeeper.root, destination)
    path = config.meta.dir / destination / META_FILE
    if config.meta.store != "file" or not path.exists():
        return None
    _, clients = codec.loads_meta_file(path.read_bytes())
    cursors = [cursor for _, cursor in clients if cursor is not None]
    return min(cursors, key=lambda c: c.position.sort_key()) if cursors else None


def _zookeeper_cursor(zk: ZkSession, root: str, destination: str) -> LogPosition | None:
    from kazoo.exceptions import NoNodeError

    from bridge.ha import ZkLayout
    from bridge.meta.base import MQ_CLIENT_ID

    path = ZkLayout(root).cursor(destination, MQ_CLIENT_ID)
    with zk.errors(f"reading {path}"):
        try:
            data, _ = zk.client.get(path)
        except NoNodeError:
            return None
    return codec.loads_log_position(data) if data else None


def describe(
    config: BridgeConfig, destination: DestinationConfig, zk: ZkSession | None = None
) -> str:
    cursor = stored_cursor(config, destination.name, zk)
    if cursor is None:
        where, lag = "no cursor yet", "-"
    else:
        position = cursor.position
        where = f"{position.journal_name}:{position.position}"
        if position.gtid:
            where += f" gtid={position.gtid}"
        lag = "-"
        if position.timestamp:
            lag = f"{max(0.0, time.time() - position.timestamp / 1000):.1f}s"
    return (
        f"{destination.name}: cursor {where}, cursor time lag {lag}, "
        f"source {destination.source.address} {_source_end(destination)}"
    )


def _source_end(destination: DestinationConfig) -> str:
    """``at <file>:<offset> [gtid=<set>]``, or why the source could not say."""
    source = destination.source
    try:
        with open_connection(source) as conn:
            end = binlog_status(conn)
    except pymysql.MySQLError as exc:
        return f"not read ({translate_error(exc, source)})"
    except (BridgeError, OSError) as exc:
        return f"not read ({exc})"
    text = f"at {end.position.journal_name}:{end.position.position}"
    return f"{text} gtid={end.gtid_set}" if end.gtid_set else text


def describe_cluster(view: ClusterView, root: str) -> list[str]:
    """The HA lines: live processes, then who runs and who stands by per destination."""
    servers = ", ".join(view.servers) or "none"
    lines = [f"cluster {root}: {len(view.servers)} live process(es): {servers}"]
    for item in view.destinations:
        running = "nobody"
        if item.running is not None:
            running = f"{item.running.address} (cid {item.running.cid})"
        standbys = ", ".join(item.standbys) or "none"
        lines.append(f"{item.destination}: running on {running}; standby: {standbys}")
    return lines


def print_status(config: BridgeConfig, out: TextIO) -> None:
    if config.zookeeper is None:
        for destination in config.destinations:
            out.write(describe(config, destination) + "\n")
        return
    from bridge.ha import ZkLayout, ZkSession, read_cluster

    zookeeper = config.zookeeper
    logging.getLogger("bridge.ha.kazoo").setLevel(logging.ERROR)  # no retry chatter here
    zk = ZkSession(zookeeper.hosts, zookeeper.session_timeout_ms, connect_timeout_s=5)
    zk.start()
    try:
        names = [d.name for d in config.destinations]
        view = read_cluster(zk, ZkLayout(zookeeper.root), names)
        for line in describe_cluster(view, zookeeper.root):
            out.write(line + "\n")
        for destination in config.destinations:
            out.write(describe(config, destination, zk) + "\n")
    finally:
        zk.stop()
