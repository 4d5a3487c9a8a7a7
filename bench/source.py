"""The source server a benchmark reads, picked by name: the local MariaDB or the local MySQL 9.

Both are found through the variables ``deploy/local/services.sh env`` prints, as
tests/conftest.py finds them: MariaDB's are ``CANAL_BRIDGE_MYSQL_*`` (a historical name),
MySQL's ``CANAL_BRIDGE_ORACLE_MYSQL_*``, each falling back to MariaDB's (the two servers share
their accounts). Every benchmark that loads a workload, starts a reader or runs a floor takes
its address and accounts from one ``SourceServer``, so a run never mixes the two servers.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

import pymysql
from pymysql.constants import CLIENT

Flavor = Literal["mariadb", "mysql"]
FLAVORS: tuple[Flavor, ...] = get_args(Flavor)

Connection = pymysql.connections.Connection  # type: ignore[type-arg]

# flavor -> (prefix of its variables, port when they are unset, the name reports give it)
_SERVERS: dict[Flavor, tuple[str, int, str]] = {
    "mariadb": ("CANAL_BRIDGE_MYSQL", 13306, "MariaDB"),
    "mysql": ("CANAL_BRIDGE_ORACLE_MYSQL", 13307, "MySQL"),
}


@dataclass(frozen=True)
class SourceServer:
    """Where one source server listens, its replication account (the one the readers use)
    and its admin account (the one the loaders use)."""

    flavor: Flavor
    host: str
    port: int
    user: str
    password: str
    admin_user: str
    admin_password: str

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    @property
    def title(self) -> str:
        return _SERVERS[self.flavor][2]

    def connect(self, database: str | None = None) -> Connection:
        """An admin connection in autocommit, taking multi-statement queries (the loaders
        send 1,000 statements at a time)."""
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.admin_user,
            password=self.admin_password,
            database=database,
            autocommit=True,
            charset="utf8mb4",
            client_flag=CLIENT.MULTI_STATEMENTS,
        )

    def gtid_position(self, conn: Connection) -> str:
        """The server's GTID state now, as a reader seeded there needs it: MariaDB's
        ``@@gtid_binlog_pos``, MySQL's executed GTID set."""
        query = (
            "SELECT @@gtid_binlog_pos"
            if self.flavor == "mariadb"
            else "SELECT @@global.gtid_executed"
        )
        with conn.cursor() as cur:
            cur.execute(query)
            row = cur.fetchone()
        # MySQL breaks a long GTID set over lines; Debezium wants it on one.
        return str(row[0]).replace("\n", "") if row and row[0] is not None else ""


def source_server(flavor: Flavor = "mariadb", env: Mapping[str, str] | None = None) -> SourceServer:
    """The server of ``flavor`` as ``env`` (the process environment by default) names it."""
    prefix, port, _ = _SERVERS[flavor]
    values = os.environ if env is None else env

    def setting(name: str, default: str) -> str:
        return values.get(f"{prefix}_{name}", values.get(f"CANAL_BRIDGE_MYSQL_{name}", default))

    return SourceServer(
        flavor=flavor,
        host=setting("HOST", "127.0.0.1"),
        port=int(values.get(f"{prefix}_PORT", str(port))),
        user=setting("USER", "canal"),
        password=setting("PASSWORD", "canal"),
        admin_user=setting("ADMIN_USER", "bridge_admin"),
        admin_password=setting("ADMIN_PASSWORD", "bridge_admin"),
    )


def add_source_argument(parser: argparse.ArgumentParser) -> None:
    """``--source mariadb|mysql``, the same in every benchmark command."""
    parser.add_argument(
        "--source",
        choices=FLAVORS,
        default="mariadb",
        help="the source server the workloads are loaded into and read from (default: mariadb)",
    )
