"""``SourceConnection``: TLS a server merely offers (no ``source.ssl``) goes through one shared
context that verifies nothing, as PyMySQL's per-connection one did, without loading the
system's trust store for each connection; a configured ``source.ssl`` keeps its own."""

from __future__ import annotations

import ssl

from bridge.parse.source import SourceConnection


def _connection(**settings: object) -> SourceConnection:
    return SourceConnection(host="127.0.0.1", port=1, user="u", defer_connect=True, **settings)


def test_offered_tls_uses_one_context_without_the_trust_store() -> None:
    one, two = _connection(), _connection()
    assert one.ssl and two.ssl  # TLS is taken when the server offers it
    assert one.ctx is two.ctx
    assert one.ctx.verify_mode is ssl.CERT_NONE and not one.ctx.check_hostname
    assert one.ctx.cert_store_stats()["x509_ca"] == 0  # nothing loaded that nothing reads


def test_configured_tls_keeps_its_context() -> None:
    configured = ssl.create_default_context()
    assert _connection(ssl=configured).ctx is configured
    verified = _connection(ssl_verify_cert=True)
    assert verified.ctx is not _connection().ctx
    assert verified.ctx.verify_mode is ssl.CERT_REQUIRED
