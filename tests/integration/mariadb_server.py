"""A throwaway MariaDB server for tests that need a source configured unlike the shared one.

``throwaway_mariadb(*flags)`` initialises a datadir in a fresh temp folder, starts ``mariadbd``
on a free 127.0.0.1 port (binary logging off unless the flags say otherwise), waits until it
answers, creates a canal-like replication user and yields where to reach it. On exit the server
is stopped by its PID and the folder removed. ``ThrowawayMariaDB`` is the same server as an
object that can be stopped and started again (an outage, same port and data).
Needs ``mariadb-install-db`` and ``mariadbd`` on the machine
(``deploy/local/install.sh`` provides them).
"""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest

from tests.throwaway import ThrowawayProcess

READY_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30


@dataclass(frozen=True)
class ThrowawayServer:
    host: str
    port: int
    user: str
    password: str
    socket: str
    datadir: Path

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _binary(name: str, fallback: str) -> str:
    found = shutil.which(name) or (fallback if Path(fallback).exists() else None)
    if found is None:
        pytest.fail(f"{name} not found: install MariaDB (deploy/local/install.sh)", pytrace=False)
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _log_tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError:
        return "(no log)"


def _wait_ready(process: subprocess.Popen[bytes], sock: str, log: Path) -> None:
    """Poll the socket until root can log in; fail early if the server exits."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if process.poll() is not None:
            pytest.fail(f"mariadbd exited with {process.returncode}:\n{_log_tail(log)}")
        try:
            pymysql.connect(unix_socket=sock, user="root", connect_timeout=2).close()
            return
        except pymysql.MySQLError:
            if time.monotonic() > deadline:
                pytest.fail(f"mariadbd not ready within {READY_TIMEOUT_S}s:\n{_log_tail(log)}")
            time.sleep(0.1)


class ThrowawayMariaDB(ThrowawayProcess):
    """A private mariadbd that can be stopped and started again on the same port and datadir
    (a source outage); ``throwaway_mariadb`` is the one-shot form most tests use."""

    name = "MariaDB"

    def __init__(self, *flags: str, user: str = "cdc", password: str = "cdc-throwaway-pw") -> None:
        super().__init__(Path(tempfile.mkdtemp(prefix="cbmdb-", dir="/tmp")))  # short: socket
        self.flags = flags
        self.port = _free_port()
        self.server = ThrowawayServer(
            "127.0.0.1",
            self.port,
            user,
            password,
            str(self.workdir / "s.sock"),
            self.workdir / "data",
        )
        self._installed = False

    def start(self) -> None:
        """Initialise the datadir and create the user on first start; later starts reuse both."""
        if self.running:
            return
        os_user = getpass.getuser()
        log = self.workdir / "err.log"
        if not self._installed:
            install = subprocess.run(
                [
                    _binary("mariadb-install-db", "/usr/bin/mariadb-install-db"),
                    "--no-defaults",
                    f"--datadir={self.server.datadir}",
                    f"--user={os_user}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ],
                capture_output=True,
                timeout=180,
                check=False,
            )
            if install.returncode != 0:
                pytest.fail(f"mariadb-install-db failed:\n{install.stderr.decode()[-2000:]}")
        self.process = subprocess.Popen(
            [
                _binary("mariadbd", "/usr/sbin/mariadbd"),
                "--no-defaults",
                f"--datadir={self.server.datadir}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.server.socket}",
                f"--pid-file={self.workdir / 'mariadbd.pid'}",
                f"--log-error={log}",
                f"--user={os_user}",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=32M",
                *self.flags,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_ready(self.process, self.server.socket, log)
        if not self._installed:
            self._installed = True
            self.root_sql(
                f"CREATE USER '{self.server.user}'@'%' IDENTIFIED BY '{self.server.password}'",
                "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* "
                f"TO '{self.server.user}'@'%'",
            )

    def root_sql(self, *statements: str) -> None:
        """Run statements as root over the unix socket (root has no TCP account)."""
        admin = pymysql.connect(unix_socket=self.server.socket, user="root", autocommit=True)
        try:
            with admin.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            admin.close()

    def remove(self) -> None:
        """Stop (by PID) and delete the datadir."""
        self.stop(timeout_s=STOP_TIMEOUT_S)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextmanager
def throwaway_mariadb(
    *flags: str, user: str = "cdc", password: str = "cdc-throwaway-pw"
) -> Iterator[ThrowawayServer]:
    """A private mariadbd started with ``--skip-log-bin`` plus ``flags``."""
    server = ThrowawayMariaDB(*flags, user=user, password=password)
    try:
        server.start()
        yield server.server
    finally:
        server.remove()
