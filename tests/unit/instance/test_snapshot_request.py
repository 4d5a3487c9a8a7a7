"""An on-demand snapshot request on a running instance (scripted binlog reader, no source):
the stream restarts where it was put, the plan reaches the cursor through the store and
survives a restart; without acks the request is not reported persisted."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bridge.config import DestinationConfig
from bridge.entry import Entry
from bridge.instance import EmbeddedServer, Instance
from bridge.meta import FileCursorStore, MemoryMetaManager, PersistentMetaManager
from bridge.position import EntryPosition, SnapshotProgress, TableProgress
from bridge.snapshot import coordinator as coordinator_module
from bridge.snapshot.backfill import coverage_of
from bridge.snapshot.handoff import SnapshotHandoff
from bridge.snapshot.reader import SnapshotStats
from bridge.snapshot.requests import RequestOutcome
from tests.unit.instance.test_server import CLIENT, DESTINATION, ScriptedParser, transaction

# Streaming only: whatever the default mode, snapshots here are the requests'.
STREAM_ONLY = DestinationConfig.model_validate(
    {**DESTINATION.model_dump(mode="json"), "snapshot": {"mode": "never"}}
)

# A request's plan, covering the destination's filter as every plan it writes.
PLAN = SnapshotProgress((TableProgress("db.t"),), coverage_of(STREAM_ONLY))

SCRIPT = transaction(1, 2, 4) + transaction(2, 3, 404) + transaction(3, 1, 904)
END = 1204  # where the script's last transaction ends


class FakeReader:
    """Stands for the snapshot reader (it would read the source): records what it was given."""

    started: ClassVar[list[FakeReader]] = []

    def __init__(
        self, config: DestinationConfig, handoff: SnapshotHandoff, _options: Any, _ahead: Any
    ):
        self.handoff = handoff
        self.stats = SnapshotStats(tables_total=len(handoff.progress.tables))
        self.stopped = False
        FakeReader.started.append(self)

    @property
    def running(self) -> bool:
        return False

    def start(self) -> None:
        pass

    def stop(self, timeout_s: float = 10.0) -> None:
        self.stopped = True


@pytest.fixture(autouse=True)
def no_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables pass as named; no connection is opened; the reader is the fake."""
    FakeReader.started = []
    monkeypatch.setattr(
        coordinator_module, "open_connection", lambda _source: contextlib.nullcontext()
    )
    monkeypatch.setattr(coordinator_module, "check_tables", lambda _c, _d, tables: tuple(tables))
    monkeypatch.setattr(coordinator_module, "SnapshotReader", FakeReader)


class Parsers:
    """A new scripted reader per build, as the instance rebuilds it at a request."""

    def __init__(self) -> None:
        self.built: list[ScriptedParser] = []

    def __call__(self, _config: DestinationConfig) -> ScriptedParser:
        parser = ScriptedParser(list(SCRIPT))
        self.built.append(parser)
        return parser


def serve(meta: Any, parsers: Parsers) -> tuple[EmbeddedServer, Instance]:
    server = EmbeddedServer()
    instance = Instance(
        STREAM_ONLY,
        meta,
        parser_factory=parsers,  # type: ignore[arg-type]
        find_start=lambda _facts, known: (
            known.position if known else EntryPosition("binlog.000001", 4)
        ),
    )
    server.start(instance)
    server.subscribe(CLIENT)
    return server, instance


def consume(server: EmbeddedServer, until: threading.Event) -> list[Entry]:
    """get + ack, as the MQ worker does, until ``until`` is set."""
    seen: list[Entry] = []
    while not until.is_set():
        message = server.get_without_ack(CLIENT, 64, 0.1)
        if not message.empty:
            seen += message.entries
            server.ack(CLIENT, message.batch_id)
    return seen


def request_in_thread(instance: Instance, tables: list[str], timeout_s: float) -> Iterator[Any]:
    outcome: list[RequestOutcome] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(instance.request_snapshot(tables, timeout_s))
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    yield done
    yield outcome


def persistent(tmp_path: Path) -> PersistentMetaManager:
    return PersistentMetaManager(MemoryMetaManager(), FileCursorStore(tmp_path))


def test_a_request_restarts_the_stream_where_it_was_and_its_plan_reaches_the_cursor(
    tmp_path: Path,
) -> None:
    parsers = Parsers()
    server, instance = serve(persistent(tmp_path), parsers)
    try:
        first = server.get_without_ack(CLIENT, 64, 2.0)
        server.ack(CLIENT, first.batch_id)
        assert instance.meta.get_cursor(CLIENT).position.position == END  # type: ignore[union-attr]
        steps = request_in_thread(instance, ["db.t"], 10.0)
        done = next(steps)
        consume(server, done)
        (outcome,) = next(steps)
    finally:
        server.stop_all()
    assert outcome == RequestOutcome(("db.t",), persisted=True)
    # The binlog reader was rebuilt and started again where the stream had been put.
    assert len(parsers.built) == 2
    assert parsers.built[1].starts[0].position == END
    # The snapshot reader got the plan; the acked cursor carries it, at the same position.
    (reader,) = FakeReader.started
    assert reader.handoff.progress == PLAN
    cursor = persistent(tmp_path)
    cursor.start()
    saved = cursor.get_cursor(CLIENT)
    assert saved is not None and saved.position.position == END
    assert saved.snapshot == PLAN


def test_a_restart_after_the_request_resumes_its_snapshot_even_with_mode_never(
    tmp_path: Path,
) -> None:
    server, instance = serve(persistent(tmp_path), Parsers())
    try:
        steps = request_in_thread(instance, ["db.t"], 10.0)
        done = next(steps)
        consume(server, done)
        assert next(steps)[0].persisted
    finally:
        server.stop_all()
    FakeReader.started = []
    server, instance = serve(persistent(tmp_path), Parsers())  # "crashed" and restarted
    try:
        started = threading.Event()
        for _ in range(100):  # bounded: the parser thread starts the reader at once
            if FakeReader.started or started.wait(0.05):
                break
        (reader,) = FakeReader.started
        assert reader.handoff.progress == PLAN
    finally:
        server.stop_all()


def test_without_acks_the_request_is_not_reported_persisted_nor_in_the_cursor(
    tmp_path: Path,
) -> None:
    server, instance = serve(persistent(tmp_path), Parsers())
    try:
        outcome = instance.request_snapshot(["db.t"], timeout_s=0.5)
        cursor = instance.meta.get_cursor(CLIENT)
    finally:
        server.stop_all()
    assert outcome == RequestOutcome(("db.t",), persisted=False)
    assert cursor is None or cursor.snapshot is None or not cursor.snapshot.tables
