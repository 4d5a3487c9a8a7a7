"""``canal-bridge snapshot``: ask the process running a destination to snapshot tables again
(docs/snapshots.md, "On demand").

With HA (a ``zookeeper`` section) the request is a ZooKeeper node the active process performs
(``bridge.ha.snapshot_requests``): whichever process runs the destination, now or after a
fail-over. Without, it is ``POST /destinations/<d>/snapshot`` on ``admin.listen``
(``bridge.admin.client``). One line of result; exit 0 when the destination took the request,
1 when it refused or could not be reached, 2 for a bad command line or config.
"""

from __future__ import annotations

import contextlib
from typing import TextIO

from kazoo.exceptions import KazooException, NoNodeError

from bridge.admin.client import post_snapshot_request
from bridge.config import BridgeConfig
from bridge.exceptions import BridgeError
from bridge.snapshot.requests import parse_tables

OK, FAILED, USAGE = 0, 1, 2


def request_snapshot(
    config: BridgeConfig,
    destination: str,
    tables_text: str,
    *,
    timeout_s: float,
    out: TextIO,
    err: TextIO,
) -> int:
    """Send the request; print one line (to ``out``, or ``err`` for an error); the exit code."""
    try:
        tables = parse_tables(tables_text)
    except ValueError as exc:
        err.write(f"error: --{exc}\n")
        return USAGE
    if destination not in {d.name for d in config.destinations}:
        names = ", ".join(d.name for d in config.destinations)
        err.write(f"error: --destination {destination}: not in the config (it has: {names})\n")
        return USAGE
    if config.zookeeper is not None:
        return _through_zookeeper(
            config, destination, tables, timeout_s=timeout_s, out=out, err=err
        )
    if config.admin.listen is None:
        err.write(
            "error: admin.listen is null and there is no zookeeper section: nothing to send "
            "the request to; set admin.listen (and admin.token_file) on the running process\n"
        )
        return USAGE
    return _through_admin(config, destination, tables, timeout_s=timeout_s, out=out, err=err)


def _through_admin(
    config: BridgeConfig,
    destination: str,
    tables: tuple[str, ...],
    *,
    timeout_s: float,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        status, document = post_snapshot_request(config.admin, destination, tables, timeout_s)
    except (OSError, BridgeError) as exc:
        reason = getattr(exc, "reason", None) or exc
        err.write(f"error: the admin endpoint on {config.admin.listen} did not answer ({reason})\n")
        return FAILED
    if status == 202:
        taken = ", ".join(str(t) for t in document.get("tables", []))  # type: ignore[attr-defined]
        state = (
            "its cursor carries the plan"
            if document.get("persisted")
            else "queued in the running destination (not yet in its cursor)"
        )
        out.write(f"destination {destination}: snapshot of {taken} started; {state}\n")
        return OK
    err.write(f"error: {status}: {document.get('error', document)}\n")
    return FAILED


def _through_zookeeper(
    config: BridgeConfig,
    destination: str,
    tables: tuple[str, ...],
    *,
    timeout_s: float,
    out: TextIO,
    err: TextIO,
) -> int:
    from bridge.ha.paths import ZkLayout
    from bridge.ha.session import ZkSession
    from bridge.ha.snapshot_requests import wait_for_request, write_request

    zookeeper = config.zookeeper
    assert zookeeper is not None
    layout = ZkLayout(zookeeper.root)
    session = ZkSession(zookeeper.hosts, zookeeper.session_timeout_ms)
    try:
        session.start()
        with session.errors("writing the snapshot request"):
            path = write_request(session.client, layout, destination, tables)
            node = wait_for_request(session.client, path, timeout_s)
            if node is not None and node.refused is not None:
                with contextlib.suppress(NoNodeError):
                    session.client.delete(path)
    except (BridgeError, KazooException) as exc:
        err.write(f"error: {exc}\n")
        return FAILED
    finally:
        session.stop()
    names = ", ".join(tables)
    if node is None:
        out.write(
            f"destination {destination}: snapshot of {names} started by the process running "
            "it (requested through ZooKeeper)\n"
        )
        return OK
    if node.refused is not None:
        err.write(f"error: {node.refused}\n")
        return FAILED
    out.write(
        f"error: destination {destination}: request {path} not performed within "
        f"{timeout_s:.0f} s (is a process running the destination?); it stays in ZooKeeper "
        "and is performed when one does\n"
    )
    return FAILED
