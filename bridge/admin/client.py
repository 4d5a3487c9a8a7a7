"""The client side of the admin endpoint's control action, for ``canal-bridge snapshot``
without HA: ``POST /destinations/<d>/snapshot`` to ``admin.listen``, with the bearer token of
``admin.token_file`` and over HTTPS when ``admin.tls`` is set.

HTTPS trusts exactly the endpoint's own certificate (``admin.tls.cert_file`` as the trust
anchor, partial chains allowed) and does not check the host name: the command runs beside the
process, with its config, and reaches it on whatever address ``admin.listen`` binds (often an
IP the certificate does not name); pinning the certificate is the stronger check.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from urllib.parse import quote

from bridge.admin.auth import BearerToken
from bridge.config import AdminConfig, split_address

# Where a client reaches a server bound to every address.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def snapshot_url(admin: AdminConfig, destination: str) -> str:
    if admin.listen is None:
        raise ValueError("admin.listen is null: no admin endpoint to ask")
    host, port = split_address(admin.listen)
    host = _ANY_ADDRESS.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    scheme = "https" if admin.tls is not None else "http"
    return f"{scheme}://{host}:{port}/destinations/{quote(destination, safe='')}/snapshot"


def post_snapshot_request(
    admin: AdminConfig, destination: str, tables: Sequence[str], timeout_s: float = 30.0
) -> tuple[int, dict[str, object]]:
    """The endpoint's status and JSON answer. Raises ``OSError`` when it cannot be reached
    (``URLError`` included) and ``AdminSetupFailed`` for an unreadable token file."""
    headers = {"Content-Type": "application/json"}
    if admin.token_file is not None:
        headers["Authorization"] = BearerToken.from_file(admin.token_file).authorization()
    request = urllib.request.Request(
        snapshot_url(admin, destination),
        data=json.dumps({"tables": list(tables)}).encode(),
        headers=headers,
        method="POST",
    )
    context = _pinned_context(admin)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return response.status, _document(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _document(exc.read())


def _pinned_context(admin: AdminConfig) -> ssl.SSLContext | None:
    if admin.tls is None:
        return None
    context = ssl.create_default_context(cafile=str(admin.tls.cert_file))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.check_hostname = False
    return context


def _document(body: bytes) -> dict[str, object]:
    try:
        document = json.loads(body)
    except ValueError:
        return {"error": body.decode(errors="replace").strip()}
    return document if isinstance(document, dict) else {"error": str(document)}
