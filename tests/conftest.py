"""Real services for the tests, found through the variables `deploy/local/services.sh env` prints.

Where the variables are absent and a Docker engine answers, the services are started with
testcontainers; otherwise the test fails (never skips) and names the command to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

import pymysql
import pytest

HOW_TO = 'run `eval "$(deploy/local/services.sh env)"` after `deploy/local/services.sh up`'


@dataclass(frozen=True)
class MysqlEndpoint:
    host: str
    port: int
    user: str
    password: str
    admin_user: str
    admin_password: str

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _missing(variable: str) -> NoReturn:
    pytest.fail(f"{variable} is not set and no Docker engine answers: {HOW_TO}", pytrace=False)


@pytest.fixture(scope="session")
def mysql() -> Iterator[MysqlEndpoint]:
    if os.environ.get("CANAL_BRIDGE_MYSQL_PORT"):
        env = os.environ
        yield MysqlEndpoint(
            host=env.get("CANAL_BRIDGE_MYSQL_HOST", "127.0.0.1"),
            port=int(env["CANAL_BRIDGE_MYSQL_PORT"]),
            user=env.get("CANAL_BRIDGE_MYSQL_USER", "canal"),
            password=env.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal"),
            admin_user=env.get("CANAL_BRIDGE_MYSQL_ADMIN_USER", "bridge_admin"),
            admin_password=env.get("CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD", "bridge_admin"),
        )
        return
    if not _docker_available():
        _missing("CANAL_BRIDGE_MYSQL_PORT")
    from testcontainers.mysql import MySqlContainer

    container = MySqlContainer(
        "mariadb:10.11", username="bridge_admin", password="bridge_admin", root_password="root"
    ).with_command(
        "--log-bin --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL "
        "--server-id=1"
    )
    with container:
        yield MysqlEndpoint(
            host=container.get_container_host_ip(),
            port=int(container.get_exposed_port(3306)),
            user="root",
            password="root",
            admin_user="root",
            admin_password="root",
        )


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        yield os.environ["KAFKA_BOOTSTRAP_SERVERS"]
        return
    if not _docker_available():
        _missing("KAFKA_BOOTSTRAP_SERVERS")
    from testcontainers.kafka import KafkaContainer

    with KafkaContainer().with_kraft() as container:
        yield container.get_bootstrap_server()


@pytest.fixture(scope="session")
def zookeeper_hosts() -> Iterator[str]:
    if os.environ.get("ZOOKEEPER_HOSTS"):
        yield os.environ["ZOOKEEPER_HOSTS"]
        return
    if not _docker_available():
        _missing("ZOOKEEPER_HOSTS")
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    with DockerContainer("zookeeper:3.8").with_exposed_ports(2181) as container:
        wait_for_logs(container, "binding to port")
        yield f"{container.get_container_host_ip()}:{container.get_exposed_port(2181)}"


def connect_admin(mysql: MysqlEndpoint) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    """An autocommit admin connection for setting up tables and writing changes."""
    return pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=mysql.admin_user,
        password=mysql.admin_password,
        autocommit=True,
        charset="utf8mb4",
    )


@pytest.fixture
def admin_connection(mysql: MysqlEndpoint) -> Iterator[pymysql.connections.Connection]:  # type: ignore[type-arg]
    conn = connect_admin(mysql)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def scratch_schema(
    request: pytest.FixtureRequest, admin_connection: pymysql.connections.Connection
) -> Iterator[str]:  # type: ignore[type-arg]
    """A fresh database named after the test, dropped afterwards."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    with admin_connection.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    with admin_connection.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
