"""Chunks wait for the stream to pass their high watermark, then go in as BEGIN, rows minus
the keys changed in their window (``per_entry`` to an entry), END (each rows entry and the END
carrying the progress)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from bridge.entry import Column, EncodedRowsApart, Entry, EntryType, RowData
from bridge.mq.flat_encoder import RenderedRecords
from bridge.position import EntryPosition, SnapshotProgress, TableProgress, snapshot_progress_of
from bridge.snapshot.handoff import Chunk, SnapshotHandoff
from bridge.snapshot.window import WatermarkWindows
from tests.unit.snapshot.entries import rows_event
from tests.unit.store.factories import BINLOG, ddl

PLAN = SnapshotProgress((TableProgress("shop.orders"),))


def _image(key: str) -> RowData:
    return RowData(after=(Column(0, 4, "id", True, True, False, key, "int"),))


def _chunk(
    low: tuple[str, int],
    high: int,
    keys: Sequence[str],
    *,
    last: bool = False,
    per_entry: int = 1,
    rows: Sequence[RowData] | EncodedRowsApart | None = None,
) -> Chunk:
    return Chunk(
        table="shop.orders",
        key_columns=("id",),
        number=0,
        rows=[_image(k) for k in keys] if rows is None else rows,
        keys=[(k,) for k in keys],
        per_entry=per_entry,
        entry_keys=[
            [["int", keys[min(i + per_entry, len(keys)) - 1]]]
            for i in range(0, len(keys), per_entry)
        ],
        low=low,
        high=(BINLOG, high),
        read_ms=1_800_000_000_000,
        end_key=[["int", keys[-1]]] if keys else None,
        last=last,
    )


def _handoff(
    *, drop: bool = True, start: EntryPosition | None = None
) -> tuple[SnapshotHandoff, list[Entry]]:
    put: list[Entry] = []
    windows = WatermarkWindows((BINLOG, 100), ["shop.orders"])
    return SnapshotHandoff(PLAN, windows, put.extend, start=start, drop_changed_keys=drop), put


def _at(offset: int) -> EntryPosition:
    return EntryPosition(BINLOG, offset, server_id=1)


def test_a_chunk_waits_for_its_high_watermark_and_leaves_out_changed_keys() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1", "2", "3"])
    handoff.offer(chunk)
    assert not put and not chunk.done.is_set()  # the stream has not reached H yet
    with handoff.lock:
        handoff.observe([rows_event(300, ("2",))])
        handoff.flushed(_at(400))
    assert not put
    with handoff.lock:
        handoff.flushed(_at(500))
    assert chunk.done.is_set() and not chunk.redo
    kinds = [e.entry_type for e in put]
    assert kinds == [
        EntryType.TRANSACTIONBEGIN,
        EntryType.ROWDATA,
        EntryType.ROWDATA,
        EntryType.TRANSACTIONEND,
    ]
    rows = [e for e in put if e.entry_type is EntryType.ROWDATA]
    assert [r.row_change.row_datas[0].after[0].value for r in rows] == ["1", "3"]  # type: ignore[union-attr,index]
    assert all(
        e.header.logfile_offset == 500 and e.header.execute_time == 1_800_000_000_000 for e in put
    )
    progress = [snapshot_progress_of(e) for e in put]
    assert progress[0] is None
    assert progress[1] == SnapshotProgress((TableProgress("shop.orders", [["int", "1"]], 1),))
    assert progress[3] == SnapshotProgress((TableProgress("shop.orders", [["int", "3"]], 2),))
    assert (chunk.rows_put, chunk.rows_dropped) == (2, 1)
    assert handoff.progress == progress[3]


def test_without_dropping_the_changed_key_goes_in() -> None:
    """The negative case: with the safety step off the stale row of key 2 is put."""
    handoff, put = _handoff(drop=False)
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1", "2"])
    with handoff.lock:
        handoff.observe([rows_event(300, ("2",))])
        handoff.flushed(_at(500))
    handoff.offer(chunk)
    assert sum(e.entry_type is EntryType.ROWDATA for e in put) == 2


def test_a_change_after_high_but_before_the_chunk_goes_in_is_left_out_too() -> None:
    """The stream ran past H before the chunk came: the event of key 2 (after H) is in the
    store ahead of the chunk, whose older row of key 2 must not follow it."""
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1", "2"])
    with handoff.lock:
        handoff.observe([rows_event(600, ("2",))])
        handoff.flushed(_at(700))
    handoff.offer(chunk)
    rows = [e for e in put if e.entry_type is EntryType.ROWDATA]
    assert [r.row_change.row_datas[0].after[0].value for r in rows] == ["1"]  # type: ignore[union-attr,index]


def test_an_idle_stream_past_high_puts_the_chunk_at_once_but_not_mid_transaction() -> None:
    handoff, put = _handoff()
    with handoff.lock:
        handoff.flushed(_at(600))
        handoff.flushed(None)  # a piece of a large transaction
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1"], last=True)
    handoff.offer(chunk)
    assert not put
    with handoff.lock:
        handoff.idle_at(_at(700))  # a heartbeat inside a transaction changes nothing
        handoff.flushed(_at(700))
    assert chunk.done.is_set() and len(put) == 3
    assert snapshot_progress_of(put[-1]) == SnapshotProgress(
        (TableProgress("shop.orders", [["int", "1"]], 1, done=True),)
    )


def test_the_streams_start_is_a_boundary_a_chunk_goes_in_at_before_anything_flushed() -> None:
    # An idle source: the stream flushes nothing and heartbeats come only every
    # heartbeat_period_s; a chunk whose H the start already reached must not wait for one.
    handoff, put = _handoff(start=_at(500))
    reached = _chunk(handoff.windows.begin_chunk(), 500, ["1"])
    handoff.offer(reached)
    assert reached.done.is_set() and len(put) == 3
    beyond = _chunk(handoff.windows.begin_chunk(), 501, ["2"])
    handoff.offer(beyond)
    assert not beyond.done.is_set() and len(put) == 3  # H past the start: it waits
    with handoff.lock:
        handoff.flushed(_at(501))
    assert beyond.done.is_set() and len(put) == 6


def test_without_a_start_a_chunk_waits_for_the_first_boundary() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1"])
    handoff.offer(chunk)
    assert not chunk.done.is_set() and not put
    with handoff.lock:
        handoff.idle_at(_at(500))  # the first heartbeat
    assert chunk.done.is_set() and len(put) == 3


def test_a_gtid_only_start_is_no_binlog_boundary() -> None:
    handoff, put = _handoff(start=EntryPosition(gtid="0-1-5"))
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1"])
    handoff.offer(chunk)
    assert not chunk.done.is_set() and not put


def test_a_ddl_in_the_window_sends_the_chunk_back_to_be_read_again() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1"])
    with handoff.lock:
        handoff.observe([ddl(300, "shop", "orders")])
        handoff.flushed(_at(500))
    handoff.offer(chunk)
    assert chunk.done.is_set() and chunk.redo and not put
    assert handoff.progress == PLAN


def test_cancel_releases_waiting_chunks_unput() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1"])
    handoff.offer(chunk)
    handoff.cancel()
    assert chunk.done.is_set() and chunk.redo and not put


def _values(entry: Entry) -> list[str]:
    assert entry.row_change is not None
    return [row.after[0].value for row in entry.row_change.row_datas]  # type: ignore[union-attr]


def test_rows_go_in_per_entry_to_an_entry_each_entry_an_ack_point_after_its_last_key() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1", "2", "3", "4", "5"], per_entry=2)
    assert [k[0][1] for k in chunk.entry_keys] == ["2", "4", "5"]  # type: ignore[index]
    with handoff.lock:
        handoff.observe([rows_event(300, ("2",))])
        handoff.flushed(_at(500))
    handoff.offer(chunk)
    rows = [e for e in put if e.entry_type is EntryType.ROWDATA]
    assert [_values(e) for e in rows] == [["1"], ["3", "4"], ["5"]]
    # Each entry resumes after its last row's key, a dropped one too (the stream holds its
    # newer state, ahead of the chunk).
    assert [snapshot_progress_of(e) for e in rows] == [
        SnapshotProgress((TableProgress("shop.orders", [["int", k]], n),))
        for k, n in (("2", 1), ("4", 3), ("5", 4))
    ]
    assert (chunk.rows_put, chunk.rows_dropped) == (4, 1)


def test_an_entry_whose_rows_all_changed_is_left_out() -> None:
    handoff, put = _handoff()
    chunk = _chunk(handoff.windows.begin_chunk(), 500, ["1", "2", "3"], per_entry=2)
    with handoff.lock:
        handoff.observe([rows_event(300, ("1",)), rows_event(310, ("2",))])
        handoff.flushed(_at(500))
    handoff.offer(chunk)
    rows = [e for e in put if e.entry_type is EntryType.ROWDATA]
    assert [_values(e) for e in rows] == [["3"]]
    assert snapshot_progress_of(put[-1]) == SnapshotProgress(
        (TableProgress("shop.orders", [["int", "3"]], 1),)
    )


def test_rows_rendered_apart_are_picked_without_the_changed_keys() -> None:
    handoff, put = _handoff()
    keys = ["1", "2", "3"]
    rendered = RenderedRecords(
        [f"h{k}".encode() for k in keys], b"m", b"t", [k.encode() for k in keys]
    )
    chunk = _chunk(handoff.windows.begin_chunk(), 500, keys, per_entry=3, rows=rendered)
    with handoff.lock:
        handoff.observe([rows_event(300, ("2",))])
        handoff.flushed(_at(500))
    handoff.offer(chunk)
    (entry,) = [e for e in put if e.entry_type is EntryType.ROWDATA]
    assert entry.row_change is not None
    assert entry.row_change.row_datas == RenderedRecords([b"h1", b"h3"], b"m", b"t", [b"1", b"3"])


class _Store:
    """The store's backlog as the handoff reads it: items held unacknowledged."""

    def __init__(self) -> None:
        self.unacked_items = 0


def test_readers_wait_while_the_store_holds_too_many_unacknowledged_snapshot_rows() -> None:
    put: list[Entry] = []
    store = _Store()
    windows = WatermarkWindows((BINLOG, 100), ["shop.orders"])
    handoff = SnapshotHandoff(
        PLAN, windows, put.extend, start=_at(500), store=store, backlog_rows=3
    )
    stopping = threading.Event()
    handoff.wait_for_room(stopping)  # nothing in the store: at once
    store.unacked_items = 2
    handoff.wait_for_room(stopping)  # 2 items < 3
    store.unacked_items = 4
    waiter = threading.Thread(target=handoff.wait_for_room, args=(stopping,))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # 4 items unacknowledged
    store.unacked_items = 2  # acknowledged down to 2
    waiter.join(5)
    assert not waiter.is_alive()
    store.unacked_items = 3
    waiter = threading.Thread(target=handoff.wait_for_room, args=(stopping,))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # 3 items: not below the backlog
    stopping.set()  # stopping releases a waiting reader
    waiter.join(5)
    assert not waiter.is_alive()
