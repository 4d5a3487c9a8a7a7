"""A stored cursor the source cannot start at (past its file's end, inside an event) stops the
destination as a damaged cursor, with the safe choices, never as a purged binlog; the same
refusal at a position this process read itself stays the source's unreadable binlog."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from bridge.entry import Entry
from bridge.instance import Instance
from bridge.instance.exceptions import DamagedCursor
from bridge.instance.instance import mq_client
from bridge.meta import MemoryMetaManager
from bridge.parse.exceptions import BinlogPositionUnreadable
from bridge.parse.source import SourceFacts
from bridge.position import EntryPosition, LogIdentity, LogPosition
from tests.unit.instance.test_server import DESTINATION, FACTS

STORED = EntryPosition("binlog.000007", 123_456)
SERVER_SAYS = "Client requested master to start replication from impossible position"


class RefusingParser:
    """Every dump is refused as the source refuses an offset that is not an event's start."""

    def __init__(self) -> None:
        self.refused = threading.Event()

    def preflight(self) -> SourceFacts:
        return FACTS

    def stop(self) -> None:
        pass

    def batches(self, start: EntryPosition) -> Iterator[list[Entry]]:
        self.refused.set()
        raise BinlogPositionUnreadable(start, SERVER_SAYS)
        yield  # a generator, as the real readers are


def failure_of(instance: Instance) -> BaseException:
    instance.start()
    try:
        instance._thread.join(10)  # type: ignore[union-attr]
        assert instance.failure is not None, "the destination should stop, not retry"
        return instance.failure
    finally:
        instance.stop(5)


def instance_with(meta: MemoryMetaManager) -> Instance:
    return Instance(
        DESTINATION,
        meta,
        parser_factory=lambda _: RefusingParser(),  # type: ignore[arg-type,return-value]
        find_start=lambda _facts, known: known.position if known else STORED,
    )


def test_a_stored_cursor_the_source_cannot_start_at_is_reported_damaged() -> None:
    meta = MemoryMetaManager()
    meta.start()
    client = mq_client(DESTINATION.name)
    meta.subscribe(client)
    identity = LogIdentity(DESTINATION.source.address, DESTINATION.source.slave_id)
    meta.update_cursor(client, LogPosition(identity, STORED))
    failure = failure_of(instance_with(meta))
    assert isinstance(failure, DamagedCursor)
    message = str(failure)
    assert "\n" not in message
    assert message.startswith(
        f"destination {DESTINATION.name}: its stored cursor binlog.000007:123456 is damaged "
        f"(Client requested master to start replication from impossible position)"
    )
    assert "on_purged does not apply" in message
    assert "SHOW BINLOG EVENTS IN 'binlog.000007'" in message


def test_without_a_stored_cursor_the_refusal_is_the_sources_not_the_cursors() -> None:
    failure = failure_of(instance_with(MemoryMetaManager()))
    assert isinstance(failure, BinlogPositionUnreadable)
    assert not isinstance(failure, DamagedCursor)
