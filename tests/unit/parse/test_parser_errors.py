"""BinlogParser: which failures it retries. A lost dump connection is retried from the last
transaction boundary; a failure to convert an event (here a ValueError, as a truncated packed
integer raises) is raised as it is, not mistaken for a lost connection and retried for ever.

The dump is a stand-in serving one event's bytes (the real dump is tested against MariaDB and
MySQL in tests/integration); the converter is the real one until it is told to fail."""

from __future__ import annotations

import contextlib
import datetime as dt
import struct
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from bridge.entry import EntryType
from bridge.parse import parser as parser_module
from bridge.parse.access import SourceAccess
from bridge.parse.binlog.events import HEADER
from bridge.parse.binlog.framing import RawEvent
from bridge.parse.convert import EventConverter
from bridge.parse.entry_codec import FLAT_ENTRY_TYPE
from bridge.parse.exceptions import UnsupportedBinlogEvent
from bridge.parse.source import SourceFacts
from bridge.position import EntryPosition
from bridge.schema.definitions import Schemas
from bridge.schema.history import SchemaHistory

MARIADB_GTID_EVENT, XID_EVENT = 162, 16
STOP_EVENT = 3  # passed by as harmless: only the patched conversion fails
HEARTBEAT_EVENT = 27  # becomes a HEARTBEAT entry, which the parser yields


def _event(code: int) -> bytes:
    return HEADER.pack(1_700_000_000, code, 1, 19, 123, 0)


class _Reader:
    def __init__(self, events: list[bytes]) -> None:
        self._events = events

    def next_events(self) -> list[bytes] | None:
        """All its events as one read, then a lost connection."""
        if not self._events:
            raise ConnectionResetError("the stand-in dump has no more events")
        events, self._events = self._events, []
        return events


class _Dump:
    """A dump connection serving the events ``served`` holds for its turn (none once they
    run out), then losing the connection; counts how many were opened."""

    opened = 0
    served: ClassVar[list[list[bytes]]] = []

    def __init__(self, *_: Any) -> None:
        turn = type(self).opened
        type(self).opened += 1
        self.checksum = False
        self.reader = _Reader(list(self.served[turn]) if turn < len(self.served) else [])

    def close(self) -> None:
        pass


FACTS = SourceFacts(1, "10.11.0-MariaDB", True, True, dt.UTC)


def _parser(monkeypatch: pytest.MonkeyPatch, **options: Any) -> parser_module.BinlogParser:
    _Dump.opened = 0
    _Dump.served = [[_event(STOP_EVENT)]]
    monkeypatch.setattr(parser_module, "DumpConnection", _Dump)
    monkeypatch.setattr(parser_module, "open_connection", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(parser_module, "live_history", lambda _: SchemaHistory(Schemas()))
    source = SourceAccess("db:3306", "db", 3306, "u", None, 7, None, 1.0)
    made = parser_module.BinlogParser(source, max_backoff_s=0.01, **options)
    monkeypatch.setattr(made, "preflight", lambda: FACTS)
    return made


@pytest.fixture
def parser(monkeypatch: pytest.MonkeyPatch) -> parser_module.BinlogParser:
    return _parser(monkeypatch)


def _entries(parser: parser_module.BinlogParser) -> Iterator[Any]:
    return parser.entries(EntryPosition(journal_name="mariadb-bin.000001", position=4))


def test_a_conversion_error_is_raised_as_it_is(
    parser: parser_module.BinlogParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(self: EventConverter, raw: RawEvent) -> None:
        raise ValueError("truncated: a packed integer at byte 27 needs 1 byte, 0 left")

    monkeypatch.setattr(EventConverter, "convert_raw", fail)
    monkeypatch.setattr(parser._stopping, "wait", lambda _: parser.stop())  # were it retried
    with pytest.raises(ValueError, match="packed integer"):
        next(_entries(parser))


def test_a_lost_dump_connection_is_retried(
    parser: parser_module.BinlogParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first dump serves a harmless event, then is lost; the second, opened at once, serves
    # a heartbeat, then is lost; the third is lost at its first read: two losses in a row go
    # to the retry loop, which warns, waits and (here) stops.
    _Dump.served = [[_event(STOP_EVENT)], [_event(HEARTBEAT_EVENT)]]
    warnings: list[str] = []
    monkeypatch.setattr(
        parser_module.log, "warning", lambda text, *args: warnings.append(text % args)
    )
    monkeypatch.setattr(parser._stopping, "wait", lambda _: parser.stop())
    entries = list(_entries(parser))
    assert [entry.entry_type for entry in entries] == [
        EntryType.HEARTBEAT
    ]  # read after the reconnect
    assert _Dump.opened == 3
    assert len(warnings) == 1
    assert "retrying from mariadb-bin.000001:4" in warnings[0]


def _gtid_then_xid() -> tuple[bytes, bytes]:
    """A MariaDB GTID (a transaction's BEGIN) ending at 200 and its XID ending at 231."""
    gtid = HEADER.pack(1_700_000_000, MARIADB_GTID_EVENT, 1, 32, 200, 0) + struct.pack(
        "<QIB", 9, 0, 0
    )
    xid = HEADER.pack(1_700_000_000, XID_EVENT, 1, 27, 231, 0) + struct.pack("<Q", 77)
    return gtid, xid


@pytest.mark.parametrize(
    ("events", "resumed_at"),
    [(1, 168), (2, 231), (3, 231)],
    ids=[
        "inside the transaction: from its BEGIN",
        "after its END: from the END's end",
        "a heartbeat after the END: from the END's end",
    ],
)
def test_a_retry_after_flat_entries_resumes_at_their_boundary(
    parser: parser_module.BinlogParser,
    monkeypatch: pytest.MonkeyPatch,
    events: int,
    resumed_at: int,
) -> None:
    # flat_batches hands a BEGIN and an END over as the tuples that cross to the instance;
    # the retry still starts where entries() would have.
    read = [*_gtid_then_xid(), _event(HEARTBEAT_EVENT)][:events]
    handed, warning = _handed_then_retried(parser, monkeypatch, read)
    assert handed == ["TRANSACTIONBEGIN", "TRANSACTIONEND", "HEARTBEAT"][:events]
    assert f"retrying from mariadb-bin.000001:{resumed_at} " in warning


def _handed_then_retried(
    parser: parser_module.BinlogParser, monkeypatch: pytest.MonkeyPatch, read: list[bytes]
) -> tuple[list[str], str]:
    """The types of the entries ``flat_batches`` hands over of one read before its dump is
    lost, and the warning its retry logs."""
    _Dump.served = [read]
    warnings: list[str] = []
    monkeypatch.setattr(
        parser_module.log, "warning", lambda text, *args: warnings.append(text % args)
    )
    monkeypatch.setattr(parser._stopping, "wait", lambda _: parser.stop())
    start = EntryPosition(journal_name="mariadb-bin.000001", position=4)
    handed = [_kind_of(entry) for group in parser.flat_batches(start) for entry in group]
    return handed, warnings[0]


@pytest.mark.parametrize(
    ("events", "kinds", "resumed_at"),
    [
        (1, [], 4),
        (2, ["TRANSACTIONEND"], 231),
        (3, ["TRANSACTIONEND"], 231),
    ],
    ids=[
        "inside the first transaction: from the start",
        "after its END: from the END's end",
        "inside the next one: from the END's end, where it began",
    ],
)
def test_without_begins_a_retry_resumes_after_the_last_end(
    monkeypatch: pytest.MonkeyPatch, events: int, kinds: list[str], resumed_at: int
) -> None:
    # A binlog reader that leaves the BEGINs out (FlatMessage) has the ENDs alone for
    # boundaries: where the last one ends, the next transaction begins.
    parser = _parser(monkeypatch, begins=False)
    gtid, xid = _gtid_then_xid()
    next_gtid = HEADER.pack(1_700_000_000, MARIADB_GTID_EVENT, 1, 32, 263, 0) + struct.pack(
        "<QIB", 10, 0, 0
    )
    handed, warning = _handed_then_retried(parser, monkeypatch, [gtid, xid, next_gtid][:events])
    assert handed == kinds
    assert f"retrying from mariadb-bin.000001:{resumed_at} " in warning


def test_given_facts_the_stream_starts_without_a_preflight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The binlog reader's process is given the instance's preflight: no connection of its own.
    parser = _parser(monkeypatch, facts=FACTS)

    def preflight() -> SourceFacts:
        raise AssertionError("a second preflight")

    monkeypatch.setattr(parser, "preflight", preflight)
    monkeypatch.setattr(parser._stopping, "wait", lambda _: parser.stop())
    _Dump.served = [[_event(HEARTBEAT_EVENT)]]
    kinds = [entry.entry_type for entry in _entries(parser)]
    assert kinds == [EntryType.HEARTBEAT]


def test_stop_ends_the_entries_inside_a_read(
    parser: parser_module.BinlogParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One read holds five heartbeats; the consumer stops after the first: no more come
    # (stop() ends entries() promptly, not after the events already read).
    _Dump.served = [[_event(HEARTBEAT_EVENT)] * 5]
    handed = []
    for entry in _entries(parser):
        handed.append(entry)
        parser.stop()
    assert len(handed) == 1


def test_an_event_shorter_than_a_header_is_retried_as_a_broken_stream(
    parser: parser_module.BinlogParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    _Dump.served = [[_event(STOP_EVENT)[:18]]]
    warnings: list[str] = []
    monkeypatch.setattr(
        parser_module.log, "warning", lambda text, *args: warnings.append(text % args)
    )
    monkeypatch.setattr(parser._stopping, "wait", lambda _: parser.stop())
    assert list(_entries(parser)) == []
    assert "shorter than its 19-byte header" in warnings[0]


@pytest.mark.parametrize(
    ("beats", "kinds"),
    [
        (False, ["TRANSACTIONBEGIN", "TRANSACTIONEND"]),
        (True, ["TRANSACTIONBEGIN", "HEARTBEAT", "HEARTBEAT", "TRANSACTIONEND"]),
    ],
    ids=["the END follows the BEGIN once", "the heartbeats around the BEGIN pass"],
)
def test_a_retry_skips_the_flat_entries_it_already_handed_over(
    parser: parser_module.BinlogParser,
    monkeypatch: pytest.MonkeyPatch,
    beats: bool,
    kinds: list[str],
) -> None:
    # The first dump hands over the BEGIN and is lost (its quick reconnect too); the retry's
    # dump starts at that BEGIN again, which is skipped, heartbeats aside (one group,
    # filtered entry by entry).
    gtid, xid = _gtid_then_xid()
    beat = _event(HEARTBEAT_EVENT)
    _Dump.served = [[gtid], [], [beat, gtid, beat, xid] if beats else [gtid, xid]]
    waits: list[float] = []

    def wait(delay: float) -> None:
        waits.append(delay)
        if len(waits) == 2:
            parser.stop()

    monkeypatch.setattr(parser_module.log, "warning", lambda *_: None)
    monkeypatch.setattr(parser._stopping, "wait", wait)
    start = EntryPosition(journal_name="mariadb-bin.000001", position=4)
    handed = [entry for group in parser.flat_batches(start) for entry in group]
    assert [_kind_of(entry) for entry in handed] == kinds
    assert _Dump.opened == 4


def _kind_of(entry: Any) -> str:
    """A flat or plain entry's type value."""
    return str(entry[FLAT_ENTRY_TYPE] if isinstance(entry, tuple) else entry.entry_type.value)


@pytest.mark.parametrize("flat", [False, True], ids=["entries", "flat_batches"])
def test_the_entries_before_an_unconvertible_event_of_a_read_are_handed_over(
    parser: parser_module.BinlogParser, flat: bool
) -> None:
    # A read holds a whole transaction, then an event of an unknown type: the transaction
    # reaches the consumer before the error does (its cursor then moves past it).
    gtid, xid = _gtid_then_xid()
    _Dump.served = [[gtid, xid, HEADER.pack(1_700_000_000, 99, 1, 19, 250, 0)]]
    start = EntryPosition(journal_name="mariadb-bin.000001", position=4)
    entries = (
        (entry for group in parser.flat_batches(start) for entry in group)
        if flat
        else parser.entries(start)
    )
    handed = []
    with pytest.raises(UnsupportedBinlogEvent):
        handed.extend(entries)
    assert [_kind_of(entry) for entry in handed] == ["TRANSACTIONBEGIN", "TRANSACTIONEND"]
