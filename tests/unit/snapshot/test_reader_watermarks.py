"""The reader takes each chunk's low watermark before it asks for the chunk before it (a
session in a child process reads the next chunk ahead right after answering one, so that
chunk's SELECT runs before the reader asks for it), and a reader thread keeps its session
from table to table until an error (scripted sessions and windows)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import pytest

from bridge.config import DestinationConfig
from bridge.entry import Column, RowData
from bridge.parse.binlog.values import DecodeOptions
from bridge.position import EntryPosition, SnapshotProgress, TableProgress
from bridge.snapshot.handoff import SnapshotHandoff
from bridge.snapshot.reader import SnapshotReader
from bridge.snapshot.session import ChunkRead, Gone, Redo
from bridge.snapshot.window import Position, WatermarkWindows

BINLOG = "mariadb-bin.000001"
CHUNK = 2
CONFIG = DestinationConfig.model_validate(
    {
        "name": "shop",
        "source": {"address": "db:3306", "username": "canal", "slave_id": 9},
        "mq": {"topic": "shop"},
        "snapshot": {"chunk_size": CHUNK},
    }
)


class LoggedWindows(WatermarkWindows):
    def __init__(self, log: list[str]) -> None:
        super().__init__((BINLOG, 4), ["shop.orders"])
        self.log = log

    def begin_chunk(self) -> Position:
        self.log.append("begin")
        return super().begin_chunk()


class ScriptedSession:
    """Five rows, two per chunk; each read is logged."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def describe(self, schema: str, name: str) -> tuple[str, ...] | None:
        return ("id",)

    def read_chunk(self, schema: str, name: str, after: object | None) -> ChunkRead | Gone | Redo:
        self.log.append("read")
        first = 1 if after is None else int(after[0][1]) + 1  # type: ignore[index]
        ids = [str(i) for i in range(first, min(first + CHUNK, 6))]
        rows = tuple(RowData(after=(Column(0, 4, "id", True, True, False, i, "int"),)) for i in ids)
        return ChunkRead(rows, [(i,) for i in ids], 1, [[["int", i]] for i in ids], (BINLOG, 4), 1)

    def estimated_rows(self, schema: str, name: str) -> int:
        return 5

    def close(self) -> None:
        pass


def test_each_chunks_low_watermark_is_taken_before_the_chunk_before_it_is_asked_for() -> None:
    log: list[str] = []
    windows = LoggedWindows(log)
    put: list[Any] = []
    plan = SnapshotProgress((TableProgress("shop.orders"),))
    handoff = SnapshotHandoff(plan, windows, put.extend, start=EntryPosition(BINLOG, 4))
    reader = SnapshotReader(CONFIG, handoff, DecodeOptions())
    done = reader._read_table(ScriptedSession(log), TableProgress("shop.orders"))
    assert done.rows == 5 and done.done
    # Chunk k (k = 1, 2, 3) is read after k + 1 begins: its own low and the next chunk's.
    assert log == ["begin", "begin", "read", "begin", "read", "begin", "read"]
    assert not windows._pins


class FlakySession(ScriptedSession):
    """A ScriptedSession whose first read of ``shop.lines`` loses the connection."""

    opened: ClassVar[list[FlakySession]] = []

    def __init__(self, log: list[str]) -> None:
        super().__init__(log)
        self.closed = False
        FlakySession.opened.append(self)

    def read_chunk(self, schema: str, name: str, after: object | None) -> ChunkRead | Gone | Redo:
        if name == "lines" and not any("lost" in line for line in self.log):
            self.log.append("lost")
            raise ConnectionError("the source went away")
        return super().read_chunk(schema, name, after)

    def close(self) -> None:
        self.closed = True


def test_a_thread_keeps_its_session_from_table_to_table_and_opens_a_new_one_after_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A session in a child process costs a process start: one per reader thread, not per
    # table; an error closes it (killing its child) and the table goes on in a new one.
    log: list[str] = []
    FlakySession.opened = []
    names = ("shop.orders", "shop.lines", "shop.users")
    windows = WatermarkWindows((BINLOG, 4), names)
    plan = SnapshotProgress(tuple(TableProgress(name) for name in names))
    handoff = SnapshotHandoff(plan, windows, [].extend, start=EntryPosition(BINLOG, 4))
    config = CONFIG.model_copy(
        update={"snapshot": CONFIG.snapshot.model_copy(update={"parallelism": 1})}
    )
    reader = SnapshotReader(config, handoff, DecodeOptions())
    monkeypatch.setattr(reader, "_open_session", lambda: FlakySession(log))
    reader.start()
    deadline = time.monotonic() + 10
    while reader.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not reader.running and reader.stats.finished
    assert len(FlakySession.opened) == 2 and all(s.closed for s in FlakySession.opened)
    assert log.count("lost") == 1
    assert [t.rows for t in handoff.progress.tables] == [5, 5, 5]
