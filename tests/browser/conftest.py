"""A real browser for the web console's tests: Debian's chromium driven by Playwright
(deploy/local/install.sh installs both; Playwright's own browser download is never used).

Without chromium or Playwright the tests skip, saying what to install, unless
CANAL_BRIDGE_REQUIRE_BROWSER=1 (deploy/local/test.sh sets it): then they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"


def _unavailable(reason: str) -> None:
    if os.environ.get("CANAL_BRIDGE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CANAL_BRIDGE_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


# Per module, not per session: Playwright's sync API holds an asyncio loop running on the main
# thread while it is open, which would break every later test that runs a loop of its own.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"{CHROMIUM} is not installed: deploy/local/install.sh test (apt chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        # --no-sandbox: chromium refuses to run as root (CI containers) with its sandbox.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
