"""The admin HTTP endpoint on ``admin.listen``: ``/metrics``, ``/healthz`` and ``/readyz``.

A small threaded ``http.server`` on its own daemon thread. Responses hold metric values and
status words only: no row data, no addresses, no error messages, no secrets. Anything else is
404; only GET and HEAD are served.
"""

from __future__ import annotations

import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from bridge.admin.base import Observed
from bridge.admin.exceptions import AdminListenFailed
from bridge.admin.metrics import build_registry
from bridge.admin.probes import ProbeResult, Probes
from bridge.config import split_address

log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    admin: AdminServer


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "canal-bridge"
    sys_version = ""

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        admin = self.server.admin
        path = self.path.split("?", 1)[0]
        try:
            if path == "/metrics":
                status, content_type, body = admin.metrics(self.headers.get("Accept"))
            elif path == "/healthz":
                status, content_type, body = _probe(admin.probes.health())
            elif path == "/readyz":
                status, content_type, body = _probe(admin.probes.readiness())
            else:
                status, content_type, body = 404, "text/plain; charset=utf-8", b"not found\n"
        except Exception:
            log.exception("admin endpoint: %s failed", path)
            status, content_type, body = 500, "text/plain; charset=utf-8", b"error\n"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("admin endpoint: " + format, *args)


def _probe(result: ProbeResult) -> tuple[int, str, bytes]:
    return (200 if result.ok else 503), "text/plain; charset=utf-8", result.body().encode()


class AdminServer:
    """Serves metrics and probes for ``observed`` on ``listen`` (``host:port``).

    ``start()`` binds at once, so a taken port fails the run before any destination starts
    (``AdminListenFailed``); ``stop()`` closes the socket and joins the thread.
    """

    def __init__(
        self,
        listen: str,
        observed: Observed,
        *,
        probes: Probes | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.listen = listen
        self.probes = probes or Probes(observed)
        self.registry = registry or build_registry(observed)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError(f"admin endpoint on {self.listen} already started")
        host, port = split_address(self.listen)
        server_class = _Server6 if ":" in host else _Server
        try:
            server = server_class((host, port), _Handler)
        except OSError as exc:
            raise AdminListenFailed(self.listen, exc.strerror or str(exc)) from exc
        server.admin = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="admin-http",
            daemon=True,
        )
        self._thread.start()
        log.info("health and metrics on http://%s/ (metrics, healthz, readyz)", self.listen)

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(5)

    def metrics(self, accept: str | None) -> tuple[int, str, bytes]:
        encoder, content_type = choose_encoder(accept or "")
        return 200, content_type, encoder(self.registry)
