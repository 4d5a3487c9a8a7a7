"""The web console with 100 destinations served by a fake (no services): filtering and sorting,
rows kept across polls rather than rebuilt, the data of a poll within 200 ms, and an
error text holding markup shown as text."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from bridge.admin import AdminServer
from bridge.config import AdminConfig
from bridge.mq.worker import WorkerProgress
from tests.browser.console_page import cell, open_page
from tests.ops.helpers import free_port, wait_until
from tests.ops.test_admin_server import FakeObserved
from tests.ops.test_api import PAUSED, FakeControl

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

HOSTILE_ERROR = "<img src=x onerror=alert(1)> source refused: check source.username"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The endpoint's address; started before the browser, whose Playwright loop would keep
    the server's start from running its own on this thread."""
    destinations = [
        dataclasses.replace(
            PAUSED,
            destination=f"d{i:03}",
            state="running" if i % 10 else "failed",
            progress=WorkerProgress(f"d{i:03}", state="running", rows_sent=i * 7 % 100),
            error=HOSTILE_ERROR if i == 42 else None,
        )
        for i in range(100)
    ]
    config = AdminConfig(listen=f"127.0.0.1:{free_port()}")
    server = AdminServer(config, FakeObserved(*destinations), control=FakeControl())
    server.start()
    try:
        yield config.listen
    finally:
        server.stop()


@pytest.fixture(scope="module")
def page(served: str, browser: Browser) -> Iterator[Page]:
    opened, dialogs = open_page(browser, f"http://{served}/ui/")
    wait_until(lambda: opened.locator("#destinations tbody tr").count() == 100, 5, "rows")
    yield opened
    assert dialogs.of_type("alert") == []


def names(page: Page) -> list[str]:
    return page.locator("#destinations tbody td.name").all_text_contents()


def test_a_hundred_rows_are_kept_across_polls_and_their_data_comes_quickly(page: Page) -> None:
    page.evaluate("document.querySelector('#destinations tbody tr').dataset.kept = 'yes'")
    before = page.text_content("#updated")
    wait_until(lambda: page.text_content("#updated") != before, 3, "the next poll")
    assert page.locator("tr[data-kept='yes']").count() == 1  # the same element, updated
    took = page.evaluate(
        """async () => {
            const start = performance.now();
            const answer = await fetch('/api/v1/destinations');
            await answer.json();
            return performance.now() - start;
        }"""
    )
    assert took < 200, f"the console's data took {took:.0f} ms"


def test_filtering_and_sorting(page: Page) -> None:
    page.fill("#filter", "failed")
    assert names(page) == [f"d{i:03}" for i in range(0, 100, 10)]
    page.fill("#filter", "")
    page.click("th[data-sort='rows']")
    page.click("th[data-sort='rows']")  # again: descending
    rows = [int(text) for text in page.locator("#destinations tbody td.rows").all_text_contents()]
    assert rows == sorted(rows, reverse=True) and len(rows) == 100


def test_an_error_holding_markup_is_shown_as_text(page: Page) -> None:
    assert cell(page, "d042", "error").text_content() == HOSTILE_ERROR
    assert page.locator("td img").count() == 0
