"""The file cursor store under the persistent meta manager: persistence, periodic flushing,
atomic writes, corrupt files."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bridge.meta import (
    ClientIdentity,
    CorruptMetaFile,
    FileCursorStore,
    MemoryMetaManager,
    MetaError,
    MetaWriteFailed,
    PersistentMetaManager,
    file_store,
    files,
)
from tests.unit.meta.helpers import pos, span

A = ClientIdentity("example", 1001, r"shop\..*")
OTHER = ClientIdentity("other")


def _manager(directory: Path, period_ms: int = 60_000) -> PersistentMetaManager:
    return PersistentMetaManager(
        MemoryMetaManager(), FileCursorStore(directory), flush_period_ms=period_ms
    )


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "meta"


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Records every meta file written (the write itself still happens)."""
    written: list[Path] = []
    real = files.write_atomic

    def recording(path: Path, data: bytes) -> None:
        written.append(path)
        real(path, data)

    monkeypatch.setattr(files, "write_atomic", recording)
    return written


@pytest.fixture
def manager(directory: Path) -> Iterator[PersistentMetaManager]:
    m = _manager(directory)
    m.start()
    yield m
    m.stop()


def _wait_for(condition: Callable[[], bool], timeout: float = 1.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


# -- persistence across restarts -----------------------------------------------------------


def test_cursor_and_subscription_survive_restart(directory: Path) -> None:
    first = _manager(directory)
    first.start()
    first.subscribe(A)
    first.subscribe(OTHER)
    first.update_cursor(A, pos(400))
    first.add_batch(A, span(400, 500))
    first.stop()

    second = _manager(directory)
    second.start()
    try:
        assert second.has_subscribe(A)
        (client,) = second.list_subscriptions("example")
        assert client.filter == r"shop\..*"
        assert second.get_cursor(A) == pos(400)
        assert second.get_cursor(OTHER) is None
        assert second.list_all_batch_ids(A) == [], "batches are memory only"
        assert second.add_batch(A, span(0, 1)) == 1
    finally:
        second.stop()


def test_file_layout_and_content(manager: PersistentMetaManager, directory: Path) -> None:
    manager.subscribe(A)
    manager.update_cursor(A, pos(4))
    manager.flush()
    path = directory / "example" / "meta.dat"
    assert FileCursorStore(directory).meta_file("example") == path
    document = json.loads(path.read_bytes())
    assert document["destination"] == "example"
    (data,) = document["clientDatas"]
    assert data["clientIdentity"]["clientId"] == 1001
    assert data["cursor"]["postion"]["position"] == 4
    assert data["cursor"]["identity"]["slaveId"] == 1234


def test_subscribe_is_written_at_once(manager: PersistentMetaManager, directory: Path) -> None:
    manager.subscribe(A)
    assert (directory / "example" / "meta.dat").exists()
    manager.unsubscribe(A)
    document = json.loads((directory / "example" / "meta.dat").read_bytes())
    assert document["clientDatas"] == []


def test_unsubscribed_client_is_gone_after_restart(directory: Path) -> None:
    first = _manager(directory)
    first.start()
    first.subscribe(A)
    first.update_cursor(A, pos(4))
    first.unsubscribe(A)
    first.stop()
    second = _manager(directory)
    second.start()
    assert not second.has_subscribe(A) and second.get_cursor(A) is None
    second.stop()


# -- when files are written ----------------------------------------------------------------


def test_only_changed_destinations_are_written(
    manager: PersistentMetaManager, writes: list[Path], directory: Path
) -> None:
    manager.subscribe(A)
    manager.subscribe(OTHER)
    writes.clear()
    manager.update_cursor(A, pos(1))
    manager.update_cursor(A, pos(2))
    manager.flush()
    assert writes == [directory / "example" / "meta.dat"]
    manager.flush()
    assert len(writes) == 1, "nothing changed since the last flush"
    manager.add_batch(A, span(2, 3))
    manager.remove_batch(A, 1)
    manager.flush()
    assert len(writes) == 1, "batches are not persisted"
    manager.update_cursor(OTHER, pos(9))
    manager.flush()
    assert writes[1:] == [directory / "other" / "meta.dat"]


def test_periodic_flush_writes_without_stop(directory: Path) -> None:
    m = _manager(directory, period_ms=20)
    m.start()
    try:
        m.subscribe(A)
        m.update_cursor(A, pos(77))
        assert _wait_for(lambda: _cursor_written(directory))
    finally:
        m.stop()


def _cursor_written(directory: Path) -> bool:
    """The example destination's file holds a cursor (the flusher wrote it)."""
    data = json.loads((directory / "example" / "meta.dat").read_bytes())
    return bool(data["clientDatas"][0].get("cursor"))


def _voluntary_switches(thread: threading.Thread) -> int:
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("voluntary_ctxt")]
    return int(line.split()[1])


def test_idle_flusher_sleeps_until_a_cursor_changes(directory: Path) -> None:
    m = _manager(directory, period_ms=10)
    m.start()
    try:
        (flusher,) = [
            t
            for t in threading.enumerate()
            if t.name.startswith("meta-flush") and str(directory) in t.name
        ]
        m.subscribe(A)
        time.sleep(0.1)  # the subscription's flush
        before = _voluntary_switches(flusher)
        time.sleep(0.5)  # 50 periods with nothing to write
        assert _voluntary_switches(flusher) - before <= 2
        m.update_cursor(A, pos(77))  # wakes it: written a period later
        assert _wait_for(lambda: _cursor_written(directory))
    finally:
        m.stop()


def test_stop_writes_pending_cursors(directory: Path, writes: list[Path]) -> None:
    m = _manager(directory)  # period far longer than the test
    m.start()
    m.subscribe(A)
    m.update_cursor(A, pos(5))
    before = len(writes)
    m.stop()
    assert len(writes) == before + 1
    (data,) = json.loads((directory / "example" / "meta.dat").read_bytes())["clientDatas"]
    assert data["cursor"]["postion"]["position"] == 5


def test_flush_thread_stops(directory: Path, writes: list[Path]) -> None:
    m = _manager(directory, period_ms=10)
    m.start()
    assert m.flusher_alive
    m.subscribe(A)
    started = time.monotonic()
    m.stop()
    assert time.monotonic() - started < 1.0
    assert not m.flusher_alive
    count = len(writes)
    time.sleep(0.05)
    assert len(writes) == count, "no writes after stop"


def test_failed_periodic_write_is_retried_and_stop_raises(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = _manager(directory, period_ms=10)
    m.start()
    m.subscribe(A)

    def broken(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "write_atomic", broken)
    m.update_cursor(A, pos(8))
    assert _wait_for(lambda: m.last_flush_error is not None)
    assert isinstance(m.last_flush_error, MetaWriteFailed)
    assert "No space left" in str(m.last_flush_error)
    with pytest.raises(MetaWriteFailed, match=r"meta\.dat"):
        m.stop()
    assert not m.running and not m.flusher_alive


def test_write_recovers_after_failure(
    manager: PersistentMetaManager, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager.subscribe(A)
    real = files.write_atomic

    def broken(path: Path, data: bytes) -> None:
        raise OSError("disk unplugged")

    monkeypatch.setattr(files, "write_atomic", broken)
    manager.update_cursor(A, pos(3))
    manager.flush()  # the destination stays dirty
    assert manager.last_flush_error is not None
    monkeypatch.setattr(files, "write_atomic", real)
    manager.flush()
    data = json.loads((directory / "example" / "meta.dat").read_bytes())
    assert data["clientDatas"][0]["cursor"]["postion"]["position"] == 3


# -- torn and corrupt files ----------------------------------------------------------------


def _write_valid(directory: Path, cursor: int) -> Path:
    m = _manager(directory)
    m.start()
    m.subscribe(A)
    m.update_cursor(A, pos(cursor))
    m.stop()
    return directory / "example" / "meta.dat"


def test_leftover_temp_file_is_ignored_and_removed(directory: Path) -> None:
    path = _write_valid(directory, 42)
    leftover = path.with_name("meta.dat.abc123.tmp")
    leftover.write_bytes(b'{"destination": "example", "clientDa')  # crash mid-write
    m = _manager(directory)
    m.start()
    try:
        assert m.get_cursor(A) == pos(42)
        assert not leftover.exists()
    finally:
        m.stop()


def test_leftover_of_a_first_write_is_removed(directory: Path) -> None:
    leftover = directory / "fresh" / "meta.dat.x1.tmp"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"{")
    m = _manager(directory)
    m.start()
    try:
        assert not leftover.exists()
        assert m.list_subscriptions("fresh") == []
    finally:
        m.stop()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "not JSON"),  # truncated copy of a valid file
        (b"", "empty"),
        (b"\x00" * 64, "not JSON"),
        (b'{"destination": "other", "clientDatas": []}', "belongs to destination 'other'"),
        (b'{"destination": "example", "clientDatas": [{"clientIdentity": 1}]}', "clientIdentity"),
    ],
)
def test_corrupt_meta_file_is_a_clear_error(
    directory: Path, content: bytes | None, reason: str
) -> None:
    path = _write_valid(directory, 42)
    if content is None:
        content = path.read_bytes()[: len(path.read_bytes()) // 2]
    path.write_bytes(content)
    delegate = MemoryMetaManager()
    m = PersistentMetaManager(delegate, FileCursorStore(directory))
    with pytest.raises(CorruptMetaFile) as info:
        m.start()
    message = str(info.value)
    assert str(path) in message
    assert reason in message
    assert "backup" in message and "delete it" in message
    assert info.value.path == path
    assert not m.running and not delegate.running
    assert path.read_bytes() == content, "the file is left for the operator"


def test_crash_before_rename_keeps_the_old_file(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_valid(directory, 1)
    original = path.read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        files.write_atomic(path, b"new content")
    assert path.read_bytes() == original
    assert list(path.parent.glob("*.tmp")) == []


_WRITER = """
import sys
from pathlib import Path
from bridge.meta import ClientIdentity, FileCursorStore, MemoryMetaManager, PersistentMetaManager
from bridge.position import EntryPosition, LogIdentity, LogPosition
store = FileCursorStore(Path(sys.argv[1]))
m = PersistentMetaManager(MemoryMetaManager(), store, flush_period_ms=1)
m.start()
client = ClientIdentity("example")
m.subscribe(client)
print("ready", flush=True)
i = 0
while True:
    i += 1
    m.update_cursor(client, LogPosition(LogIdentity("h:1", 1), EntryPosition("f" * 2000, i)))
    m.flush()
"""


def test_kill_9_while_writing_leaves_a_valid_file(directory: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(directory)],
            cwd=root,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == b"ready"
            time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
        m = _manager(directory)
        m.start()  # raises CorruptMetaFile if the kill tore the file
        try:
            cursor = m.get_cursor(ClientIdentity("example"))
            assert cursor is not None
            assert (cursor.position.position or 0) > 1, "the writer was killed while writing"
        finally:
            m.stop()


# -- misc ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "..", ".", "a/b", "..\\x", ".hidden"])
def test_destination_must_be_a_plain_directory_name(
    manager: PersistentMetaManager, name: str
) -> None:
    with pytest.raises(MetaError, match="cannot name a meta directory"):
        manager.subscribe(ClientIdentity(name))


def test_flush_period_must_be_positive(directory: Path) -> None:
    with pytest.raises(MetaError, match="flush_period_ms"):
        _manager(directory, period_ms=0)


def test_module_exports_meta_file_name() -> None:
    assert file_store.META_FILE == "meta.dat"


def test_a_store_that_keeps_failing_is_retried_with_growing_waits_one_line_each(
    directory: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk must not cost an ERROR line every flush period: the waits grow (the shared
    back-off), each attempt says why, and recovery is said once."""
    attempts: list[float] = []
    real = files.write_atomic

    def full(path: Path, data: bytes) -> None:
        attempts.append(time.monotonic())
        if len(attempts) <= 5:
            raise OSError(28, "No space left on device")
        real(path, data)

    m = _manager(directory, period_ms=10)
    with caplog.at_level(logging.INFO, logger="bridge.meta"):
        m.start()
        try:
            m.subscribe(A)  # written at once, before the disk fills
            monkeypatch.setattr(files, "write_atomic", full)
            m.update_cursor(A, pos(8))
            assert _wait_for(lambda: len(attempts) >= 6, timeout=20)
        finally:
            m.stop()
    failures = [r for r in caplog.records if "meta flush failed" in r.getMessage()]
    assert len(failures) == 5
    assert all("No space left" in r.getMessage() for r in failures)
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts[:5])]
    assert gaps[-1] > 2 * gaps[0], gaps
    assert sum("works again after 5 failed attempts" in r.getMessage() for r in caplog.records) == 1
