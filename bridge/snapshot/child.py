"""A snapshot reader connection in a process of its own, so that reading and rendering a chunk's
rows use a second core (``bridge.childproc``; the binlog reader's child does the same for the
stream).

``ChildSession`` is a ``ReaderSession`` whose every call is a request to ``python -m
bridge.snapshot.child``, which runs a ``LocalSession`` and answers each request in order. A
chunk's rows cross as the binlog reader's child sends rows (``bridge.parse.entry_codec``: the plan
once, then per row its texts and sql types), with their keys; the reader thread waits for the
answer with the GIL released. An error in the child (the source went away, a table no
snapshot reads) is raised again here as itself; the reader then closes the session, which
kills the child, and opens a new one.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import pickle
import threading
from dataclasses import dataclass
from typing import IO, Any

from bridge import childproc
from bridge.collector import tune_garbage_collector
from bridge.entry import (
    AheadEncode,
    AheadEncoding,
    Entry,
    EntryType,
    EventType,
    Header,
    RowChange,
    row_images,
)
from bridge.logs import configure_logging, configured_format
from bridge.parse.access import Source, SourceAccess
from bridge.parse.binlog.values import DecodeOptions
from bridge.parse.entry_codec import EntryDecoder, EntryEncoder
from bridge.snapshot.exceptions import SnapshotError
from bridge.snapshot.session import ChunkRead, Gone, LocalSession, Redo

_DESCRIBE, _READ, _ESTIMATE = b"d", b"r", b"e"
_ANSWER, _GONE, _REDO = b"a", b"g", b"o"


@dataclass(frozen=True)
class ChildSpec:
    """What the child needs to open its ``LocalSession``, its first frame (pickled)."""

    source: SourceAccess
    options: DecodeOptions
    chunk_size: int
    destination: str
    log_format: str
    log_level: int
    parent_pid: int
    # AheadEncoding.encode_apart: each row written in the output format here as a record of
    # its own (None: rows cross).
    encode_ahead: AheadEncode | None = None


class SnapshotProcessFailed(SnapshotError):
    """The snapshot reader's process ended or failed without saying why."""


class ChildSession:
    """A ``ReaderSession`` whose work runs in a child process, started at once."""

    def __init__(
        self,
        source: Source,
        options: DecodeOptions,
        chunk_size: int,
        destination: str,
        ahead: AheadEncoding | None = None,
    ) -> None:
        """``ahead``: the destination's encoding ahead of the batch, as the binlog reader's
        child takes it; given (with ``encode_apart``), each row crosses written in the output
        format as a record of its own."""
        self._destination = destination or source.address
        self._lock = threading.Lock()
        self._decoder = EntryDecoder()
        encode = ahead.encode_apart if ahead is not None else None
        self._revive = ahead.revive_apart if ahead is not None and encode is not None else None
        self._child = childproc.spawn("bridge.snapshot.child")
        assert self._child.stdin is not None and self._child.stdout is not None
        childproc.widen_pipe(self._child.stdout)
        self._requests: IO[bytes] = self._child.stdin
        self._answers: IO[bytes] = self._child.stdout
        spec = ChildSpec(
            SourceAccess.of(source),  # no configuration models in the child
            options,
            chunk_size,
            destination,
            configured_format(),
            logging.getLogger().getEffectiveLevel(),
            os.getpid(),
            encode,
        )
        with contextlib.suppress(BrokenPipeError):  # it died at once: the first answer says so
            childproc.write_frame(self._requests, b"s", pickle.dumps(spec))

    def describe(self, schema: str, name: str) -> tuple[str, ...] | None:
        key: tuple[str, ...] | None = marshal.loads(self._ask(_DESCRIBE, (schema, name))[1])
        return key

    def read_chunk(self, schema: str, name: str, after: object | None) -> ChunkRead | Gone | Redo:
        kind, payload = self._ask(_READ, (schema, name, after))
        if kind == _GONE:
            return "gone"
        if kind == _REDO:
            return "redo"
        rendered, rows_data, keys, per_entry, entry_keys, high, read_ms = marshal.loads(payload)
        if rendered is not None and self._revive is not None:
            rows = self._revive(*rendered)
            return ChunkRead(rows, keys, per_entry, entry_keys, high, read_ms)
        if rows_data is None:  # an empty chunk
            return ChunkRead((), keys, per_entry, entry_keys, high, read_ms)
        (entry,) = self._decoder.decode(rows_data)
        assert entry.row_change is not None
        return ChunkRead(row_images(entry.row_change), keys, per_entry, entry_keys, high, read_ms)

    def estimated_rows(self, schema: str, name: str) -> int:
        count: int = marshal.loads(self._ask(_ESTIMATE, (schema, name))[1])
        return count

    def close(self) -> None:
        """Kill the child (a request waiting for its answer ends at once) and reap it."""
        childproc.end(self._child)

    def _ask(self, kind: bytes, request: tuple[Any, ...]) -> tuple[bytes, bytes]:
        with self._lock:
            # Gone, or closed by close(): the answer's absence says so.
            with contextlib.suppress(BrokenPipeError, ValueError):
                childproc.write_frame(self._requests, kind, marshal.dumps(request))
            frame = childproc.read_frame(self._answers)
        if frame is None:
            code = self._child.poll()
            raise SnapshotProcessFailed(
                f"the snapshot reader process of {self._destination} ended (exit code {code}); "
                "its table is read again from the last key put"
            )
        if frame[0] == childproc.ERROR:
            raise childproc.error_from(frame[1], _failed)
        return frame


def _failed(text: str) -> SnapshotProcessFailed:
    return SnapshotProcessFailed(f"the snapshot reader process failed: {text}")


# --------------------------------------------------------------------------- the child side


def _chunk_header(schema: str, name: str, read: ChunkRead) -> Header:
    """The header a chunk's rows are carried and rendered under: no binlog position (that is
    known only where the chunk is put) and so no GTID; the chunk's read time as ``es``."""
    return Header("", 0, 0, read.read_ms, schema, name, EventType.INSERT)


def _rows_entry(schema: str, name: str, read: ChunkRead) -> Entry:
    """A chunk's rows as one INSERT entry, the shape ``bridge.parse.entry_codec`` carries rows
    in."""
    change = RowChange(EventType.INSERT, row_datas=read.rows)
    return Entry(_chunk_header(schema, name, read), EntryType.ROWDATA, change)


def _rendered(
    encode: AheadEncode | None, schema: str, name: str, read: ChunkRead
) -> tuple[Any, ...] | None:
    """A chunk's rows written in the output format, each as a record of its own (as the
    stream's parent would build it for that row alone), in one call; None when there is no
    such encoding or a row does not take it (over the size it leaves room for: the chunk's
    rows cross as rows, for the oversize policy)."""
    if encode is None or not read.rows:
        return None
    return encode(
        _chunk_header(schema, name, read), RowChange(EventType.INSERT, row_datas=read.rows)
    )


@dataclass
class _Prefetched:
    """The chunk after the last one answered, read before it was asked for."""

    request: tuple[Any, ...]
    outcome: ChunkRead | Gone | Redo | Exception
    rendered: tuple[Any, ...] | None = None


def serve(
    session: LocalSession,
    requests: IO[bytes],
    answers: IO[bytes],
    encode_ahead: AheadEncode | None = None,
) -> None:
    """Answer ``requests`` in order until they end; an error is answered as itself and the
    next request served (the parent decides whether the session is still of use).

    After answering a full chunk, the next chunk of the table is read and rendered at once,
    while the parent puts the one answered (it asks for it next, unless the table changed
    shape or the snapshot stopped; then it is dropped). Its SELECT still starts after its
    low watermark: the reader takes a chunk's low watermark before it asks for the chunk
    before it (``SnapshotReader._read_table``)."""
    encoder = EntryEncoder()
    ahead: _Prefetched | None = None
    while (frame := childproc.read_frame(requests)) is not None:
        kind, payload = frame
        try:
            request = marshal.loads(payload)
            if kind == _DESCRIBE:
                ahead = None  # the table's shape is read again: so is its next chunk
                childproc.write_frame(answers, _ANSWER, marshal.dumps(session.describe(*request)))
            elif kind == _ESTIMATE:
                count = session.estimated_rows(*request)
                childproc.write_frame(answers, _ANSWER, marshal.dumps(count))
            elif kind == _READ:
                if ahead is None or ahead.request != request:
                    ahead = _read(session, request, encode_ahead)
                answered, ahead = ahead, None
                if isinstance(answered.outcome, Exception):
                    raise answered.outcome
                childproc.write_frame(answers, *_answer(encoder, answered))
                read = answered.outcome
                if isinstance(read, ChunkRead) and read.count == session.chunk_size:
                    schema, name, _ = request
                    ahead = _read(session, (schema, name, read.entry_keys[-1]), encode_ahead)
            else:
                raise ValueError(f"unknown request {kind!r}")
        except BrokenPipeError:
            return
        except Exception as exc:
            childproc.write_error(answers, exc)


def _read(
    session: LocalSession, request: tuple[Any, ...], encode_ahead: AheadEncode | None
) -> _Prefetched:
    schema, name, after = request
    try:
        read = session.read_chunk(schema, name, after)
    except Exception as exc:  # raised when it is asked for
        return _Prefetched(request, exc)
    rendered = _rendered(encode_ahead, schema, name, read) if isinstance(read, ChunkRead) else None
    return _Prefetched(request, read, rendered)


def _answer(encoder: EntryEncoder, read: _Prefetched) -> tuple[bytes, bytes]:
    outcome = read.outcome
    if outcome == "gone":
        return _GONE, b""
    if outcome == "redo":
        return _REDO, b""
    assert isinstance(outcome, ChunkRead)
    rows = None
    if read.rendered is None and outcome.rows:  # encoded only now: each plan is sent once
        schema, name, _ = read.request
        rows = encoder.encode([_rows_entry(schema, name, outcome)])
    answer = (
        read.rendered,
        rows,
        outcome.keys,
        outcome.per_entry,
        outcome.entry_keys,
        outcome.high,
        outcome.read_ms,
    )
    return _ANSWER, marshal.dumps(answer)


def main() -> int:
    answers = childproc.frames_out()
    requests = os.fdopen(os.dup(0), "rb")
    first = childproc.read_frame(requests)
    if first is None:
        return 0
    spec: ChildSpec = pickle.loads(first[1])
    childproc.die_with_parent(spec.parent_pid)
    configure_logging(spec.log_format, spec.log_level)
    tune_garbage_collector()
    threading.current_thread().name = f"snapshot-{spec.destination}"
    try:
        session = LocalSession(spec.source, spec.options, spec.chunk_size)
    except Exception as exc:
        # Answered to the first request: the parent raises it where it asked.
        frame = childproc.read_frame(requests)
        if frame is not None:
            childproc.write_error(answers, exc)
        return 1
    try:
        serve(session, requests, answers, spec.encode_ahead)
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
