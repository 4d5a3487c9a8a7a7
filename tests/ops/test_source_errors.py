"""What a user reads when a source login fails: ``translate_error`` turns each PyMySQL error
below into one line naming the fix (config keys that exist, the SQL to run).

The errors are built as PyMySQL raises them: codes and texts from MySQL 9.7 (1524 for an
account on mysql_native_password, 3159 with require_secure_transport, 2003 with the ssl
module's certificate failure) and from PyMySQL itself (2059 names the plugin as bytes, 2026
when the server offers no TLS). tests/integration/test_mysql_auth.py raises the 1524 and the
certificate failures for real.
"""

from __future__ import annotations

import re
from typing import Any

import pymysql
import pytest

from bridge.config import DestinationConfig, SourceConfig
from bridge.parse.exceptions import SourceAccessDenied, SourceMisconfigured
from bridge.parse.source import translate_error

SOURCE = SourceConfig(address="db.example:3306", username="cdc", password="s3cret", slave_id=9)


def _assert_config_keys_exist(message: str) -> None:
    for key in re.findall(r"\bsource(?:\.[a-z_]+)+", message):
        model: Any = DestinationConfig
        for part in key.split("."):
            assert part in model.model_fields, (key, message)
            model = model.model_fields[part].annotation
            model = next((a for a in getattr(model, "__args__", ()) if a is not type(None)), model)


@pytest.mark.parametrize(
    ("error", "kind", "expected"),
    [
        pytest.param(
            pymysql.err.OperationalError(1524, "Plugin 'mysql_native_password' is not loaded"),
            SourceAccessDenied,
            "cdc@db.example:3306 cannot log in (mysql_native_password is off in MySQL 8.4 and "
            "removed in 9.0): ALTER USER 'cdc'@'<host>' IDENTIFIED WITH caching_sha2_password "
            "BY '<password>'",
            id="1524-native",
        ),
        pytest.param(
            pymysql.err.OperationalError(1524, "Plugin 'authentication_ldap_sasl' is not loaded"),
            SourceAccessDenied,
            "cdc@db.example:3306 cannot log in (the account uses authentication_ldap_sasl, which "
            "the server has not loaded): load the plugin, or ALTER USER 'cdc'@'<host>' "
            "IDENTIFIED WITH caching_sha2_password BY '<password>'",
            id="1524-other",
        ),
        pytest.param(
            pymysql.err.OperationalError(
                2059, "Authentication plugin 'b'auth_gssapi_client'' not configured"
            ),
            SourceAccessDenied,
            "cdc@db.example:3306 cannot log in (canal-bridge (PyMySQL) cannot answer the "
            "auth_gssapi_client plugin): ALTER USER 'cdc'@'<host>' IDENTIFIED WITH "
            "caching_sha2_password BY '<password>' on MySQL; on MariaDB ALTER USER "
            "'cdc'@'<host>' IDENTIFIED BY '<password>' (mysql_native_password)",
            id="2059-bytes-name",
        ),
        pytest.param(
            pymysql.err.OperationalError(
                3159,
                "Connections using insecure transport are prohibited while "
                "--require_secure_transport=ON.",
            ),
            SourceMisconfigured,
            "db.example:3306 accepts TLS connections only (require_secure_transport=ON): set "
            "source.ssl (e.g. source.ssl.ca to the server's CA file)",
            id="3159-tls-only",
        ),
        pytest.param(
            pymysql.err.OperationalError(2026, "SSL is required but the server doesn't support it"),
            SourceMisconfigured,
            "TLS to db.example:3306 failed (SSL is required but the server doesn't support it): "
            "give the server ssl_cert and ssl_key, or remove source.ssl",
            id="2026-no-tls",
        ),
        pytest.param(
            pymysql.err.OperationalError(
                2003,
                "Can't connect to MySQL server on 'db.example' ([SSL: CERTIFICATE_VERIFY_FAILED] "
                "certificate verify failed: self-signed certificate in certificate chain "
                "(_ssl.c:1006))",
            ),
            SourceMisconfigured,
            "the TLS certificate of db.example:3306 was not accepted (self-signed certificate in "
            "certificate chain): set source.ssl.ca to the CA file that signed the server's "
            "certificate (ca.pem in the data directory for MySQL's auto-generated one), or "
            "source.ssl.verify_cert false to encrypt without checking it",
            id="2003-unknown-ca",
        ),
        pytest.param(
            pymysql.err.OperationalError(
                2003,
                "Can't connect to MySQL server on 'db.example' ([SSL: CERTIFICATE_VERIFY_FAILED] "
                "certificate verify failed: Hostname mismatch, certificate is not valid for "
                "'db.example'. (_ssl.c:1006))",
            ),
            SourceMisconfigured,
            "the TLS certificate of db.example:3306 was not accepted (Hostname mismatch, "
            "certificate is not valid for 'db.example'): the certificate does not name "
            "db.example (MySQL's auto-generated ones name no host): give the server a "
            "certificate for it, or set source.ssl.verify_identity false to check the chain only",
            id="2003-hostname",
        ),
    ],
)
def test_login_failures_read_as_one_line_with_the_fix(
    error: pymysql.MySQLError, kind: type[Exception], expected: str
) -> None:
    translated = translate_error(error, SOURCE)
    assert type(translated) is kind
    assert str(translated) == expected
    assert "s3cret" not in str(translated)
    _assert_config_keys_exist(expected)


def test_a_refused_connection_still_reads_as_unreachable() -> None:
    """2003 without a certificate problem keeps its old meaning."""
    error = pymysql.err.OperationalError(
        2003, "Can't connect to MySQL server on 'db.example' ([Errno 111] Connection refused)"
    )
    assert "check source.address and that the server is running" in str(
        translate_error(error, SOURCE)
    )
