"""On-demand snapshot requests, the pure part: the names, their check against the source and
the filter, the plan after a request, the marker that carries the plan to the cursor."""

from __future__ import annotations

import pytest

from bridge.entry import EntryType
from bridge.position import (
    EntryPosition,
    LogIdentity,
    SnapshotProgress,
    TableProgress,
    ack_position_after,
    is_ack_point,
)
from bridge.snapshot.exceptions import SnapshotRequestRefused
from bridge.snapshot.requests import check_tables, parse_tables, plan_marker, with_tables_again
from tests.unit.snapshot.test_planner import _Conn, destination

SOURCE = [(b"shop", b"orders"), (b"shop", b"Lines"), (b"shop", b"audit_log"), (b"crm", b"users")]


def test_names_are_split_trimmed_and_deduplicated_in_order() -> None:
    assert parse_tables(" shop.orders, crm.users,shop.orders,") == ("shop.orders", "crm.users")
    assert parse_tables(["shop.orders"]) == ("shop.orders",)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("orders", "'orders' is not schema.table"),
        ("shop.", "'shop.' is not schema.table"),
        ("a.b.c", "'a.b.c' is not schema.table"),
        ("", "name at least one table"),
        ([], "name at least one table"),
        ([3], "3 is not a name"),
    ],
)
def test_names_that_are_not_schema_table_are_refused_in_one_line(given: object, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        parse_tables(given)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_existing_filtered_tables_pass_as_the_source_spells_them() -> None:
    config = destination(filter={"regex": "shop\\..*"})
    accepted = check_tables(_Conn(SOURCE), config, ["shop.orders", "SHOP.lines"])
    assert accepted == ("shop.orders", "shop.Lines")


def test_unknown_and_filtered_out_tables_refuse_the_whole_request_naming_each() -> None:
    config = destination(filter={"regex": "shop\\..*", "black_regex": "shop\\.audit_.*"})
    with pytest.raises(SnapshotRequestRefused) as caught:
        check_tables(
            _Conn(SOURCE), config, ["shop.orders", "shop.nope", "shop.audit_log", "crm.users"]
        )
    refusal = caught.value
    assert refusal.unknown == ("shop.nope",)
    assert refusal.filtered == ("shop.audit_log", "crm.users")
    message = str(refusal)
    assert "no such base table on the source: shop.nope" in message
    assert "filter.regex / filter.black_regex: shop.audit_log, crm.users" in message
    assert "shop.orders" not in message  # the accepted one is not blamed


def test_a_request_starts_its_tables_again_and_keeps_the_others() -> None:
    plan = SnapshotProgress(
        (
            TableProgress("shop.lines", [["int", "9"]], 9, done=True),
            TableProgress("shop.orders", [["int", "40"]], 40),
            TableProgress("shop.users", [["int", "7"]], 7, done=True),
        )
    )
    after = with_tables_again(plan, ["shop.orders", "shop.lines", "crm.notes"])
    assert after.tables == (
        TableProgress("crm.notes"),
        TableProgress("shop.lines"),  # done: from its first row again
        TableProgress("shop.orders"),  # half read: from its first row again
        TableProgress("shop.users", [["int", "7"]], 7, done=True),  # not named: as it was
    )
    assert with_tables_again(None, ["shop.orders"]).tables == (TableProgress("shop.orders"),)


def test_the_plan_marker_is_an_empty_chunk_whose_end_carries_the_plan_to_the_cursor() -> None:
    plan = SnapshotProgress((TableProgress("shop.orders"),))
    at = EntryPosition("binlog.000003", 1200, 1, "0-1-5")
    begin, end = plan_marker(plan, at, 1_800_000_000_000)
    assert (begin.entry_type, end.entry_type) == (
        EntryType.TRANSACTIONBEGIN,
        EntryType.TRANSACTIONEND,
    )
    assert not is_ack_point(begin) and is_ack_point(end)
    identity = LogIdentity("db:3306", 9)
    cursor = ack_position_after(identity, end, None)
    assert cursor.snapshot == plan
    # Resuming after it resumes where it was put: nothing of the stream is skipped.
    assert (cursor.position.journal_name, cursor.position.position) == ("binlog.000003", 1200)
