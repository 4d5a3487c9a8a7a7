"""The REST API under ``/api/v1/`` (docs/operations.md, "REST API"; every route is described
in ``openapi.json``, served at ``/api/openapi.json``).

Reads (``GET /api/v1/destinations[/{name}]``) follow ``/status``'s rule: open without
``admin.token_file``, behind the token with one. Changes (every POST and PUT) need the token
and a same-site JSON request (``bridge.admin.auth``). Answers are computed on the server's
worker pool (``Compute``): they read meta stores, wait for a destination to stop, or ask the
source. Each change request logs one line: the action, its destination, the client and the
answer (never the token, never a request body).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Protocol, TypeVar

import orjson
from aiohttp import web

from bridge.admin.api_actions import config_answer, cursor_answer, switch_answer
from bridge.admin.api_documents import (
    Documents,
    RecentDocuments,
    RowRates,
    destination_documents,
)
from bridge.admin.auth import Handler, requires_token, same_site_json
from bridge.admin.base import Observed
from bridge.admin.control import Answer, DestinationControl, snapshot_answer
from bridge.admin.probes import Probes

log = logging.getLogger(__name__)

T = TypeVar("T")

# The largest body a destination's action reads (a list of table names, a cursor).
MAX_ACTION_BODY = 64 * 1024
# The largest configuration accepted (100 destinations are about 60 KiB of YAML).
MAX_CONFIG_BODY = 1024 * 1024

JSON = ("application/json",)
CONFIG_TYPES = ("application/yaml", "text/plain")


class Compute(Protocol):
    """Runs a blocking function off the event loop; ``TimeoutError`` when it takes too long."""

    def __call__(self, function: Callable[[], T], /) -> Awaitable[T]: ...


class RestApi:
    """The API's routes over what the admin server observes and controls."""

    def __init__(
        self,
        observed: Observed,
        probes: Probes,
        control: DestinationControl | None,
        compute: Compute,
    ) -> None:
        self.observed = observed
        self.probes = probes
        self.control = control
        self._compute = compute
        self._rates = RowRates()
        self.documents = RecentDocuments(self._documents)
        openapi = resources.files("bridge.admin").joinpath("openapi.json").read_bytes()
        self._openapi = orjson.dumps(orjson.loads(openapi))

    def add_routes(self, app: web.Application) -> None:
        def read(handler: Handler) -> Handler:
            return requires_token(handler, details=True, api=True)

        def change(handler: Handler, types: tuple[str, ...] = JSON) -> Handler:
            return same_site_json(requires_token(handler, api=True), types)

        prefix = "/api/v1/destinations/{destination}"
        app.router.add_get("/api/openapi.json", self._openapi_document)
        app.router.add_get("/api/v1/destinations", read(self._list))
        app.router.add_get(prefix, read(self._one))
        app.router.add_post(f"{prefix}/pause", change(self._pause))
        app.router.add_post(f"{prefix}/resume", change(self._resume))
        app.router.add_post(f"{prefix}/snapshot", change(self._snapshot))
        app.router.add_put(f"{prefix}/cursor", change(self._cursor))
        app.router.add_post("/api/v1/config", change(self._config, CONFIG_TYPES))
        # The route `canal-bridge snapshot` calls, kept for clients of earlier releases.
        app.router.add_post("/destinations/{destination}/snapshot", change(self._snapshot))

    # --- reads ----------------------------------------------------------------------------

    async def _openapi_document(self, request: web.Request) -> web.Response:
        return web.Response(body=self._openapi, content_type="application/json")

    async def _list(self, request: web.Request) -> web.Response:
        documents = self.documents.latest()
        if documents is not None:
            return web.json_response({"destinations": documents}, dumps=_dumps)
        return await self._answer(
            request, lambda: (200, {"destinations": self.documents.refresh()})
        )

    async def _one(self, request: web.Request) -> web.Response:
        name = request.match_info["destination"]

        def one(documents: Documents) -> Answer:
            for document in documents:
                if document["name"] == name:
                    return 200, document
            return 404, {
                "error": f"destination {name!r} is not configured on this process; "
                "GET /api/v1/destinations lists those that are"
            }

        documents = self.documents.latest()
        if documents is not None:
            status, document = one(documents)
            return web.json_response(document, status=status, dumps=_dumps)
        return await self._answer(request, lambda: one(self.documents.refresh()))

    def _documents(self) -> list[dict[str, object]]:
        return destination_documents(self.observed.snapshots(), self.probes.verdicts(), self._rates)

    # --- changes --------------------------------------------------------------------------

    async def _pause(self, request: web.Request) -> web.Response:
        destination = request.match_info["destination"]
        return await self._change(
            request,
            "pause",
            destination,
            lambda _: switch_answer(self.control, destination, "pause"),
        )

    async def _resume(self, request: web.Request) -> web.Response:
        destination = request.match_info["destination"]
        return await self._change(
            request,
            "resume",
            destination,
            lambda _: switch_answer(self.control, destination, "resume"),
        )

    async def _snapshot(self, request: web.Request) -> web.Response:
        destination = request.match_info["destination"]
        return await self._change(
            request,
            "snapshot",
            destination,
            lambda body: snapshot_answer(self.control, destination, body),
        )

    async def _cursor(self, request: web.Request) -> web.Response:
        destination = request.match_info["destination"]
        return await self._change(
            request,
            "cursor move",
            destination,
            lambda body: cursor_answer(self.control, destination, body),
        )

    async def _config(self, request: web.Request) -> web.Response:
        apply = request.query.get("apply", "false").lower() in ("true", "1", "yes")
        return await self._change(
            request,
            "apply" if apply else "validation",
            "destinations.yaml",
            lambda body: config_answer(self.control, body, apply),
            MAX_CONFIG_BODY,
        )

    async def _change(
        self,
        request: web.Request,
        action: str,
        target: str,
        answer: Callable[[bytes], Answer],
        max_body: int = MAX_ACTION_BODY,
    ) -> web.Response:
        body = await request.content.read(max_body + 1)
        status: int
        document: dict[str, object]
        if len(body) > max_body:
            status, document = 413, {"error": f"the body is over {max_body} bytes"}
        else:
            status, document = await self._compute_answer(request, lambda: answer(body))
            self.documents.forget()
        log.log(
            logging.INFO if status < 400 else logging.WARNING,
            "admin endpoint: %s of %s requested from %s: %d %s",
            action,
            target,
            request.remote or "?",
            status,
            orjson.dumps(document).decode(),
        )
        return web.json_response(document, status=status, dumps=_dumps)

    async def _answer(self, request: web.Request, answer: Callable[[], Answer]) -> web.Response:
        status, document = await self._compute_answer(request, answer)
        return web.json_response(document, status=status, dumps=_dumps)

    async def _compute_answer(self, request: web.Request, answer: Callable[[], Answer]) -> Answer:
        try:
            return await self._compute(answer)
        except TimeoutError:
            log.warning(
                "admin endpoint: %s %s took too long; answered 503", request.method, request.path
            )
            return 503, {"error": "busy: no answer in time; ask again (the action may still run)"}
        except Exception:
            log.exception("admin endpoint: %s %s failed", request.method, request.path)
            return 500, {"error": "internal error: see canal-bridge's log"}


def _dumps(document: object) -> str:
    return orjson.dumps(document).decode()
