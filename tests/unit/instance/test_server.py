"""The embedded server's get / ack / rollback guarantees, over a scripted parser."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.config import DestinationConfig, StoreConfig
from bridge.entry import Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.instance import EmbeddedServer, Instance, InstanceFailed, mq_client
from bridge.instance.api import Message
from bridge.meta import (
    BatchOutOfOrder,
    FileCursorStore,
    MemoryMetaManager,
    MetaManager,
    PersistentMetaManager,
    UnknownBatch,
)
from bridge.parse.exceptions import SourceMisconfigured
from bridge.parse.source import SourceFacts
from bridge.position import EntryPosition, LogPosition

FACTS = SourceFacts(1, "10.11-MariaDB", True, True, dt.UTC)
DESTINATION = DestinationConfig.model_validate(
    {
        "name": "unit",
        "source": {"address": "127.0.0.1:3306", "username": "u", "slave_id": 9},
        "mq": {"topic": "t"},
        "store": {"buffer_size": 64},
        "batch_size": 64,
        "transaction_size": 8,
        "snapshot": {"mode": "never"},  # a scripted source: streaming only
    }
)


def transaction(xid: int, rows: int, offset: int) -> list[Entry]:
    """BEGIN, ``rows`` INSERT entries, END: 100 bytes each, from ``offset`` in binlog.000001."""

    def header(i: int, event_type: EventType | None = None) -> Header:
        return Header(
            "binlog.000001",
            offset + 100 * i,
            1,
            1000 * xid,
            "db",
            "t",
            event_type,
            f"0-1-{xid}",
            100,
        )

    change = RowChange(EventType.INSERT, row_datas=(RowData(),))
    return [
        Entry(header(0), EntryType.TRANSACTIONBEGIN),
        *(Entry(header(i + 1, EventType.INSERT), EntryType.ROWDATA, change) for i in range(rows)),
        Entry(header(rows + 1), EntryType.TRANSACTIONEND, transaction_id=str(xid)),
    ]


class ScriptedParser:
    """Yields the scripted entries at or after the start position, then waits for stop()."""

    caught_up = True  # after its one batch, the script has nothing more to read

    def __init__(self, entries: list[Entry], failure: Exception | None = None) -> None:
        self.entries_script = entries
        self.failure = failure
        self.starts: list[EntryPosition] = []
        self._stopped = threading.Event()

    def preflight(self) -> SourceFacts:
        if self.failure is not None:
            raise self.failure
        return FACTS

    def stop(self) -> None:
        self._stopped.set()

    def batches(self, start: EntryPosition) -> Iterator[list[Entry]]:
        """The script from ``start`` in one batch, as the binlog reader process sends what
        it has read (TransactionBuffer.add_batch)."""
        self.starts.append(start)
        batch = [e for e in self.entries_script if e.header.logfile_offset >= (start.position or 0)]
        if batch:
            yield batch
        self._stopped.wait(10)


def serve(
    parser: ScriptedParser,
    meta: MetaManager | None = None,
    destination: DestinationConfig = DESTINATION,
) -> EmbeddedServer:
    server = EmbeddedServer()
    instance = Instance(
        destination,
        meta or MemoryMetaManager(),
        parser_factory=lambda _: parser,  # type: ignore[arg-type,return-value]
        find_start=lambda _facts, known: (
            known.position if known else EntryPosition("binlog.000001", 4)
        ),
    )
    server.start(instance)
    server.subscribe(mq_client(DESTINATION.name))
    return server


@pytest.fixture
def script() -> list[Entry]:
    return transaction(1, 2, 4) + transaction(2, 3, 404) + transaction(3, 1, 904)


CLIENT = mq_client(DESTINATION.name)


def test_ack_moves_the_cursor_to_the_end_of_the_last_whole_transaction(script: list[Entry]) -> None:
    server = serve(ScriptedParser(script))
    try:
        first = server.get_without_ack(CLIENT, 6, 2.0)  # transaction 1 and half of 2
        assert [e.transaction_id for e in first.entries if e.transaction_id] == ["1"]
        server.ack(CLIENT, first.batch_id)
        cursor = server.instance(DESTINATION.name).meta.get_cursor(CLIENT)
        assert cursor is not None
        assert (cursor.position.journal_name, cursor.position.position) == ("binlog.000001", 404)
        second = server.get_without_ack(CLIENT, 2, 2.0)  # still inside transaction 2
        server.ack(CLIENT, second.batch_id)
        assert server.instance(DESTINATION.name).meta.get_cursor(CLIENT) == cursor
    finally:
        server.stop_all()


def test_acks_follow_batch_order_with_canals_errors(script: list[Entry]) -> None:
    server = serve(ScriptedParser(script))
    try:
        first = server.get_without_ack(CLIENT, 3, 2.0)
        second = server.get_without_ack(CLIENT, 3, 2.0)
        with pytest.raises(BatchOutOfOrder, match=f"batchId:{second.batch_id} is not the firstly"):
            server.ack(CLIENT, second.batch_id)
        server.ack(CLIENT, first.batch_id)
        with pytest.raises(UnknownBatch):
            server.ack(CLIENT, first.batch_id)
        server.ack(CLIENT, second.batch_id)
    finally:
        server.stop_all()


def test_rollback_then_get_returns_the_same_entries(script: list[Entry]) -> None:
    server = serve(ScriptedParser(script))
    try:
        first = server.get_without_ack(CLIENT, 4, 2.0)
        server.get_without_ack(CLIENT, 4, 2.0)
        server.rollback(CLIENT)
        again = server.get_without_ack(CLIENT, 4, 2.0)
        assert again.entries == first.entries
        assert again.batch_id > first.batch_id
    finally:
        server.stop_all()


def test_wake_ends_an_idle_get_at_once(script: list[Entry]) -> None:
    server = serve(ScriptedParser(script))
    try:
        drained = server.get_without_ack(CLIENT, len(script), 2.0)
        assert len(drained.entries) == len(script)  # the next get has nothing to take
        got: list[Message] = []
        getter = threading.Thread(
            target=lambda: got.append(server.get_without_ack(CLIENT, 100, 0.1, idle_wait_s=60))
        )
        getter.start()
        time.sleep(0.2)
        assert getter.is_alive()  # idle: waiting for an entry, past the get timeout
        server.wake(CLIENT)
        getter.join(5)
        assert not getter.is_alive() and got[0].empty
        # A wake with no get under way ends the next idle wait at once, and only that one.
        server.wake(CLIENT)
        assert server.get_without_ack(CLIENT, 100, None, idle_wait_s=60).empty
        started = time.monotonic()
        assert server.get_without_ack(CLIENT, 100, None, idle_wait_s=0.2).empty
        assert time.monotonic() - started >= 0.15
    finally:
        server.stop_all()


def test_restart_resumes_after_the_last_acked_transaction(
    script: list[Entry], tmp_path: Path
) -> None:
    server = serve(
        ScriptedParser(script),
        PersistentMetaManager(MemoryMetaManager(), FileCursorStore(tmp_path)),
    )
    batch = server.get_without_ack(CLIENT, 10, 2.0)  # transactions 1 and 2 whole, 3 begun
    server.ack(CLIENT, batch.batch_id)
    server.stop_all()
    parser = ScriptedParser(script)
    server = serve(parser, PersistentMetaManager(MemoryMetaManager(), FileCursorStore(tmp_path)))
    try:
        resumed = server.get_without_ack(CLIENT, 10, 2.0)
        assert parser.starts[0].position == 904
        assert [e.transaction_id for e in resumed.entries if e.transaction_id] == ["3"]
        assert resumed.entries[0].entry_type is EntryType.TRANSACTIONBEGIN
    finally:
        server.stop_all()


def test_concurrent_getters_never_receive_the_same_entry() -> None:
    many = [e for xid in range(1, 41) for e in transaction(xid, 2, 4 + 1000 * xid)]
    roomy = DESTINATION.model_copy(update={"store": StoreConfig(buffer_size=256)})
    server = serve(ScriptedParser(many), destination=roomy)
    received: list[Entry] = []
    lock = threading.Lock()

    def getter() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            message = server.get_without_ack(CLIENT, 3, 0.05)
            with lock:
                received.extend(message.entries)
                if len(received) >= len(many):
                    return

    try:
        threads = [threading.Thread(target=getter) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        offsets = [e.header.logfile_offset for e in received]
        assert len(offsets) == len(set(offsets)) == len(many)
    finally:
        server.stop_all()


def test_a_fatal_parser_error_reaches_the_getter() -> None:
    failure = SourceMisconfigured("binlog_format is STATEMENT on db:3306: set binlog_format=ROW")
    server = serve(ScriptedParser([], failure))
    try:
        with pytest.raises(InstanceFailed, match="binlog_format is STATEMENT"):
            for _ in range(50):
                server.get_without_ack(CLIENT, 1, 0.1)
    finally:
        server.stop_all()


def test_first_start_records_its_position_as_the_cursor(script: list[Entry]) -> None:
    server = serve(ScriptedParser(script))
    try:
        server.get_without_ack(CLIENT, 1, 2.0)
        cursor = server.instance(DESTINATION.name).meta.get_cursor(CLIENT)
        assert cursor is not None
        assert cursor.position == EntryPosition("binlog.000001", 4)
        assert isinstance(cursor, LogPosition)
    finally:
        server.stop_all()


def test_first_starts_cursor_is_on_disk_before_any_ack(script: list[Entry], tmp_path: Path) -> None:
    """A kill before the first ack (and before the periodic flush) must resume at the first
    start's position, not at a later current end that skips what was written meanwhile."""
    store = FileCursorStore(tmp_path)
    meta = PersistentMetaManager(MemoryMetaManager(), store, flush_period_ms=3_600_000)
    server = serve(ScriptedParser(script), meta)
    try:
        server.get_without_ack(CLIENT, 1, 2.0)
        [(_, saved)] = store.load(DESTINATION.name)
        assert saved is not None
        assert saved.position == EntryPosition("binlog.000001", 4)
    finally:
        server.stop_all()
