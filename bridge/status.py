"""``canal-bridge status``: each destination's acked cursor and its distance to the source."""

from __future__ import annotations

import time
from typing import TextIO

from bridge.config import BridgeConfig, DestinationConfig
from bridge.exceptions import BridgeError
from bridge.meta import codec
from bridge.meta.file_mixed import META_FILE
from bridge.parse.source import master_position, open_connection
from bridge.position import LogPosition


def stored_cursor(config: BridgeConfig, destination: str) -> LogPosition | None:
    """The acked cursor of the destination's MQ client, as the file meta store holds it."""
    path = config.meta.dir / destination / META_FILE
    if config.meta.store != "file" or not path.exists():
        return None
    _, clients = codec.loads_meta_file(path.read_bytes())
    cursors = [cursor for _, cursor in clients if cursor is not None]
    return min(cursors, key=lambda c: c.position.sort_key()) if cursors else None


def describe(config: BridgeConfig, destination: DestinationConfig) -> str:
    cursor = stored_cursor(config, destination.name)
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
    try:
        with open_connection(destination.source) as conn:
            end = master_position(conn)
        source_end = f"{end.journal_name}:{end.position}"
    except (BridgeError, OSError) as exc:
        source_end = f"unreachable ({exc})"
    return (
        f"{destination.name}: cursor {where}, cursor time lag {lag}, "
        f"source {destination.source.address} at {source_end}"
    )


def print_status(config: BridgeConfig, out: TextIO) -> None:
    for destination in config.destinations:
        out.write(describe(config, destination) + "\n")
