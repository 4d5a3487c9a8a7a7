"""The reader takes each chunk's low watermark before it asks for the chunk before it: a
session in a child process reads the next chunk ahead right after answering one, so that
chunk's SELECT runs before the reader asks for it (scripted session and windows)."""

from __future__ import annotations

from typing import Any

from bridge.config import DestinationConfig
from bridge.entry import Column, RowData
from bridge.parse.values import DecodeOptions
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
        return ChunkRead(rows, [(i,) for i in ids], [[["int", i]] for i in ids], (BINLOG, 4), 1)

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
