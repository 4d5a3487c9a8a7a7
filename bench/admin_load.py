"""Load on the admin endpoint: 1,000 scrapers, idle connections, clients hanging up early.

    var/venv/bin/python -m bench.admin_load                       # spawns a server, 1,000 clients
    var/venv/bin/python -m bench.admin_load --url http://127.0.0.1:11112   # a running bridge

Without ``--url`` it starts ``AdminServer`` with three fake destinations in a child process
(``--serve PORT`` is that child: the clients must not share its interpreter lock) and reads
the child's stderr afterwards. Three phases:

1. scrape: ``--clients`` tasks each loop for ``--seconds``: connect, ``GET /metrics``, read
   the whole answer, close. Every scrape is a new connection, so scrapes/s is the new
   connections/s accepted and served (the issue's figure: ~6/s from the stdlib server).
2. idle: ``--idle`` connections that never send a byte; how many the server closed within
   ``--idle-wait`` seconds (the stdlib server held them forever).
3. hang-ups: ``--hangups`` clients sending half a request, or a whole one and resetting the
   connection; then one normal request must still be answered, and the child's stderr must
   hold no traceback (the stdlib server printed 21 lines per hang-up).

Prints one line per phase and exits 1 if the server stopped answering or printed a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"


@dataclass
class Tally:
    scrapes: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)

    def failed(self, exc: BaseException) -> None:
        self.errors += 1
        kind = type(exc).__name__
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


async def _scrape_once(host: str, port: int, timeout_s: float) -> None:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        writer.write(REQUEST)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout_s)  # until the server closes
        if not answer.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
            raise ValueError(answer[:40])
    finally:
        writer.close()


async def _scraper(host: str, port: int, deadline: float, tally: Tally) -> None:
    while time.monotonic() < deadline:
        try:
            await _scrape_once(host, port, 10.0)
            tally.scrapes += 1
        except (OSError, TimeoutError, ValueError) as exc:
            tally.failed(exc)
            await asyncio.sleep(0.05)


async def scrape_phase(host: str, port: int, clients: int, seconds: float) -> Tally:
    tally = Tally()
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(_scraper(host, port, deadline, tally) for _ in range(clients)))
    return tally


async def idle_phase(host: str, port: int, count: int, wait_s: float) -> tuple[int, int]:
    """(connections opened, closed by the server within ``wait_s``)."""
    opened = []
    for _ in range(count):
        try:
            opened.append(await asyncio.open_connection(host, port))
        except OSError:
            break

    async def closed(reader: asyncio.StreamReader) -> bool:
        try:
            return await asyncio.wait_for(reader.read(1), wait_s) == b""
        except (TimeoutError, OSError):
            return False

    results = await asyncio.gather(*(closed(reader) for reader, _ in opened))
    for _, writer in opened:
        writer.close()
    return len(opened), sum(results)


def hangup_phase(host: str, port: int, count: int) -> None:
    linger_reset = struct.pack("ii", 1, 0)
    for index in range(count):
        with socket.create_connection((host, port), timeout=5) as conn:
            if index % 2:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger_reset)
                conn.sendall(REQUEST)
            else:
                conn.sendall(REQUEST[:20])


def serve(port: int) -> None:
    """The child: ``AdminServer`` with three fake running destinations until stdin closes."""
    from bridge.admin import AdminServer, DestinationSnapshot
    from bridge.config import AdminConfig
    from bridge.mq.worker import WorkerProgress

    class Fake:
        def snapshots(self) -> Sequence[DestinationSnapshot]:
            return [
                DestinationSnapshot(
                    f"d{i}",
                    "active",
                    "running",
                    progress=WorkerProgress(f"d{i}", state="running", batches_acked=1),
                    source_event_ms=int(time.time() * 1000),
                )
                for i in range(3)
            ]

    server = AdminServer(AdminConfig(listen=f"127.0.0.1:{port}"), Fake())
    server.start()
    print("serving", flush=True)
    sys.stdin.read()
    server.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running admin endpoint; default: spawn one")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--idle-wait", type=float, default=10.0)
    parser.add_argument("--hangups", type=int, default=300)
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0

    child = None
    if args.url:
        where = urlsplit(args.url)
        host, port = where.hostname or "127.0.0.1", where.port or 80
    else:
        host, port = "127.0.0.1", _free_port()
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.admin_load", "--serve", str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        assert child.stdout is not None
        child.stdout.readline()  # "serving"
    try:
        tally = asyncio.run(scrape_phase(host, port, args.clients, args.seconds))
        print(
            f"scrape: {args.clients} clients for {args.seconds:.0f} s: {tally.scrapes} scrapes "
            f"= {tally.scrapes / args.seconds:.0f} new connections/s served, "
            f"{tally.errors} errors {tally.error_kinds or ''}"
        )
        opened, closed = asyncio.run(idle_phase(host, port, args.idle, args.idle_wait))
        print(
            f"idle: {opened} idle connections, {closed} closed by the server within "
            f"{args.idle_wait:.0f} s"
        )
        hangup_phase(host, port, args.hangups)
        still = asyncio.run(scrape_phase(host, port, 1, 0.5)).scrapes > 0
        print(f"hang-ups: {args.hangups} clients hung up early; still answering: {still}")
    finally:
        stderr = ""
        if child is not None:
            _, stderr = child.communicate("", timeout=30)
    tracebacks = stderr.count("Traceback")
    if child is not None:
        print(f"server stderr: {tracebacks} tracebacks, {len(stderr.splitlines())} lines")
    return 0 if still and tracebacks == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
