"""Real services for the tests, found through the variables `deploy/local/services.sh env` prints.

Where the variables are absent and a Docker engine answers, the services are started with
testcontainers; otherwise the test fails (never skips) and names the command to run.

Two source servers: MariaDB (``CANAL_BRIDGE_MYSQL_*``, a historical name) and Oracle MySQL
(``CANAL_BRIDGE_ORACLE_MYSQL_*``). The ``mysql`` fixture is MariaDB unless a test opts in:

- ``@pytest.mark.both_servers`` (on a test, or a module's ``pytestmark``) runs the test once per
  server; the ``mysql`` fixture is parametrized indirectly and the test ids end in ``[mariadb]``
  / ``[mysql]``.
- ``@pytest.mark.only_on("mariadb" | "mysql", reason=...)`` runs it on that server only (also
  inside a ``both_servers`` module), its id still naming the server; ``reason`` says why.

Each server is found (or started) once per session, on first use; fixtures built on ``mysql``
(admin connections, scratch schemas) follow the server of the test that requests them.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NoReturn, cast, get_args

import pymysql
import pytest

HOW_TO = 'run `eval "$(deploy/local/services.sh env)"` after `deploy/local/services.sh up`'
_RUN = secrets.token_hex(3)  # this test session, in the names of its scratch schemas

Flavor = Literal["mariadb", "mysql"]
FLAVORS: tuple[Flavor, ...] = get_args(Flavor)


@dataclass(frozen=True)
class MysqlEndpoint:
    host: str
    port: int
    user: str
    password: str
    admin_user: str
    admin_password: str
    flavor: Flavor

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _missing(variable: str) -> NoReturn:
    pytest.fail(f"{variable} is not set and no Docker engine answers: {HOW_TO}", pytrace=False)


# flavor -> (prefix of its variables, container image, server options of the shared servers)
_SERVERS: dict[Flavor, tuple[str, str, str]] = {
    "mariadb": (
        "CANAL_BRIDGE_MYSQL",
        "mariadb:10.11",
        "--log-bin --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL "
        "--server-id=1",
    ),
    "mysql": (
        "CANAL_BRIDGE_ORACLE_MYSQL",
        "mysql:9",
        "--log-bin --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL "
        "--server-id=1 --gtid-mode=ON --enforce-gtid-consistency=ON",
    ),
}


@contextmanager
def server_of(flavor: Flavor) -> Iterator[MysqlEndpoint]:
    """The server of ``flavor``: the local one its variables name, else a container."""
    prefix, image, options = _SERVERS[flavor]
    env = os.environ
    if env.get(f"{prefix}_PORT"):

        def setting(name: str, default: str) -> str:
            # The MySQL server shares MariaDB's accounts unless its own variables say otherwise.
            return env.get(f"{prefix}_{name}", env.get(f"CANAL_BRIDGE_MYSQL_{name}", default))

        yield MysqlEndpoint(
            host=setting("HOST", "127.0.0.1"),
            port=int(env[f"{prefix}_PORT"]),
            user=setting("USER", "canal"),
            password=setting("PASSWORD", "canal"),
            admin_user=setting("ADMIN_USER", "bridge_admin"),
            admin_password=setting("ADMIN_PASSWORD", "bridge_admin"),
            flavor=flavor,
        )
        return
    if not _docker_available():
        _missing(f"{prefix}_PORT")
    from testcontainers.mysql import MySqlContainer

    container = MySqlContainer(
        image, username="bridge_admin", password="bridge_admin", root_password="root"
    ).with_command(options)
    with container:
        yield MysqlEndpoint(
            host=container.get_container_host_ip(),
            port=int(container.get_exposed_port(3306)),
            user="root",
            password="root",
            admin_user="root",
            admin_password="root",
            flavor=flavor,
        )


class SourceServers:
    """The session's source servers by flavor, each found or started on first use and stopped
    at the end of the session (not when the tests switch from one server to the other)."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self._found: dict[Flavor, MysqlEndpoint] = {}

    def get(self, flavor: Flavor) -> MysqlEndpoint:
        if flavor not in self._found:
            started: AbstractContextManager[MysqlEndpoint] = server_of(flavor)
            self._found[flavor] = self._stack.enter_context(started)
        return self._found[flavor]


@pytest.fixture(scope="session")
def source_servers() -> Iterator[SourceServers]:
    with ExitStack() as stack:
        yield SourceServers(stack)


@pytest.fixture(scope="session")
def mysql(request: pytest.FixtureRequest, source_servers: SourceServers) -> MysqlEndpoint:
    """MariaDB, or the server a ``both_servers`` / ``only_on`` test is parametrized with."""
    flavor = cast(Flavor, getattr(request, "param", "mariadb"))
    return source_servers.get(flavor)


def servers_of(definition: pytest.Function) -> tuple[Flavor, ...]:
    """The servers a test runs on by its markers; () when it takes the default ``mysql``."""
    only = definition.get_closest_marker("only_on")
    if only is not None:
        flavor = only.args[0] if only.args else None
        if flavor not in FLAVORS or not only.kwargs.get("reason"):
            pytest.fail(
                f"{definition.nodeid}: use @pytest.mark.only_on(<one of {FLAVORS}>, reason=...)",
                pytrace=False,
            )
        return (cast(Flavor, flavor),)
    if definition.get_closest_marker("both_servers") is not None:
        return FLAVORS
    return ()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Runs ``both_servers`` / ``only_on`` tests on their servers, the id naming the server."""
    flavors = servers_of(metafunc.definition)
    if not flavors:
        return
    if "mysql" not in metafunc.fixturenames:
        pytest.fail(
            f"{metafunc.definition.nodeid} is marked to run per server but uses no server "
            "(neither the mysql fixture nor one built on it): drop the marker",
            pytrace=False,
        )
    metafunc.parametrize("mysql", flavors, indirect=True, ids=list(flavors), scope="session")


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


@dataclass(frozen=True)
class TlsServices:
    """The TLS side of the local services (``services.sh env``): MariaDB's account created
    REQUIRE SSL and Kafka's SASL_SSL listener (SCRAM-SHA-512), both presenting a certificate
    for 127.0.0.1 signed by the CA in ``ca``."""

    ca: str
    mysql_user: str
    mysql_password: str
    kafka_bootstrap: str
    kafka_user: str
    kafka_password: str


_TLS_VARIABLES = (
    "CANAL_BRIDGE_TLS_CA",
    "CANAL_BRIDGE_MYSQL_TLS_USER",
    "CANAL_BRIDGE_MYSQL_TLS_PASSWORD",
    "KAFKA_SASL_BOOTSTRAP_SERVERS",
    "CANAL_BRIDGE_KAFKA_SASL_USER",
    "CANAL_BRIDGE_KAFKA_SASL_PASSWORD",
)


@pytest.fixture(scope="session")
def tls_services() -> TlsServices:
    """Skipped when the environment lacks the TLS settings (services started by an older
    services.sh), unless CANAL_BRIDGE_REQUIRE_TLS=1 (test.sh sets it): then it fails."""
    missing = [name for name in _TLS_VARIABLES if not os.environ.get(name)]
    if missing:
        reason = (
            f"{', '.join(missing)} not set: {HOW_TO} (services started by an older services.sh "
            "gain TLS after `services.sh down mariadb kafka` and `up`)"
        )
        if os.environ.get("CANAL_BRIDGE_REQUIRE_TLS") == "1":
            pytest.fail(f"CANAL_BRIDGE_REQUIRE_TLS=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return TlsServices(*(os.environ[name] for name in _TLS_VARIABLES))


def unrelated_ca(folder: Path) -> str:
    """A CA certificate that signed nothing the services present (a "wrong CA" file)."""
    key, cert = folder / "unrelated-ca.key", folder / "unrelated-ca.crt"
    command = "openssl req -x509 -newkey rsa:2048 -noenc -days 1 -subj /CN=unrelated-test-CA"
    subprocess.run(
        [*command.split(), "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return str(cert)


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


def execute_admin(mysql: MysqlEndpoint, *statements: str) -> None:
    """Run ``statements`` in order on one admin connection (each its own transaction)."""
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


@pytest.fixture
def admin_connection(mysql: MysqlEndpoint) -> Iterator[pymysql.connections.Connection]:  # type: ignore[type-arg]
    conn = connect_admin(mysql)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def row_metadata(mysql: MysqlEndpoint, setting: str) -> Iterator[None]:
    """``binlog_row_metadata`` set to ``setting`` for new sessions, FULL again afterwards."""
    conn = connect_admin(mysql)
    with conn.cursor() as cur:
        cur.execute(f"SET GLOBAL binlog_row_metadata = {setting}")
    try:
        yield
    finally:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_row_metadata = FULL")
        conn.close()


def nameless(mysql: MysqlEndpoint) -> str:
    """The server's default row metadata, which carries no column names."""
    return "NO_LOG" if mysql.flavor == "mariadb" else "MINIMAL"


@pytest.fixture
def nameless_binlog(mysql: MysqlEndpoint) -> Iterator[None]:
    """The server's default row metadata: the binlog carries no column names."""
    with row_metadata(mysql, nameless(mysql)):
        yield


@dataclass(frozen=True)
class Account:
    """A source account a test made (``replica_account``)."""

    user: str
    password: str


@contextmanager
def replica_account(
    mysql: MysqlEndpoint, prefix: str, plugin: str | None = None
) -> Iterator[Account]:
    """A fresh account with exactly the privileges canal-bridge asks for (SELECT, REPLICATION
    SLAVE, REPLICATION CLIENT: no writes), ``IDENTIFIED WITH plugin`` when given; dropped
    afterwards."""
    account = Account(f"{prefix}_{uuid.uuid4().hex[:8]}", f"pw-{uuid.uuid4().hex}")
    identified = f"IDENTIFIED WITH {plugin} BY %s" if plugin else "IDENTIFIED BY %s"
    admin = connect_admin(mysql)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE USER '{account.user}'@'%%' {identified}", (account.password,))
            cur.execute(
                "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* "
                f"TO '{account.user}'@'%'"
            )
        yield account
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{account.user}'@'%'")
        admin.close()


@pytest.fixture
def read_only_account(mysql: MysqlEndpoint) -> Iterator[Account]:
    """An account that can read and replicate but not write (snapshots need no
    more)."""
    with replica_account(mysql, "cb_ro") as account:
        yield account


@pytest.fixture
def scratch_schema(
    request: pytest.FixtureRequest, admin_connection: pymysql.connections.Connection
) -> Iterator[str]:  # type: ignore[type-arg]
    """A fresh database named after the test, dropped afterwards. The name ends in a digest of
    the test id (its parameters, the server among them, may be cut off the readable part) and
    a token of this run, so that sessions testing the shared servers at once never collide."""
    slug = "".join(c if c.isalnum() else "_" for c in request.node.name)[:44].lower()
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:6]
    name = f"t_{slug}_{digest}_{_RUN}"
    with admin_connection.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    with admin_connection.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


# --------------------------------------------------------------------- what the servers differ in

Connection = pymysql.connections.Connection
MARIADB_GTID = re.compile(r"^\d+-\d+-(\d+)$")  # domain-server-sequence
# <uuid>:<number>, or <uuid>:<tag>:<number> (MySQL 8.3+ tagged GTIDs)
MYSQL_GTID = re.compile(r"^[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?::[a-z_]\w*)?:(\d+)$")


# How SHOW BINLOG EVENTS names the events that start a transaction with its GTID.
GTID_EVENTS = frozenset({"Gtid", "Gtid_tagged_log_event"})


def gtid_number(gtid: str) -> int:
    """The sequence number of one GTID of either server (``0-1-42``, ``<uuid>:42``)."""
    match = MARIADB_GTID.match(gtid) or MYSQL_GTID.match(gtid)
    assert match, f"not a GTID: {gtid!r}"
    return int(match.group(1))


def _one(conn: Connection, sql: str) -> str:
    with conn.cursor() as cur:
        cur.execute(sql)
        ((value,),) = cur.fetchall()
    return str(value)


def last_gtid(conn: Connection, mysql: MysqlEndpoint) -> str:
    """The GTID of the session's last committed transaction. Call it right after the commit:
    on MySQL any other statement of the session replaces it."""
    if mysql.flavor == "mariadb":
        gtid = _one(conn, "SELECT @@session.last_gtid")
    else:
        gtid = _one(
            conn,
            "SELECT GTID FROM performance_schema.events_transactions_current "
            "WHERE THREAD_ID = PS_CURRENT_THREAD_ID()",
        )
    assert (MARIADB_GTID if mysql.flavor == "mariadb" else MYSQL_GTID).match(gtid), gtid
    return gtid


def gtid_state_at(conn: Connection, mysql: MysqlEndpoint, journal: str, position: int) -> str:
    """The GTID state (what a GTID start names) right before ``journal:position``, read from
    the binlog itself, so that other writers of the shared server never race it.

    MariaDB: ``BINLOG_GTID_POS``. MySQL: ``gtid_executed`` less every GTID logged from the
    position on (read after it: a GTID is executed only once it is in the binlog).
    """
    if mysql.flavor == "mariadb":
        return _one(conn, f"SELECT BINLOG_GTID_POS('{journal}', {position})")
    executed = _one(conn, "SELECT @@global.gtid_executed").replace("\n", "")
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        files = [str(row[0]) for row in cur.fetchall()]
        later = []
        for name in files[files.index(journal) :]:
            cur.execute(f"SHOW BINLOG EVENTS IN '{name}' FROM {position if name == journal else 4}")
            # "SET @@SESSION.GTID_NEXT= '<uuid>[:<tag>]:<n>'"
            later += [str(row[5]).split("'")[1] for row in cur.fetchall() if row[2] in GTID_EVENTS]
        cur.execute("SELECT GTID_SUBTRACT(%s, %s)", (executed, ",".join(later)))
        ((state,),) = cur.fetchall()
    return str(state)


_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint|year)\(\d+\)")


def declared(mysql: MysqlEndpoint, mariadb_text: str) -> str:
    """A declared column type as the server prints it (``information_schema``, canal's DESC),
    given as MariaDB prints it: MySQL 8.0.19+ drops the display width of integer and YEAR
    types (``int(11)`` -> ``int``), except for ZEROFILL columns and ``tinyint(1)``."""
    if mysql.flavor == "mariadb" or "zerofill" in mariadb_text or mariadb_text == "tinyint(1)":
        return mariadb_text
    return _DISPLAY_WIDTH.sub(r"\1", mariadb_text)


# Folders whose every test needs a real service, and the fixtures that are one.
_SERVICE_FOLDERS = ("integration", "e2e", "ha", "spark", "image")
_SERVICE_FIXTURES = frozenset(
    {
        "mysql",
        "source_servers",
        "kafka_bootstrap",
        "zookeeper_hosts",
        "spark",
        "binlog_server",
        "tls_services",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs a real server carries the ``services`` marker, so that
    ``pytest -m "not services"`` is an inner loop that needs none."""
    tests_dir = os.path.dirname(__file__)
    for item in items:
        folder = os.path.relpath(str(item.path), tests_dir).split(os.sep, 1)[0]
        fixtures = set(getattr(item, "fixturenames", ()))
        if folder in _SERVICE_FOLDERS or fixtures & _SERVICE_FIXTURES:
            item.add_marker(pytest.mark.services)
