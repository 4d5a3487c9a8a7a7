"""The admin endpoint on ``admin.listen``: ``/metrics``, ``/healthz``, ``/readyz``, ``/status``,
the REST API under ``/api/`` (``bridge.admin.api``: the destinations and the operator's
actions, ``bridge.admin.control``) and the web console at ``/ui/`` (``bridge.admin.web_console``).

An aiohttp server on an asyncio loop of its own (one daemon thread), chosen over the stdlib
``ThreadingHTTPServer`` after measuring both with bench/admin_load.py (docs/operations.md,
"Admin endpoint load"): the stdlib server printed a 21-line traceback to stderr for every
client that hung up early, held idle connections (and a thread each) forever, and timed out
one connection in eight while 1,000 clients scraped (its accept queue holds 5). Here:

* idle connections, and requests whose headers never complete, are closed after
  ``idle_timeout_s``; a response that takes longer than ``request_timeout_s`` is a 503;
* responses are computed on a small bounded thread pool (collecting may read a meta store),
  never on the loop, so slow collection cannot stall accepting;
* a client hanging up is not an error; anything the server or asyncio reports goes through
  the project's logging in one line, never to stderr;
* optional HTTPS (``admin.tls``) and a bearer token (``admin.token_file``, see
  ``bridge.admin.auth``) for anything that is neither a probe nor ``/metrics``.

Probes and metrics hold status words and numbers only: no row data, no addresses, no error
messages, no secrets. Anything else is 404; GET and HEAD are served, POST and PUT for the
API's actions only.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from bridge.admin.api import RestApi
from bridge.admin.api_documents import REFRESH_S
from bridge.admin.auth import TOKEN, BearerToken, requires_token
from bridge.admin.base import Observed
from bridge.admin.control import DestinationControl
from bridge.admin.exceptions import AdminListenFailed, AdminSetupFailed
from bridge.admin.metrics import build_registry
from bridge.admin.periodic import Periodic
from bridge.admin.probes import ProbeResult, Probes, ReadinessLog
from bridge.admin.reach import CHECK_INTERVAL_S, BrokerWatch, kafka_check
from bridge.admin.status_document import status_document
from bridge.admin.web_console import WebConsole
from bridge.config import AdminConfig, BridgeConfig, split_address

log = logging.getLogger(__name__)

T = TypeVar("T")

# How often the readiness log looks for changes (every destination's verdict: with 100 of
# them, once a second was 0.3 % of a core while idle).
READINESS_LOG_INTERVAL_S = 5.0


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What keeps a crowd of clients (or a few bad ones) from wearing the endpoint down."""

    # An open connection with no complete request (idle between requests, or headers never
    # finished) is closed after this long.
    idle_timeout_s: float = 5.0
    # A response not computed within this long is a 503.
    request_timeout_s: float = 10.0
    # Threads computing responses (metrics collection, probes): at most this many at once.
    workers: int = 4
    # Connections the kernel queues before accept (1,000 scrapers connecting at once).
    backlog: int = 1024


class AdminServer:
    """Serves metrics, probes and status for ``observed`` as ``config`` says.

    ``start()`` reads the token and TLS files and binds at once, so a taken port or a bad file
    fails the run before any destination starts (``AdminListenFailed``, ``AdminSetupFailed``);
    it also starts the readiness log and, if given, the ``broker`` watch's checks. ``stop()``
    closes the listening socket and open connections and joins the threads.
    """

    @classmethod
    def for_bridge(
        cls, config: BridgeConfig, observed: Observed, control: DestinationControl | None = None
    ) -> AdminServer:
        """The endpoint of a running bridge: its admin settings, a watch on its Kafka cluster
        that readiness follows, and its destinations' control actions."""
        topic = config.destinations[0].mq.topic
        broker = BrokerWatch(kafka_check(config.kafka, topic))
        return cls(config.admin, observed, broker=broker, control=control)

    def __init__(
        self,
        config: AdminConfig,
        observed: Observed,
        *,
        probes: Probes | None = None,
        registry: CollectorRegistry | None = None,
        broker: BrokerWatch | None = None,
        limits: ServerLimits = ServerLimits(),
        control: DestinationControl | None = None,
    ) -> None:
        if config.listen is None:
            raise ValueError("admin.listen is null: no admin endpoint to serve")
        self.config = config
        self.listen = config.listen
        self.observed = observed
        self.probes = probes or Probes(observed, broker=broker)
        self.registry = registry or build_registry(observed)
        self.limits = limits
        self.control = control
        self.api = RestApi(observed, self.probes, control, self._off_loop)
        self._watchers = [
            Periodic("admin-readiness", READINESS_LOG_INTERVAL_S, ReadinessLog(self.probes).tick),
            Periodic("admin-api-documents", REFRESH_S, self.api.documents.tick),
        ]
        if broker is not None:
            self._watchers.append(
                Periodic("admin-kafka-watch", CHECK_INTERVAL_S, broker.check_once)
            )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._started = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def scheme(self) -> str:
        return "https" if self.config.tls is not None else "http"

    def start(self) -> None:
        if self._started:
            raise RuntimeError(f"admin endpoint on {self.listen} already started")
        self._started = True
        token = BearerToken.from_file(self.config.token_file) if self.config.token_file else None
        tls = self._tls_context()
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(_log_loop_error)
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="admin-worker")
        runner = web.AppRunner(
            self._application(token),
            access_log=None,
            keepalive_timeout=self.limits.idle_timeout_s,
            handle_signals=False,
        )
        try:
            loop.run_until_complete(self._bind(runner, tls))
        except BaseException:
            loop.run_until_complete(runner.cleanup())
            loop.close()
            self._pool.shutdown(wait=False)
            raise
        self._loop, self._runner = loop, runner
        self._thread = threading.Thread(target=loop.run_forever, name="admin-http", daemon=True)
        self._thread.start()
        for watcher in self._watchers:
            watcher.start()
        log.info(
            "health and metrics on %s://%s/ (metrics, healthz, readyz, status, api, ui%s)",
            self.scheme,
            self.listen,
            "; status and the api need the bearer token" if token is not None else "",
        )

    def stop(self) -> None:
        for watcher in self._watchers:
            watcher.stop()
        loop, runner, thread = self._loop, self._runner, self._thread
        if loop is None or runner is None:
            return
        self._loop = self._runner = self._thread = None
        try:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        except Exception as exc:
            log.warning("admin endpoint: closing took too long (%s)", type(exc).__name__)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
        if not loop.is_running():
            loop.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # --- responses (computed on the worker pool) ------------------------------------------

    def metrics(self, accept: str | None) -> tuple[int, str, bytes]:
        encoder, content_type = choose_encoder(accept or "")
        return 200, content_type, encoder(self.registry)

    def health(self) -> tuple[int, str, bytes]:
        return _probe(self.probes.health())

    def readiness(self) -> tuple[int, str, bytes]:
        return _probe(self.probes.readiness())

    def status(self) -> tuple[int, str, bytes]:
        document = status_document(self.observed.snapshots(), self.probes.verdicts())
        return 200, "application/json", document

    # --- wiring ---------------------------------------------------------------------------

    def _application(self, token: BearerToken | None) -> web.Application:
        app = web.Application(handler_args={"max_field_size": 8190, "max_line_size": 8190})
        app[TOKEN] = token
        app.router.add_get(
            "/metrics", self._handler(lambda r: self.metrics(r.headers.get("Accept")))
        )
        app.router.add_get("/healthz", self._handler(lambda r: self.health()))
        app.router.add_get("/readyz", self._handler(lambda r: self.readiness()))
        app.router.add_get(
            "/status", requires_token(self._handler(lambda r: self.status()), details=True)
        )
        self.api.add_routes(app)
        WebConsole().add_routes(app)
        app.on_response_prepare.append(_plain_headers)
        return app

    def _handler(
        self, respond: Callable[[web.Request], tuple[int, str, bytes]]
    ) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.Response:
            try:
                status, content_type, body = await self._off_loop(lambda: respond(request))
            except TimeoutError:
                log.warning(
                    "admin endpoint: %s took over %.0f s; answered 503",
                    request.path,
                    self.limits.request_timeout_s,
                )
                status, content_type, body = 503, "text/plain; charset=utf-8", b"busy\n"
            except Exception:
                log.exception("admin endpoint: %s failed", request.path)
                status, content_type, body = 500, "text/plain; charset=utf-8", b"error\n"
            return web.Response(status=status, body=body, headers={"Content-Type": content_type})

        return handle

    async def _off_loop(self, compute: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, compute)
        return await asyncio.wait_for(future, self.limits.request_timeout_s)

    async def _bind(self, runner: web.AppRunner, tls: ssl.SSLContext | None) -> None:
        await runner.setup()
        host, port = split_address(self.listen)
        site = web.TCPSite(runner, host, port, ssl_context=tls, backlog=self.limits.backlog)
        try:
            await site.start()
        except OSError as exc:
            raise AdminListenFailed(self.listen, exc.strerror or str(exc)) from exc

    def _tls_context(self) -> ssl.SSLContext | None:
        tls = self.config.tls
        if tls is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(tls.cert_file, tls.key_file)
        except (OSError, ssl.SSLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise AdminSetupFailed(
                f"admin.tls: cannot load cert_file {tls.cert_file} with key_file "
                f"{tls.key_file} ({reason}): give a PEM certificate (chain) and its "
                "unencrypted PEM key"
            ) from None
        return context


def _probe(result: ProbeResult) -> tuple[int, str, bytes]:
    return (200 if result.ok else 503), "text/plain; charset=utf-8", result.body().encode()


async def _plain_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = "canal-bridge"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"


def _log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's own reports (a transport error, a failed TLS handshake...): one line through
    logging instead of a traceback on stderr; a client hanging up is not even that."""
    exc = context.get("exception")
    if isinstance(exc, ConnectionError | ssl.SSLError):
        log.debug("admin endpoint: %s: %s", type(exc).__name__, exc)
        return
    what = f"{type(exc).__name__}: {exc}" if exc is not None else ""
    log.warning("admin endpoint: %s %s", context.get("message", "asyncio error"), what)
