"""The web console at ``/ui/`` (docs/operations.md, "Web console"): three static files shipped
in the package (``console/``), read once at start; the page calls the REST API for its data.

The pages carry no data and are served without the token; what the console shows comes from
the API under the API's rules. Every answer forbids what a hostile value could use: scripts
and styles from anywhere but this endpoint's own files (so no inline script runs, whatever a
table name holds), content sniffing, and framing by another page (clickjacking).
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

FILES = {
    "index.html": "text/html",
    "console.js": "text/javascript",
    "console.css": "text/css",
}

HEADERS = {
    "Content-Security-Policy": "default-src 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class WebConsole:
    """The console's routes: ``/ui`` redirects to ``/ui/``, which is ``index.html``."""

    def __init__(self) -> None:
        folder = resources.files("bridge.admin").joinpath("console")
        self._files = {name: folder.joinpath(name).read_bytes() for name in FILES}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/ui", self._redirect)
        app.router.add_get("/ui/", self._file)
        app.router.add_get("/ui/{name}", self._file)

    async def _redirect(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/ui/")

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info.get("name", "index.html")
        if name not in self._files:
            return web.Response(status=404, text="no such file\n", headers=HEADERS)
        return web.Response(
            body=self._files[name],
            headers={**HEADERS, "Content-Type": f"{FILES[name]}; charset=utf-8"},
        )
