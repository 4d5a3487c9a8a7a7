"""The admin endpoint's bearer token: who may read details and call control actions.

Probes (``/healthz``, ``/readyz``) and ``/metrics`` stay open: the kubelet and Prometheus call
them and they hold status words and numbers only. Anything else goes through
``requires_token``:

* a control action (every POST and PUT: ``/api/v1/...`` and ``/destinations/<d>/snapshot``)
  is refused outright when ``admin.token_file`` is not set: nobody on the pod network may
  call it anonymously;
* a details endpoint (``/status``, the API's reads, the console; ``details=True``) is open
  without a token file (the quickstart needs none) and needs the token once one is configured.

A browser sends a stored token by itself only as a cookie, which this endpoint never reads;
still, ``same_site_json`` refuses a change whose ``Origin`` is another site's and any body
that is not JSON (or the configuration's YAML), so an HTML form on another page cannot post.

The token is compared in constant time and never logged: a refusal logs one line naming the
method, path, client address and whether a token was missing or wrong.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from bridge.admin.exceptions import AdminSetupFailed

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class BearerToken:
    """The secret ``Authorization: Bearer <token>`` must carry; ``repr`` never shows it."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("an empty bearer token would let everyone in")
        self._secret = secret.encode()

    @classmethod
    def from_file(cls, path: Path) -> BearerToken:
        """The file's content, trailing newline removed (what a Kubernetes Secret mounts)."""
        try:
            text = path.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise AdminSetupFailed(
                f"admin.token_file: cannot read {path} ({reason}): point it at a readable file "
                "holding the token, or remove the key"
            ) from None
        if not text.strip():
            raise AdminSetupFailed(f"admin.token_file: {path} is empty: put the token in it")
        return cls(text)

    def __repr__(self) -> str:
        return "BearerToken(***)"

    def authorization(self) -> str:
        """The ``Authorization`` header value a client sends (``canal-bridge snapshot``)."""
        return f"Bearer {self._secret.decode()}"

    def verdict(self, authorization: str | None) -> str | None:
        """None when ``authorization`` carries this token, else why not ("no token", ...)."""
        if not authorization:
            return "no token"
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return "not a bearer token"
        if not hmac.compare_digest(credentials.strip().encode(), self._secret):
            return "wrong token"
        return None


TOKEN: web.AppKey[BearerToken | None] = web.AppKey("token")


NO_TOKEN_FILE = (
    "control actions need a bearer token: set admin.token_file to a file holding one and "
    "restart canal-bridge"
)
UNAUTHORIZED = "unauthorized: send the token of admin.token_file as Authorization: Bearer <token>"


def requires_token(handler: Handler, *, details: bool = False, api: bool = False) -> Handler:
    """``handler`` behind the configured token (see the module docstring for ``details``).

    Refusals: 401 with ``WWW-Authenticate: Bearer`` for a missing or wrong token, 403 for a
    control action while no ``admin.token_file`` is configured; as ``{"error"}`` JSON for
    the REST API (``api``), else one line of text.
    """

    async def guarded(request: web.Request) -> web.StreamResponse:
        token = request.app[TOKEN]
        if token is None:
            if details:
                return await handler(request)
            _refused(request, "no admin.token_file configured")
            return _refusal(403, NO_TOKEN_FILE, api)
        why = token.verdict(request.headers.get("Authorization"))
        if why is None:
            return await handler(request)
        _refused(request, why)
        return _refusal(401, UNAUTHORIZED, api, {"WWW-Authenticate": 'Bearer realm="canal-bridge"'})

    guarded.__name__ = getattr(handler, "__name__", "guarded")
    guarded.__doc__ = handler.__doc__
    return guarded


def same_site_json(handler: Handler, content_types: tuple[str, ...]) -> Handler:
    """``handler`` for requests a browser sends only from this endpoint's own pages: 403 when
    an ``Origin`` header names another origin, 415 when the body's type is not one of
    ``content_types`` (an HTML form can send none of JSON and YAML)."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        own = f"{request.scheme}://{request.host}"
        if origin is not None and origin != own:
            _refused(request, f"cross-site request from {origin}")
            return _refusal(
                403, f"cross-site request refused: only pages of {own} may change anything", True
            )
        if request.content_type not in content_types:
            _refused(request, f"body of type {request.content_type}")
            return _refusal(
                415, f"send the body as Content-Type: {' or '.join(content_types)}", True
            )
        return await handler(request)

    guarded.__name__ = getattr(handler, "__name__", "guarded")
    guarded.__doc__ = handler.__doc__
    return guarded


def _refused(request: web.Request, why: str) -> None:
    log.warning(
        "admin endpoint: refused %s %s from %s (%s)",
        request.method,
        request.path,
        request.remote or "?",
        why,
    )


def _refusal(
    status: int, message: str, api: bool, headers: dict[str, str] | None = None
) -> web.Response:
    if api:
        return web.json_response({"error": message}, status=status, headers=headers)
    return web.Response(
        status=status,
        text=message + "\n",
        content_type="text/plain",
        charset="utf-8",
        headers=headers,
    )
