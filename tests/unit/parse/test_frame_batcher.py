"""FrameBatcher: when the binlog reader's process sends its entries to the instance."""

from __future__ import annotations

from bridge.entry import Entry
from bridge.parse.child import READS_PER_FRAME, FrameBatcher
from bridge.parse.convert import GROUP_ENTRIES
from bridge.parse.entry_codec import FlatEntry


class Sent:
    """The frames a batcher sent: their sizes and whether each said the source waits."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, bool]] = []

    def __call__(self, entries: list[Entry | FlatEntry], source_waits: bool) -> None:
        self.frames.append((len(entries), source_waits))


def entries(count: int) -> list[FlatEntry]:
    return [
        ("mysql-bin.000001", n, 1, 0, "", "", None, "", 1, "ROWDATA", "", None)
        for n in range(count)
    ]


def test_entries_wait_for_more_reads_while_the_source_has_bytes() -> None:
    sent = Sent()
    batcher = FrameBatcher(sent)
    for _ in range(READS_PER_FRAME):
        batcher.before_read(source_waits=False)
        batcher.add(entries(10))
    assert sent.frames == []
    batcher.before_read(source_waits=False)  # one read more than a frame may span
    assert sent.frames == [(10 * READS_PER_FRAME, False)]


def test_entries_go_before_a_read_that_would_wait() -> None:
    sent = Sent()
    batcher = FrameBatcher(sent)
    batcher.before_read(source_waits=False)
    batcher.add(entries(3))
    batcher.before_read(source_waits=True)
    assert sent.frames == [(3, True)]
    batcher.before_read(source_waits=True)  # nothing held: no empty frame
    assert sent.frames == [(3, True)]


def test_a_full_frame_goes_at_once_and_the_rest_waits() -> None:
    sent = Sent()
    batcher = FrameBatcher(sent)
    batcher.before_read(source_waits=False)
    batcher.add(entries(GROUP_ENTRIES + 5))
    assert sent.frames == [(GROUP_ENTRIES, False)]
    batcher.flush()
    assert sent.frames == [(GROUP_ENTRIES, False), (5, True)]


def test_a_flush_starts_the_count_of_reads_again() -> None:
    sent = Sent()
    batcher = FrameBatcher(sent)
    for _ in range(READS_PER_FRAME - 1):
        batcher.before_read(source_waits=False)
    batcher.add(entries(1))
    batcher.before_read(source_waits=True)
    for _ in range(READS_PER_FRAME):
        batcher.before_read(source_waits=False)
        batcher.add(entries(1))
    assert sent.frames == [(1, True)]
