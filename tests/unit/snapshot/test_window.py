"""The watermark windows: which keys a chunk leaves out (docs/snapshots.md)."""

from __future__ import annotations

from bridge.snapshot.window import REDO, WatermarkWindows, key_of
from tests.unit.snapshot.entries import column, rows_event
from tests.unit.store.factories import BINLOG, ddl


def _at(offset: int) -> tuple[str, int]:
    return (BINLOG, offset)


KEY = ("id", "region")


def windows() -> WatermarkWindows:
    return WatermarkWindows(_at(100), ["shop.orders"])


def test_keys_changed_inside_the_window_only() -> None:
    w = windows()
    low = w.begin_chunk()
    assert low == _at(100)  # the first chunk's low watermark: where the stream started
    w.observe([rows_event(50, ("1", "eu"))])  # before the window
    w.observe([rows_event(100, ("2", "eu"))])  # starts at L: written after L was taken
    w.observe([rows_event(400, ("3", "eu"))])  # starts at H: written after H
    w.observe([rows_event(399, ("4", "us"))])
    assert w.changed_keys("shop.orders", KEY, low, _at(400)) == {("2", "eu"), ("4", "us")}


def test_other_tables_are_ignored() -> None:
    w = windows()
    low = w.begin_chunk()
    w.observe([rows_event(200, ("1", "eu"), table="lines")])
    assert w.changed_keys("shop.orders", KEY, low, _at(900)) == set()


def test_an_update_counts_its_old_and_new_key() -> None:
    w = windows()
    low = w.begin_chunk()
    w.observe([rows_event(200, ("7", "eu"), update=True)])
    assert w.changed_keys("shop.orders", KEY, low, _at(900)) == {("7", "eu"), ("70", "eu")}


def test_the_low_watermark_is_the_stream_position_at_the_previous_chunk_start() -> None:
    """The widened window: a change the stream put between the previous chunk's start and this
    chunk's start still drops its key from this chunk."""
    w = windows()
    first = w.begin_chunk()
    w.observe([rows_event(300, ("5", "eu"))])
    w.reached(_at(400))
    second = w.begin_chunk()
    assert second == _at(100)  # the stream stood at 100 when the first chunk began
    third = w.begin_chunk()
    assert third == _at(400)
    assert w.changed_keys("shop.orders", KEY, second, _at(500)) == {("5", "eu")}
    assert w.changed_keys("shop.orders", KEY, third, _at(500)) == set()
    w.release(first)


def test_changes_are_kept_while_a_window_needs_them_and_trimmed_after() -> None:
    w = windows()
    low = w.begin_chunk()
    w.observe([rows_event(200, ("1", "eu"))])
    w.reached(_at(300))
    second = w.begin_chunk()  # low 100 too; the chunk after it starts at 300
    w.release(low)
    assert w.changed_keys("shop.orders", KEY, second, _at(400)) == {("1", "eu")}
    w.release(second)
    assert w.changed_keys("shop.orders", KEY, _at(0), _at(400)) == set()


def test_a_ddl_of_the_table_inside_the_window_asks_for_a_redo() -> None:
    w = windows()
    low = w.begin_chunk()
    w.observe([ddl(250, "shop", "orders")])
    assert w.changed_keys("shop.orders", KEY, low, _at(300)) is REDO
    assert w.changed_keys("shop.orders", KEY, _at(260), _at(300)) == set()


def test_a_row_image_without_the_key_columns_asks_for_a_redo() -> None:
    w = windows()
    low = w.begin_chunk()
    w.observe([rows_event(200, ("1", "eu"))])
    assert w.changed_keys("shop.orders", ("order_no",), low, _at(300)) is REDO


def test_a_table_done_is_no_longer_noted() -> None:
    w = windows()
    low = w.begin_chunk()
    w.untrack("shop.orders")
    w.observe([rows_event(200, ("1", "eu"))])
    assert w.changed_keys("shop.orders", KEY, low, _at(300)) == set()


def test_key_of_reads_by_name_case_insensitively_with_null() -> None:
    columns = (column("ID", "3"), column("Region", None, index=1))
    assert key_of(columns, ("id", "region")) == ("3", None)
    assert key_of(columns, ("id", "other")) is None
