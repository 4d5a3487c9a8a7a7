"""EntrySink: filtering, empty transactions, backpressure and stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from bridge.entry import ROWDATA, Entry, EntryType, EventType, RowChange
from bridge.parse.ddl import classify_ddl, is_transaction_control
from bridge.position import LogIdentity
from bridge.sink import (
    ColumnShaper,
    EntrySink,
    FieldFilter,
    SinkAlreadyStarted,
    SinkOptions,
    SinkStopped,
    TableFilter,
    TransactionBuffer,
)
from bridge.store import BatchMode, BatchTooLarge, MemoryEventStore, MemoryStoreConfig
from tests.unit.store.factories import (
    IDENTITY,
    begin,
    col,
    ddl,
    end,
    header,
    heartbeat,
    row,
)


@pytest.fixture
def store() -> Iterator[MemoryEventStore]:
    s = MemoryEventStore(MemoryStoreConfig(buffer_size=64, batch_mode=BatchMode.ITEMSIZE))
    s.start()
    yield s
    s.stop()


def _sink(
    store: MemoryEventStore,
    regex: str = "",
    black: str = "",
    field: str = "",
    **options: object,
) -> EntrySink:
    sink = EntrySink(
        store,
        TableFilter(regex, black),
        FieldFilter(field),
        SinkOptions(**options),  # type: ignore[arg-type]
    )
    sink.start()
    return sink


def _stored(store: MemoryEventStore) -> list[tuple[str, int]]:
    return [(e.entry_type.name[:5], e.header.logfile_offset) for e in store.get(64).entries]


def test_keeps_accepted_rows_with_their_transaction(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*")
    n = sink.sink([begin(0), row(1, "shop", "orders"), end(2)], IDENTITY)
    assert n == 3
    assert _stored(store) == [("TRANS", 0), ("ROWDA", 1), ("TRANS", 2)]


def test_drops_rows_of_other_tables(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\.orders")
    sink.sink(
        [begin(0), row(1, "shop", "audit"), row(2, "shop", "orders"), row(3, "x", "y"), end(4)],
        IDENTITY,
    )
    assert _stored(store) == [("TRANS", 0), ("ROWDA", 2), ("TRANS", 4)]


def test_black_list_drops_rows(store: MemoryEventStore) -> None:
    sink = _sink(store, black=r"mysql\..*")
    sink.sink([begin(0), row(1, "mysql", "user"), row(2, "shop", "a"), end(3)], IDENTITY)
    assert [o for _, o in _stored(store)] == [0, 2, 3]


def test_ddl_is_filtered_by_its_table(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\.orders")
    sink.sink([ddl(0, "shop", "audit")], IDENTITY)
    sink.sink([ddl(1, "shop", "orders")], IDENTITY)
    sink.sink([ddl(2, "shop", "")], IDENTITY)  # schema-level: "shop." does not match
    assert _stored(store) == [("ROWDA", 1)]


def test_schema_level_ddl_kept_by_schema_wide_pattern(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*")
    sink.sink([ddl(0, "shop", "")], IDENTITY)
    assert _stored(store) == [("ROWDA", 0)]


def test_entries_without_names_are_kept(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\.orders")
    sink.sink([ddl(0, "", "")], IDENTITY)
    assert len(_stored(store)) == 1


def test_heartbeats_are_not_stored(store: MemoryEventStore) -> None:
    sink = _sink(store)
    assert sink.sink([heartbeat(0)], IDENTITY) == 0
    assert store.put_sequence == -1


def test_field_filter_is_applied(store: MemoryEventStore) -> None:
    sink = _sink(store, field="shop.orders:id")
    columns = (col(0, "id", "1", key=True), col(1, "note", "x"))
    sink.sink([begin(0), row(1, "shop", "orders", columns=columns), end(2)], IDENTITY)
    stored = store.get(8).entries[1]
    assert stored.row_change is not None
    assert [c.name for c in stored.row_change.row_datas[0].after] == ["id"]


def test_skipped_change_kinds_are_left_out_and_their_transaction_still_ends(
    store: MemoryEventStore,
) -> None:
    sink = EntrySink(store, skip=("delete", "ddl"))
    sink.start()
    deleted = row(1, event_type=EventType.DELETE)
    updated = row(2, event_type=EventType.UPDATE)
    sink.sink([begin(0), deleted, updated, end(3)], IDENTITY)
    sink.sink([ddl(4)], IDENTITY)
    # A transaction of skipped rows only is empty: its END passes (the first one at once),
    # so the acked position moves past the skipped DELETE.
    sink.sink([begin(5), row(6, event_type=EventType.DELETE), end(7)], IDENTITY)
    assert _stored(store) == [("TRANS", 0), ("ROWDA", 2), ("TRANS", 3), ("TRANS", 5), ("TRANS", 7)]


def test_nothing_is_skipped_by_default_and_statements_never_are(store: MemoryEventStore) -> None:
    sink = EntrySink(store, skip=("ddl",))
    sink.start()
    savepoint = Entry(
        header(1), ROWDATA, RowChange(EventType.QUERY, is_ddl=True, sql="SAVEPOINT a")
    )
    sink.sink([begin(0), savepoint, row(2, event_type=EventType.DELETE), end(3)], IDENTITY)
    assert [o for _, o in _stored(store)] == [0, 1, 2, 3]


def test_snapshot_rows_are_reads_and_not_skipped(store: MemoryEventStore) -> None:
    sink = EntrySink(store, skip=("insert",))
    sink.start()
    sink.put_snapshot([row(1)], IDENTITY)
    assert _stored(store) == [("ROWDA", 1)]


def test_columns_are_shaped_in_streamed_and_snapshot_rows(store: MemoryEventStore) -> None:
    sink = EntrySink(store, shaper=ColumnShaper(mask="shop.orders:note", mask_length=3))
    sink.start()
    columns = (col(0, "id", "1", key=True), col(1, "note", "secret"))
    sink.sink([begin(0), row(1, columns=columns), end(2)], IDENTITY)
    sink.put_snapshot([row(3, columns=columns)], IDENTITY)
    stored = [e for e in store.get(8).entries if e.row_change is not None]
    assert [[c.value for c in e.row_change.row_datas[0].after] for e in stored] == [  # type: ignore[union-attr]
        ["1", "***"],
        ["1", "***"],
    ]


def test_identity_is_attached(store: MemoryEventStore) -> None:
    other = LogIdentity("10.0.0.2:3306", 99)
    sink = _sink(store)
    sink.sink([begin(0), row(1, "a", "b"), end(2)], IDENTITY)
    sink.sink([begin(3), row(4, "a", "b"), end(5)], other)  # the source switched
    batch = store.get(8)
    assert batch.range is not None and batch.range.ack is not None
    assert batch.range.start.identity == IDENTITY
    assert batch.range.end.identity == other
    assert batch.range.ack.identity == other


# -- empty transactions --------------------------------------------------------------------


def test_empty_transactions_are_dropped_with_periodic_pass_through(
    store: MemoryEventStore,
) -> None:
    sink = _sink(store, r"shop\..*", empty_transaction_threshold=3)
    ts = 1_700_000_000_000
    stored = []
    for i in range(9):
        # every transaction touches only a filtered table, all at the same binlog time
        o = i * 10
        txn = [
            Entry(header(o, ts=ts), EntryType.TRANSACTIONBEGIN),
            Entry(header(o + 1, schema="x", table="y", ts=ts), EntryType.ROWDATA),
            Entry(header(o + 2, ts=ts), EntryType.TRANSACTIONEND),
        ]
        stored.append(sink.sink(txn, IDENTITY))
    # the first passes (no previous), then one every threshold+1 empty transactions
    assert stored == [2, 0, 0, 0, 2, 0, 0, 0, 2]


def test_empty_transaction_passes_after_interval(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*", empty_transaction_interval_ms=5000)
    # factories give execute_time = base + offset (ms)
    assert sink.sink([begin(0), row(1, "x", "y"), end(2)], IDENTITY) == 2
    assert sink.sink([begin(100), end(4000)], IDENTITY) == 0
    assert sink.sink([begin(5000), end(5003)], IDENTITY) == 2
    assert _stored(store) == [("TRANS", 0), ("TRANS", 2), ("TRANS", 5000), ("TRANS", 5003)]


@pytest.mark.parametrize("begins", [True, False], ids=["with BEGINs", "without (FlatMessage)"])
def test_after_a_ddl_an_empty_transaction_is_still_empty(
    store: MemoryEventStore, begins: bool
) -> None:
    # The DDL is stored; the transaction after it touches a filtered table only and is
    # dropped (the first empty one passed), whether or not its BEGIN says it starts.
    sink = _sink(store, r"shop\..*")
    stream = [begin(0), row(1, "x", "y"), end(2), ddl(10, "shop", "orders")]
    stream += [begin(20), row(21, "x", "y"), end(22)]
    for entry in stream:
        if begins or entry.entry_type is not EntryType.TRANSACTIONBEGIN:
            sink.sink([entry], IDENTITY)
    assert [o for _, o in _stored(store)] == ([0, 2, 10] if begins else [2, 10])


@pytest.mark.parametrize(
    "sql",
    ["SAVEPOINT `sp`", "ROLLBACK TO `sp`", "INSERT INTO x.y VALUES (1)", "XA START X'78',X'',1"],
)
@pytest.mark.parametrize("begins", [True, False], ids=["with BEGINs", "without (FlatMessage)"])
def test_a_statement_inside_a_transaction_keeps_its_end(
    store: MemoryEventStore, sql: str, begins: bool
) -> None:
    # QUERY events inside a transaction are converted as statements (is_ddl) too: unlike a DDL
    # between transactions, they do not end the transaction's state (found in review).
    sink = _sink(store, r"shop\..*")
    sink.sink([end(0)], IDENTITY)  # the first empty END passes: used up here
    stream = [begin(10), row(11, "shop", "orders"), _statement(12, sql), end(13)]
    for entry in stream:
        if begins or entry.entry_type is not EntryType.TRANSACTIONBEGIN:
            sink.sink([entry], IDENTITY)
    assert ("TRANS", 13) in _stored(store)


@pytest.mark.parametrize(
    "statements",
    [
        ["SAVEPOINT `sp`"],
        ["XA START X'78',X'',1"],
        ["XA START X'78',X'',1", "CREATE TEMPORARY TABLE shop.t (a INT)"],
    ],
    ids=["savepoint", "xa start", "xa start, then a DDL that does not commit"],
)
@pytest.mark.parametrize("begins", [True, False], ids=["with BEGINs", "without (FlatMessage)"])
def test_a_transaction_opened_by_a_kept_statement_keeps_its_end(
    store: MemoryEventStore, statements: list[str], begins: bool
) -> None:
    # Its rows all filtered out, the transaction still had entries stored (the statements,
    # which come first: an XA transaction has no BEGIN at all), so its END is too.
    sink = _sink(store, r"shop\..*")
    sink.sink([end(0)], IDENTITY)  # the first empty END passes: used up here
    kept = [_statement(11 + i, sql) for i, sql in enumerate(statements)]
    stream = [begin(10), *kept, row(20, "x", "y"), end(21)]
    for entry in stream:
        if begins or entry.entry_type is not EntryType.TRANSACTIONBEGIN:
            sink.sink([entry], IDENTITY)
    kept_at = [entry.header.logfile_offset for entry in kept]
    assert [o for _, o in _stored(store)] == [0, *([10] if begins else []), *kept_at, 21]


def _statement(offset: int, sql: str, schema: str = "shop") -> Entry:
    """A QUERY event's entry, as ``EventConverter._query_entries`` makes it."""
    assert is_transaction_control(sql) is None
    ddl = classify_ddl(sql, schema)
    change = RowChange(ddl.event_type, is_ddl=True, sql=sql, ddl_schema_name=schema)
    kind = ddl.event_type
    return Entry(header(offset, 100, ddl.schema, ddl.table, event_type=kind), ROWDATA, change)


def test_empty_transactions_kept_when_not_filtering(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*", filter_empty_transactions=False)
    for i in range(3):
        assert sink.sink([begin(i * 10), row(i * 10 + 1, "x", "y"), end(i * 10 + 2)], IDENTITY) == 2


def test_begin_is_held_until_the_first_kept_row_across_pieces(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*")
    assert sink.sink([begin(0), row(1, "x", "y")], IDENTITY) == 0
    assert sink.sink([row(2, "shop", "a"), row(3, "x", "y")], IDENTITY) == 2
    assert sink.sink([row(4, "x", "y"), end(5)], IDENTITY) == 1, "END closes a stored txn"
    assert [o for _, o in _stored(store)] == [0, 2, 5]


def test_end_without_stored_rows_after_reset(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*")
    sink.sink([begin(0), row(1, "shop", "a")], IDENTITY)
    sink.reset()
    # an END whose transaction state was lost counts as empty; first empty passes
    assert sink.sink([end(2)], IDENTITY) == 1
    assert sink.sink([begin(3), end(4)], IDENTITY) == 0


def test_works_behind_a_transaction_buffer(store: MemoryEventStore) -> None:
    sink = _sink(store, r"shop\..*")
    buffer = TransactionBuffer(lambda entries: sink.sink(entries, IDENTITY) and None, 3)
    for entry in (begin(0), row(1, "shop", "a"), row(2, "shop", "b"), row(3, "x", "y"), end(4)):
        buffer.add(entry)
    assert [o for _, o in _stored(store)] == [0, 1, 2, 4]


# -- lifecycle and backpressure ------------------------------------------------------------


def test_double_start_raises(store: MemoryEventStore) -> None:
    sink = _sink(store)
    with pytest.raises(SinkAlreadyStarted):
        sink.start()


def test_sink_refused_when_stopped(store: MemoryEventStore) -> None:
    sink = EntrySink(store)
    with pytest.raises(SinkStopped):
        sink.sink([row(0, "a", "b")], IDENTITY)


def test_put_blocks_while_store_full_then_proceeds() -> None:
    store = MemoryEventStore(MemoryStoreConfig(buffer_size=2, batch_mode=BatchMode.ITEMSIZE))
    store.start()
    sink = _sink(store, put_poll_seconds=0.05)
    sink.sink([row(0, "a", "b"), row(1, "a", "b")], IDENTITY)
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (sink.sink([row(2, "a", "b")], IDENTITY), done.set()), daemon=True
    )
    worker.start()
    assert not done.wait(0.2), "sink must block while the store is full"
    store.ack(store.get(1).last_sequence)
    assert done.wait(2)
    worker.join(2)
    assert store.put_sequence == 2
    store.stop()


def test_stop_releases_a_blocked_sink() -> None:
    store = MemoryEventStore(MemoryStoreConfig(buffer_size=1, batch_mode=BatchMode.ITEMSIZE))
    store.start()
    sink = _sink(store, put_poll_seconds=0.05)
    sink.sink([row(0, "a", "b")], IDENTITY)
    errors: list[BaseException] = []

    def blocked() -> None:
        try:
            sink.sink([row(1, "a", "b")], IDENTITY)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=blocked, daemon=True)
    worker.start()
    time.sleep(0.1)
    started = time.monotonic()
    sink.stop()
    worker.join(2)
    assert not worker.is_alive()
    assert time.monotonic() - started < 1.0
    assert len(errors) == 1 and isinstance(errors[0], SinkStopped)
    store.stop()


# -- snapshot chunks -----------------------------------------------------------------------


def test_put_snapshot_splits_a_chunk_larger_than_the_store() -> None:
    """A chunk of 10 entries goes into a store of 4 in pieces the store takes (one put of
    10 is refused), in order, while a consumer drains it."""
    store = MemoryEventStore(MemoryStoreConfig(buffer_size=4, batch_mode=BatchMode.ITEMSIZE))
    store.start()
    chunk = [row(i, "a", "b") for i in range(10)]
    with pytest.raises(BatchTooLarge):
        store.put(IDENTITY, chunk)
    sink = _sink(store, put_poll_seconds=0.05)
    putter = threading.Thread(target=sink.put_snapshot, args=(chunk, IDENTITY), daemon=True)
    putter.start()
    drained: list[Entry] = []
    deadline = time.monotonic() + 10
    while len(drained) < len(chunk):
        assert time.monotonic() < deadline, "the snapshot chunk stopped coming"
        events = store.get(4, timeout=0.2)  # the last piece holds fewer than 4
        if events:
            drained.extend(events.entries)
            store.ack(events.last_sequence)
    putter.join(5)
    assert drained == chunk
    store.stop()
