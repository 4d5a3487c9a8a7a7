"""The web console in a real browser against a real ``canal-bridge run`` (MariaDB, Kafka): the
page follows writes within 2 s, pauses and resumes with nothing lost, moves a paused cursor
back (and is refused while it runs), shows a snapshot to 100 %, shows a destination added to
the configuration file and the problems of a bad one, shows hostile names and errors as
text, and says so when an action lacks the token.

One bridge process and one browser for the module; each test continues from the state the
one before left (they run in file order). With CANAL_BRIDGE_SCREENSHOT set, the page with data
is saved to docs/images/console.png (docs/operations.md shows it).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.browser.console_page import Dialogs, act, cell, open_page
from tests.conftest import MysqlEndpoint, execute_admin
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_records_to_end, write_config
from tests.ops.helpers import free_port, wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

HOSTILE_TABLE = "<script>alert(1)</script>"
HOSTILE_ERROR_TABLE = "<img src=x onerror=alert(2)>"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs/images/console.png"


@dataclass
class Console:
    mysql: MysqlEndpoint
    kafka: str
    schema: str
    topic: str
    destination: str
    config: Path
    bridge: BridgeProcess
    page: Page
    dialogs: Dialogs
    next_id: int = 1

    def insert(self, count: int, table: str = "items") -> list[int]:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        execute_admin(
            self.mysql,
            f"INSERT INTO `{self.schema}`.`{table}` VALUES "
            + ",".join(f"({i}, 'v{i}')" for i in ids),
        )
        return ids

    def streamed_ids(self) -> list[int]:
        """The ids of every streamed (not snapshot) items row in the topic."""
        return [
            int(row["id"])
            for record in read_records_to_end(self.kafka, self.topic, timeout_s=20)
            if record.message.get("table") == "items"
            and "canal-bridge-snapshot" not in record.headers
            for row in record.message.get("data") or ()
        ]

    def text(self, column: str) -> str:
        return cell(self.page, self.destination, column).text_content() or ""

    def until(self, condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
        assert self.bridge.process is not None and self.bridge.process.poll() is None, (
            self.bridge.output()[-3000:]
        )
        return wait_until(condition, timeout_s, what, interval_s=0.1)


def message(page: Page) -> str:
    return page.text_content("#message") or ""


@pytest.fixture(scope="module")
def console(
    tmp_path_factory: pytest.TempPathFactory,
    browser: Browser,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
) -> Iterator[Console]:
    folder = tmp_path_factory.mktemp("console")
    schema = f"t_console_{uuid.uuid4().hex[:8]}"
    execute_admin(
        mysql,
        f"CREATE DATABASE `{schema}`",
        f"CREATE TABLE `{schema}`.items (id INT PRIMARY KEY, v VARCHAR(20))",
        f"CREATE TABLE `{schema}`.`{HOSTILE_TABLE}` (id INT PRIMARY KEY, v VARCHAR(20))",
        f"INSERT INTO `{schema}`.`{HOSTILE_TABLE}` VALUES (1, 'x')",
    )
    topic = f"console-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    path = write_config(folder / "destinations.yaml", mysql, kafka_bootstrap, schema, topic)
    token = f"t-{uuid.uuid4().hex}"
    (folder / "admin-token").write_text(token + "\n")
    config = yaml.safe_load(path.read_text())
    listen = f"127.0.0.1:{free_port()}"
    config["admin"] = {"listen": listen, "token_file": str(folder / "admin-token")}
    config["destinations"][0]["snapshot"] = {"mode": "never", "chunk_size": 50}
    path.write_text(yaml.safe_dump(config))
    destination = config["destinations"][0]["name"]
    bridge = BridgeProcess(path).start()
    try:
        bridge.wait_for_output(f"destination {destination} reading", timeout_s=60)
        page, dialogs = open_page(browser, f"http://{listen}/ui")
        page.fill("#token", token)
        page.click("#token-form button[type=submit]")
        found = Console(
            mysql, kafka_bootstrap, schema, topic, destination, path, bridge, page, dialogs
        )
        found.until(lambda: found.text("state") == "running", 10, "the destination's row")
        yield found
    finally:
        bridge.kill()
        execute_admin(mysql, f"DROP DATABASE IF EXISTS `{schema}`")


def test_lag_and_rows_follow_writes_within_two_seconds(console: Console) -> None:
    before = int(console.text("rows"))
    console.insert(20)
    written = time.monotonic()
    console.until(lambda: int(console.text("rows")) >= before + 20, 2.0, "the row count")
    assert time.monotonic() - written <= 2.0
    assert float(console.text("lag")) < 5  # a number: the destination has read its source
    console.until(lambda: console.text("rate") not in ("\u2013", "0"), 2.0, "a rate of rows/s")


def test_pausing_from_the_page_stops_records_and_resuming_loses_nothing(
    console: Console,
) -> None:
    act(console.page, console.destination, "pause")
    assert console.dialogs.of_type("confirm")[-1] == f"Pause destination {console.destination}?"
    console.until(lambda: console.text("state") == "paused", 10, "the paused state")
    streamed = console.streamed_ids()
    held = console.insert(10)
    time.sleep(1.5)  # what a running destination takes to deliver them (the test above: < 2 s)
    assert console.streamed_ids() == streamed  # nothing while paused
    act(console.page, console.destination, "resume")
    console.until(lambda: console.text("state") == "running", 10, "the running state")
    console.until(
        lambda: set(held) <= set(console.streamed_ids()), 10, "the rows written while paused"
    )
    ids = console.streamed_ids()
    assert sorted(ids) == list(range(1, console.next_id)) == sorted(set(ids))


def test_a_cursor_moved_from_the_page_replays_from_there_and_is_refused_while_running(
    console: Console,
) -> None:
    page = console.page
    before = console.text("cursor")  # the acked cursor, everything delivered
    ids = console.insert(5)
    console.until(lambda: set(ids) <= set(console.streamed_ids()), 10, "the rows streamed")
    console.dialogs.prompts.append(before)
    act(page, console.destination, "cursor")
    refused = (
        f"Cursor of {console.destination} refused: destination {console.destination} is running"
    )
    console.until(lambda: refused in message(page), 10, "the refusal while running")
    act(page, console.destination, "pause")
    console.until(lambda: console.text("state") == "paused", 10, "the paused state")
    console.dialogs.prompts.append(before)
    act(page, console.destination, "cursor")
    console.until(lambda: "Cursor of" in message(page) and "done" in message(page), 10, "moved")
    act(page, console.destination, "resume")
    console.until(
        lambda: all(console.streamed_ids().count(i) == 2 for i in ids), 10, "the rows replayed"
    )


def test_a_snapshot_started_from_the_page_shows_its_progress_to_100(console: Console) -> None:
    console.insert(150)
    console.dialogs.prompts.append(f"{console.schema}.items")
    act(console.page, console.destination, "snapshot")
    console.until(
        lambda: "100 %" in console.text("snapshot"), 20, "the snapshot's progress at 100 %"
    )
    assert "refused" not in message(console.page)
    if os.environ.get("CANAL_BRIDGE_SCREENSHOT"):
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        console.page.screenshot(path=str(SCREENSHOT))


def test_hostile_names_and_errors_show_as_text_and_run_nothing(console: Console) -> None:
    page = console.page
    planned = f"{console.schema}.{HOSTILE_TABLE}"  # the table exists: the snapshot is planned
    console.dialogs.prompts.append(planned)
    act(page, console.destination, "snapshot")
    console.until(lambda: f"planned {planned}" in message(page), 10, "the planned table")
    missing = f"{console.schema}.{HOSTILE_ERROR_TABLE}"  # it does not: the error names it
    console.dialogs.prompts.append(missing)
    act(page, console.destination, "snapshot")
    refusal = f"no such base table on the source: {missing}"
    console.until(lambda: refusal in message(page), 10, "the refusal naming the table")
    assert page.locator("script").count() == 1  # console.js only
    assert page.locator("#message *, td img").count() == 0
    assert console.dialogs.of_type("alert") == []


def test_a_destination_added_to_the_file_appears_and_a_bad_file_is_refused_on_the_page(
    console: Console,
) -> None:
    config = yaml.safe_load(console.config.read_text())
    added = dict(config["destinations"][0], name=f"{console.destination}-added")
    added["source"] = dict(added["source"], slave_id=added["source"]["slave_id"] + 1)
    config["destinations"].append(added)
    console.config.write_text(yaml.safe_dump(config))
    page = console.page
    console.until(
        lambda: cell(page, added["name"], "state").all_text_contents() == ["running"],
        15,
        "the added destination running on the page",
    )
    assert console.text("state") == "running"
    # A bad file pasted into the page is refused with its problems; nothing changes.
    config["destinations"][1]["mq"]["colour"] = "red"
    page.fill("#config-text", yaml.safe_dump(config))
    page.click("#config-validate")
    console.until(
        lambda: "mq.colour: unknown key" in (page.text_content("#config-result") or ""),
        5,
        "the problem shown",
    )
    assert page.locator("#destinations tbody tr").count() == 2


def test_an_action_without_the_token_is_refused_and_the_page_says_so(console: Console) -> None:
    page = console.page
    page.click("#forget-token")
    act(page, console.destination, "pause")
    refused = f"Pause of {console.destination} refused: Refused: unauthorized"
    console.until(lambda: refused in message(page), 5, "the refusal")
    console.until(
        lambda: "not updated: Refused" in (page.text_content("#updated") or ""), 3, "reads refused"
    )
    ids = console.insert(3)  # still running: the refused pause did nothing
    console.until(lambda: set(ids) <= set(console.streamed_ids()), 10, "the rows streamed")
