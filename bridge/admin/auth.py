"""The admin endpoint's bearer token: who may read details and call control actions.

Probes (``/healthz``, ``/readyz``) and ``/metrics`` stay open: the kubelet and Prometheus call
them and they hold status words and numbers only. Anything else goes through
``requires_token``:

* a control action (``POST /destinations/<d>/snapshot``) is refused outright
  when ``admin.token_file`` is not set: nobody on the pod network may call it anonymously;
* a details endpoint (``/status``, ``details=True``) is open without a token file (the
  quickstart needs none) and needs the token once one is configured.

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


def requires_token(handler: Handler, *, details: bool = False) -> Handler:
    """``handler`` behind the configured token (see the module docstring for ``details``).

    Refusals: 401 with ``WWW-Authenticate: Bearer`` for a missing or wrong token, 403 for a
    control action while no ``admin.token_file`` is configured.
    """

    async def guarded(request: web.Request) -> web.StreamResponse:
        token = request.app[TOKEN]
        if token is None:
            if details:
                return await handler(request)
            _refused(request, "no admin.token_file configured")
            return _text(403, "control actions need admin.token_file\n")
        why = token.verdict(request.headers.get("Authorization"))
        if why is None:
            return await handler(request)
        _refused(request, why)
        return _text(401, "unauthorized\n", {"WWW-Authenticate": 'Bearer realm="canal-bridge"'})

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


def _text(status: int, body: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, text=body, content_type="text/plain", charset="utf-8", headers=headers
    )
