"""Logging in to a real MySQL 9 with caching_sha2_password, as preflight does.

A throwaway account (SELECT, REPLICATION SLAVE, REPLICATION CLIENT) is created and FLUSH
PRIVILEGES empties the server's authentication cache, so every login below is a *full*
authentication: the password itself must reach the server, either inside TLS or encrypted
with the server's RSA public key (PyMySQL needs the ``cryptography`` package for that). Each
test counts the RSA exchanges, so the path it claims is the path that ran.

- no TLS at all (a client without TLS support, forced by turning PyMySQL's TLS off): RSA;
- ``source.ssl`` with MySQL's auto-generated CA and ``verify_cert``: TLS, no RSA. That CA's
  server certificate names no host, so ``verify_identity`` cannot pass and is refused with
  one line naming the fix;
- a wrong password: one line, SourceAccessDenied;
- an account still on mysql_native_password (as an upgrade from 8.0 leaves it; MySQL 9 can no
  longer create one, so the grant table is edited): one line with the ALTER USER to run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from pymysql import _auth

from bridge.check import check_source
from bridge.config import DestinationConfig, MqConfig, SourceConfig
from bridge.parse.exceptions import ParseError, SourceAccessDenied, SourceMisconfigured
from bridge.parse.source import open_connection, preflight
from tests.conftest import Account, MysqlEndpoint, connect_admin, replica_account

pytestmark = [
    pytest.mark.services,
    pytest.mark.only_on("mysql", reason="caching_sha2_password and its RSA/TLS paths are MySQL's"),
]

CA = Path(__file__).resolve().parents[2] / "var/services/mysql/data/ca.pem"


@pytest.fixture
def sha2_account(mysql: MysqlEndpoint) -> Iterator[Account]:
    with replica_account(mysql, "cb_sha2", "caching_sha2_password") as account:
        admin = connect_admin(mysql)
        try:
            _flush_auth_cache(admin)
        finally:
            admin.close()
        yield account


def _flush_auth_cache(admin: pymysql.connections.Connection[Any]) -> None:
    with admin.cursor() as cur:
        cur.execute("FLUSH PRIVILEGES")


@pytest.fixture
def rsa_exchanges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per password sent RSA-encrypted (PyMySQL's only RSA call)."""
    calls: list[int] = []
    encrypt: Callable[..., bytes] = _auth.sha2_rsa_encrypt

    def counted(*args: Any) -> bytes:
        calls.append(1)
        return encrypt(*args)

    monkeypatch.setattr(_auth, "sha2_rsa_encrypt", counted)
    return calls


def _source(mysql: MysqlEndpoint, account: Account, **overrides: Any) -> SourceConfig:
    values: dict[str, Any] = {
        "address": mysql.address,
        "username": account.user,
        "password": account.password,
        "slave_id": 7100,
        "connect_timeout_s": 5,
    }
    values.update(overrides)
    return SourceConfig(**values)


def _cipher(source: SourceConfig) -> str:
    with open_connection(source) as conn, conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        row = cur.fetchone()
    return str(row[1]) if row else ""


def _one_line(error: ParseError, password: str) -> str:
    message = str(error)
    assert "\n" not in message and password not in message and password not in repr(error)
    _assert_config_keys_exist(message)
    return message


def _assert_config_keys_exist(message: str) -> None:
    """Every ``source.x.y`` a message names is a key of the destination configuration."""
    for key in re.findall(r"\bsource(?:\.[a-z_]+)+", message):
        model: Any = DestinationConfig
        for part in key.split("."):
            assert part in model.model_fields, (key, message)
            model = model.model_fields[part].annotation
            model = next((a for a in getattr(model, "__args__", ()) if a is not type(None)), model)


def test_cold_cache_without_tls_goes_through_rsa(
    mysql: MysqlEndpoint,
    sha2_account: Account,
    rsa_exchanges: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PyMySQL otherwise upgrades to TLS whenever the server offers it (source.ssl unset).
    monkeypatch.setattr(pymysql.connections, "SSL_ENABLED", False)
    source = _source(mysql, sha2_account)
    facts = preflight(source)
    assert not facts.is_mariadb and facts.server.number >= (8, 4, 0)
    assert rsa_exchanges == [1], "one full authentication, the password RSA-encrypted"
    # Now cached: the next login is the fast path (a scramble, no password on the wire).
    assert _cipher(source) == ""
    assert rsa_exchanges == [1]


def test_tls_the_server_offers_is_taken_without_source_ssl(
    mysql: MysqlEndpoint, sha2_account: Account
) -> None:
    # As PyMySQL does on its own; its context is shared by the process's connections
    # (SourceConnection), which must still encrypt.
    assert _cipher(_source(mysql, sha2_account)), "the connection is encrypted"


def test_cold_cache_over_verified_tls_needs_no_rsa(
    mysql: MysqlEndpoint, sha2_account: Account, rsa_exchanges: list[int]
) -> None:
    assert CA.exists(), f"{CA}: MySQL's auto-generated CA (deploy/local/services.sh up mysql)"
    source = _source(mysql, sha2_account, ssl={"ca": str(CA), "verify_cert": True})
    preflight(source)
    assert rsa_exchanges == [], "the password went inside TLS"
    assert _cipher(source), "the connection is encrypted"


def test_tls_without_ca_on_auto_generated_certificate_is_refused_with_the_fix(
    mysql: MysqlEndpoint, sha2_account: Account
) -> None:
    """verify_cert (the default) checks the chain against the system's trust store, which
    does not know MySQL's own CA: the line says to set source.ssl.ca."""
    with pytest.raises(SourceMisconfigured) as refused:
        preflight(_source(mysql, sha2_account, ssl={}))
    message = _one_line(refused.value, sha2_account.password)
    assert "certificate of" in message and "set source.ssl.ca" in message
    # Encryption without checking is a choice to spell out.
    assert _cipher(_source(mysql, sha2_account, ssl={"verify_cert": False}))


def test_verify_identity_fails_on_the_auto_generated_certificate(
    mysql: MysqlEndpoint, sha2_account: Account
) -> None:
    """MySQL's auto-generated server certificate has no subjectAltName and a CN that is no
    host name, so no host can be verified: only the chain (verify_cert) can be checked."""
    source = _source(mysql, sha2_account, ssl={"ca": str(CA), "verify_identity": True})
    with pytest.raises(SourceMisconfigured) as refused:
        preflight(source)
    message = _one_line(refused.value, sha2_account.password)
    assert f"does not name {mysql.host}" in message
    assert "set source.ssl.verify_identity false" in message


@pytest.mark.parametrize("tls", [False, True], ids=["rsa", "tls"])
def test_wrong_password_is_one_line(
    mysql: MysqlEndpoint, sha2_account: Account, tls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not tls:
        monkeypatch.setattr(pymysql.connections, "SSL_ENABLED", False)
    wrong = Account(sha2_account.user, sha2_account.password + "-wrong")
    ssl = {"ssl": {"ca": str(CA)}} if tls else {}
    with pytest.raises(SourceAccessDenied) as refused:
        preflight(_source(mysql, wrong, **ssl))
    message = _one_line(refused.value, wrong.password)
    plain = (
        f"access denied for {wrong.user}@{mysql.address}: check source.username and source.password"
    )
    # Without TLS the line goes on about REQUIRE SSL accounts (test_tls_services.py).
    expected = plain if tls else f"{plain}; the connection had no TLS"
    assert message.startswith(expected) and (message == plain) == tls


def test_native_password_account_gets_the_alter_user_line(
    mysql: MysqlEndpoint, sha2_account: Account
) -> None:
    admin = connect_admin(mysql)
    try:
        with admin.cursor() as cur:
            # MySQL 9 refuses to create one: the plugin is gone.
            with pytest.raises(pymysql.err.OperationalError) as gone:
                cur.execute(
                    f"ALTER USER '{sha2_account.user}'@'%' IDENTIFIED WITH "
                    "mysql_native_password BY 'x'"
                )
            assert gone.value.args[0] == 1524
            # An account upgraded from 8.0 keeps it: edit the grant table to get one.
            cur.execute(
                "UPDATE mysql.user SET plugin = 'mysql_native_password', "
                "authentication_string = '*E3619321C1A937C46A0D8BD1DAC39F93B27D4458' "
                "WHERE User = %s AND Host = '%%'",
                (sha2_account.user,),
            )
            assert cur.rowcount == 1
        _flush_auth_cache(admin)
    finally:
        admin.close()
    with pytest.raises(SourceAccessDenied) as refused:
        preflight(_source(mysql, sha2_account))
    cause = refused.value.__cause__
    assert isinstance(cause, pymysql.err.OperationalError) and cause.args[0] == 1524
    message = _one_line(refused.value, sha2_account.password)
    assert message == (
        f"{sha2_account.user}@{mysql.address} cannot log in (mysql_native_password is off in "
        f"MySQL 8.4 and removed in 9.0): ALTER USER '{sha2_account.user}'@'<host>' IDENTIFIED "
        "WITH caching_sha2_password BY '<password>'"
    )
    # canal-bridge check prints the same line as its one connection row.
    source = _source(mysql, sha2_account)
    destination = DestinationConfig(name="native", source=source, mq=MqConfig(topic="unused"))
    assert [(r.check, r.outcome, r.detail) for r in check_source(destination)] == [
        ("connection", "FAIL", message)
    ]
