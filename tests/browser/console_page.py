"""The console page as the browser tests use it: a fresh tab with its dialogs answered, and
the cells of a destination's row."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by the browser fixture, which skips without Playwright
    from playwright.sync_api import Browser, Dialog, Locator, Page


@dataclass
class Dialogs:
    """Answers the page's confirm() and prompt() dialogs; records every dialog shown, so a
    test can say that no alert() ran."""

    prompts: list[str] = field(default_factory=list)
    shown: list[tuple[str, str]] = field(default_factory=list)

    def answer(self, dialog: Dialog) -> None:
        self.shown.append((dialog.type, dialog.message))
        if dialog.type == "prompt":
            dialog.accept(self.prompts.pop(0))
        elif dialog.type == "confirm":
            dialog.accept()
        else:
            dialog.dismiss()

    def of_type(self, kind: str) -> list[str]:
        return [message for shown, message in self.shown if shown == kind]


def open_page(browser: Browser, url: str) -> tuple[Page, Dialogs]:
    """A fresh tab (its own sessionStorage) on ``url`` with its dialogs answered."""
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    dialogs = Dialogs()
    page.on("dialog", dialogs.answer)
    page.goto(url)
    return page, dialogs


def cell(page: Page, destination: str, column: str) -> Locator:
    """The ``column`` cell (name, state, lag, rate, rows, cursor, snapshot, error) of a row."""
    return page.locator(f"tr[data-destination='{destination}'] td.{column}")


def act(page: Page, destination: str, action: str) -> None:
    """Click an action's button (pause, resume, snapshot, cursor) in a destination's row."""
    page.locator(f"tr[data-destination='{destination}'] button[data-action='{action}']").click()
