"""The binlog reader in a process of its own, so that reading and decoding use a second core.

A Python process runs Python code on one core at a time (the GIL): with the parser and the MQ
worker as threads of one process, the bridge can go no faster than one core allows
(docs/benchmarks.md). ``ParserProcess`` has ``BinlogParser``'s interface; its child process,
``python -m bridge.parse.child``, runs a ``BinlogParser`` and writes its entries
to stdout in frames (kind, length, ``bridge.parse.entry_codec`` data): a batch whenever the parser
is about to read the socket, or holds ``GROUP_ENTRIES`` entries, so an entry never waits for
others to arrive and a frame holds at most one read of binlog. The frame's kind says whether
the socket had nothing to read yet: then the child has read all the source has written so far
(``caught_up``), and the store's get hands out what it holds rather than wait for a fuller
batch (``EventStore.source_caught_up``).
Given the destination's ``AheadEncoding``, the child also writes rows events in the output
format (FlatMessage, compiled path): they cross as a few bytes objects, not as row values,
which is what makes the second core pay off. The pipe (widened to ``childproc.PIPE_BYTES``)
carries the backpressure: while the store is full the instance stops reading, the child
blocks writing and stops reading the binlog.

The instance calls ``preflight()`` and then ``batches()`` on its parser thread; the child is
started by ``preflight()``, before the source is checked, and waits for what to read (without
a preflight, ``batches()`` starts it). Its start-up (an interpreter and its imports, about a
tenth of a second of a core) then runs on the other core while this process checks the source
and finds the start position (some 35 ms on a local source: a third of it or more), rather
than all of it between the start position and the first row.

The child runs in a session of its own (signals for the bridge's process group do not reach
it) and is killed by ``stop()``. Once told what to read, it dies with the thread that started
it (Linux ``PR_SET_PDEATHSIG``; elsewhere at its next write): ``batches()`` on another thread
than ``preflight()`` starts a child of its own. While it waits, it ends when its stdin does
(the bridge is gone). Its failure arrives as the pickled error, raised again here as itself
(``BinlogPurged`` stays ``BinlogPurged``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass

from bridge import childproc
from bridge.collector import tune_garbage_collector
from bridge.entry import AheadEncode, AheadEncoding, Entry, EventEncode
from bridge.logs import configure_logging, configured_format
from bridge.parse.access import Source, SourceAccess
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.convert import GROUP_ENTRIES
from bridge.parse.entry_codec import EntryDecoder, EntryEncoder, FlatEntry
from bridge.parse.exceptions import ParserProcessFailed
from bridge.parse.parser import BinlogParser, Definitions
from bridge.parse.source import SourceFacts, preflight
from bridge.position import EntryPosition
from bridge.schema.history import SchemaHistory

# While the source's bytes keep coming, a frame holds at most what this many reads brought
# (each at most framing.READ_SIZE, or one larger event): about a megabyte of binlog.
READS_PER_FRAME = 16
_BATCH = b"b"
_CAUGHT_UP = b"w"  # a batch, after which the child waits for the source
# How long stop() waits for a killed waiting child to be reaped (it takes milliseconds).
STOP_REAP_S = 1.0


@dataclass(frozen=True)
class ChildSpec:
    """What the child needs to run the parser, sent pickled on its stdin."""

    source: SourceAccess
    time_zone: str | None
    heartbeat_period_s: float
    start: EntryPosition
    destination: str
    log_format: str
    log_level: int
    parent_pid: int
    # AheadEncoding.encode (the output format is not the binlog reader's business).
    encode_ahead: AheadEncode | None = None
    # How values are spelled (the destination's mq.value_mode and mq.binary_encoding).
    values: DecodeOptions | None = None
    # AheadEncoding.encode_event: rows events written from their bytes, before decoding.
    encode_event: EventEncode | None = None
    # Whether transactions start with a TRANSACTIONBEGIN entry (BinlogParser's ``begins``).
    begins: bool = True
    # What the instance's preflight found, so that the child starts without its own.
    facts: SourceFacts | None = None
    # The schema history at ``start`` (the instance's), None to read live tables.
    history: SchemaHistory | None = None


class ParserProcess:
    """``BinlogParser``'s interface, with the reading and decoding done by a child process."""

    def __init__(
        self,
        source: Source,
        *,
        time_zone: str | None = None,
        heartbeat_period_s: float = 15.0,
        destination: str = "",
        ahead: AheadEncoding | None = None,
        values: DecodeOptions | None = None,
        begins: bool = True,
        definitions: Definitions | None = None,
    ) -> None:
        """``ahead``: how the child writes rows events in the output format, or None to send
        rows (the instance says where: ``bridge.instance.instance.ahead_where_allowed``);
        ``values``, ``begins`` and ``definitions``: as ``BinlogParser`` takes them (the
        child is given the definitions at its start)."""
        self._source = source
        self._definitions = definitions
        self._values = values
        self._begins = begins
        self._facts: SourceFacts | None = None
        self._ahead = ahead
        self._time_zone = time_zone
        self._heartbeat_s = heartbeat_period_s
        self._destination = destination
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None  # the child reading
        # Started by preflight(), waiting for its ChildSpec: the next batches() takes it.
        self._standby: subprocess.Popen[bytes] | None = None
        self._standby_thread = 0  # the thread that started it (its death signal's)
        self._caught_up = False

    @property
    def caught_up(self) -> bool:
        """Whether the batch ``batches()`` yielded last ends at what the source had written:
        the child waits for the source after it."""
        return self._caught_up

    def preflight(self) -> SourceFacts:
        """The source's facts, found in this process; the child is given the last ones
        (each connection at start costs it a TLS handshake and round trips). The child for
        the next ``batches()`` is started first, so that its start-up overlaps the checks
        (one still waiting, when the last attempt failed after its preflight, is kept)."""
        with self._lock:
            if self._take_standby() is None and not self._stopping.is_set():
                self._standby, self._standby_thread = _start_child(), threading.get_ident()
        self._facts = preflight(self._source, self._time_zone)
        return self._facts

    def stop(self) -> None:
        """Ends ``entries()`` promptly: the child is killed, its pipe ends; a child still
        waiting for what to read is killed and reaped here (within ``STOP_REAP_S``)."""
        self._stopping.set()
        with self._lock:
            child, standby, self._standby = self._child, self._standby, None
        if child is not None:
            child.kill()
        if standby is not None:
            childproc.end(standby, STOP_REAP_S)

    def entries(self, start: EntryPosition) -> Iterator[Entry]:
        """Entries from ``start`` until ``stop()``, as ``BinlogParser.entries`` yields them."""
        with contextlib.closing(self.batches(start)) as batches:  # stops the child early too
            for batch in batches:
                yield from batch

    def batches(self, start: EntryPosition) -> Generator[Sequence[Entry], None, None]:
        """``entries()`` as the child's batches bring them: what it read before it would
        have waited for the source, or ``GROUP_ENTRIES`` entries."""
        child = self._spawn(start)
        if child is None:
            return
        assert child.stdout is not None
        decoder = EntryDecoder(self._ahead.revive if self._ahead is not None else None)
        try:
            while (frame := childproc.read_frame(child.stdout)) is not None:
                kind, payload = frame
                if kind == childproc.ERROR:
                    raise childproc.error_from(payload, _failed)
                self._caught_up = kind == _CAUGHT_UP
                yield decoder.decode(payload)
        finally:
            code = childproc.end(child)
            with self._lock:
                self._child = None
        if not self._stopping.is_set():
            raise ParserProcessFailed(
                f"the binlog reader process of {self._destination or self._source.address} "
                f"exited unexpectedly (exit code {code}); it is restarted from the last stored "
                "transaction"
            )

    def _spawn(self, start: EntryPosition) -> subprocess.Popen[bytes] | None:
        spec = ChildSpec(
            source=SourceAccess.of(self._source),  # no configuration models in the child
            time_zone=self._time_zone,
            heartbeat_period_s=self._heartbeat_s,
            start=start,
            destination=self._destination,
            log_format=configured_format(),
            log_level=logging.getLogger().getEffectiveLevel(),
            parent_pid=os.getpid(),
            encode_ahead=self._ahead.encode if self._ahead is not None else None,
            values=self._values,
            encode_event=self._ahead.encode_event if self._ahead is not None else None,
            begins=self._begins,
            facts=self._facts,
            history=self._definitions(start) if self._definitions is not None else None,
        )
        with self._lock:
            if self._stopping.is_set():
                return None
            child = self._take_standby() or _start_child()
            self._standby, self._child = None, child
        assert child.stdin is not None
        try:
            child.stdin.write(pickle.dumps(spec))
            child.stdin.close()
        except BrokenPipeError:
            pass  # it died at once: its exit code is reported when its output ends
        return child

    def _take_standby(self) -> subprocess.Popen[bytes] | None:
        """The waiting child, if it is still alive and this thread started it; one that is
        not is ended (called holding ``_lock``)."""
        standby = self._standby
        if standby is None:
            return None
        if standby.poll() is None and self._standby_thread == threading.get_ident():
            return standby
        self._standby = None
        childproc.end(standby, STOP_REAP_S)
        return None


def _start_child() -> subprocess.Popen[bytes]:
    """A binlog reader process, waiting on its stdin for the ``ChildSpec`` to run."""
    child = childproc.spawn("bridge.parse.child")
    assert child.stdout is not None
    childproc.widen_pipe(child.stdout)
    return child


def full_frames(batch: list[Entry | FlatEntry]) -> Iterator[list[Entry | FlatEntry]]:
    """The frames of ``GROUP_ENTRIES`` entries ``batch`` holds, taken off its front; the rest
    waits for the next group, or goes before the next read."""
    while len(batch) >= GROUP_ENTRIES:
        frame = batch[:GROUP_ENTRIES]
        del batch[:GROUP_ENTRIES]
        yield frame


class FrameBatcher:
    """The child's entries on their way to the instance, and when they go as a frame
    (``send(entries, source_waits)``): ``GROUP_ENTRIES`` of them as soon as they are there;
    the rest before a read of the source that would wait (they are due), or, while bytes keep
    coming, after ``READS_PER_FRAME`` reads, which bounds what the instance decodes at once
    (test_huge_transaction). A frame per read made frames of some 50 one-row transactions,
    and the instance's work per frame came to a microsecond per row."""

    def __init__(self, send: Callable[[list[Entry | FlatEntry], bool], None]) -> None:
        self._send = send
        self._batch: list[Entry | FlatEntry] = []
        self._reads = 0  # reads of the source since the last flush

    def add(self, group: Sequence[Entry | FlatEntry]) -> None:
        self._batch += group
        for frame in full_frames(self._batch):
            self._send(frame, False)

    def before_read(self, source_waits: bool) -> None:
        """The parser's ``before_read``: called before each read of the source."""
        self._reads += 1
        if source_waits or self._reads > READS_PER_FRAME:
            self.flush(source_waits)

    def flush(self, source_waits: bool = True) -> None:
        """Send what is held (the end of the stream, or its failure, counts as waiting)."""
        self._reads = 0
        if self._batch:
            self._send(self._batch, source_waits)
            self._batch = []


def _definitions(history: SchemaHistory | None) -> Definitions | None:
    """The child's history: the one it was given, advanced as it reads."""
    if history is None:
        return None
    return lambda _start: history


def _failed(text: str) -> ParserProcessFailed:
    return ParserProcessFailed(f"the binlog reader process failed: {text}")


# --------------------------------------------------------------------------- the child side


def main() -> int:
    frames = childproc.frames_out()
    try:
        spec: ChildSpec = pickle.load(sys.stdin.buffer)
    except (EOFError, pickle.UnpicklingError):
        return 0  # started ahead and never told what to read: the bridge stopped or is gone
    childproc.die_with_parent(spec.parent_pid)
    configure_logging(spec.log_format, spec.log_level)
    tune_garbage_collector()
    threading.current_thread().name = f"parser-{spec.destination}"
    encoder = EntryEncoder(spec.encode_ahead)

    def send(entries: list[Entry | FlatEntry], source_waits: bool) -> None:
        kind = _CAUGHT_UP if source_waits else _BATCH
        try:
            childproc.write_frame(frames, kind, encoder.encode(entries))
        except BrokenPipeError:
            # The instance is gone. Leave at once: raised inside the parser, this error
            # would look like a lost source connection and be retried.
            os._exit(0)

    batcher = FrameBatcher(send)
    parser = BinlogParser(
        spec.source,
        time_zone=spec.time_zone,
        heartbeat_period_s=spec.heartbeat_period_s,
        before_read=batcher.before_read,
        values=spec.values,
        encode_event=spec.encode_event,
        begins=spec.begins,
        facts=spec.facts,
        definitions=_definitions(spec.history),
    )
    try:
        for group in parser.flat_batches(spec.start):
            batcher.add(group)
        batcher.flush()
    except BaseException as exc:
        batcher.flush()  # what was read before the failure, as the parser yielded it
        try:
            childproc.write_error(frames, exc)
        except BrokenPipeError:
            return 0
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
