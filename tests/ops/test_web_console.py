"""The web console's files on the admin endpoint (a loopback port, no services, no browser):
the redirect, the security headers, and the rules the files keep (no inline script or style,
nothing set as HTML, nothing from another host). tests/browser drives the page itself."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from importlib import resources

import pytest

from bridge.admin import AdminServer
from bridge.config import AdminConfig
from tests.ops.helpers import free_port
from tests.ops.test_admin_server import RUNNING, FakeObserved

CONSOLE = resources.files("bridge.admin").joinpath("console")


@pytest.fixture
def base() -> Iterator[str]:
    server = AdminServer(AdminConfig(listen=f"127.0.0.1:{free_port()}"), FakeObserved(RUNNING))
    server.start()
    try:
        yield f"http://{server.listen}"
    finally:
        server.stop()


def fetch(url: str) -> tuple[int, dict[str, str], bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, dict(response.headers), response.read(), response.url
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read(), url


@pytest.mark.parametrize(
    ("path", "content_type", "file"),
    [
        ("/ui", "text/html", "index.html"),  # redirected to /ui/
        ("/ui/", "text/html", "index.html"),
        ("/ui/console.js", "text/javascript", "console.js"),
        ("/ui/console.css", "text/css", "console.css"),
    ],
)
def test_the_console_is_served_with_headers_that_confine_it(
    base: str, path: str, content_type: str, file: str
) -> None:
    status, headers, body, url = fetch(base + path)
    assert status == 200 and url == base + ("/ui/" if path == "/ui" else path)
    assert headers["Content-Type"] == f"{content_type}; charset=utf-8"
    assert headers["Content-Security-Policy"] == "default-src 'self'"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert body == CONSOLE.joinpath(file).read_bytes()


def test_anything_else_under_ui_is_404(base: str) -> None:
    for path in ("/ui/nothing.js", "/ui/..%2fopenapi.json", "/ui/console/index.html"):
        status, headers, _, _ = fetch(base + path)
        assert status == 404, path
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_runs_no_inline_code_and_loads_nothing_from_elsewhere() -> None:
    html = CONSOLE.joinpath("index.html").read_text()
    # Every script has a src, no element carries a style or an on... handler, no <style>.
    assert re.findall(r"<script[^>]*>", html) == ['<script src="console.js" defer>']
    assert not re.search(r"\son[a-z]+=|\sstyle=|<style", html)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)


def test_the_script_never_sets_html_from_data() -> None:
    script = CONSOLE.joinpath("console.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "textContent" in script
