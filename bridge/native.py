"""The compiled hot path (``native/``: Rust + PyO3, package ``canal-bridge-native``).

Optional: ``deploy/local/install.sh`` builds it when cargo is on the machine, and every
function in it has a pure-Python twin giving the same bytes (checked by the tests on the type
corpus). ``CANAL_BRIDGE_NATIVE=0`` switches it off, e.g. to compare the two paths.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast


class _ImageWriter(Protocol):
    declined: int  # values of columns with a spec that went to their Python writer

    def body(self, rows: Sequence[Sequence[Any]]) -> bytes: ...


class Compiled(Protocol):
    """What ``canal_bridge_native`` offers (its Rust source says how each mirrors Python)."""

    def ImageReader(  # noqa: N802  (a class in the compiled module)
        self,
        specs: Sequence[tuple[int, int, int, int, int, tuple[str, ...]] | None],
        null_types: Sequence[int],
        decoders: Sequence[Callable[[bytes, int], tuple[str, int, int]]],
        fallback: Callable[[bytes, int], Any],
    ) -> Callable[[bytes, int], Any]:
        """A row image reader for one plan (``bridge.parse.binlog.compiled``)."""
        ...

    def ImageWriter(  # noqa: N802  (a class in the compiled module)
        self,
        specs: Sequence[tuple[int, int, int] | None],
        writers: Sequence[Callable[[Any], bytes]],
    ) -> _ImageWriter:
        """A snapshot table's INSERT body writer (``bridge.snapshot.image.body_writer``)."""
        ...

    def flat_events(  # noqa: PLR0917  (one flat call per read of the dump)
        self,
        converter: object,
        events: list[bytes],
        at: int,
        checksum: bool,
        limit: int,
        out: list[Any],
        room: int,
    ) -> int:
        """``EventConverter.flat_entries`` of ``events`` from ``at`` on into ``out`` until it
        holds ``room`` entries, rows events written by ``rows_event_parts`` with ``limit``;
        the index of the first event it did not take (``EventConverter.flat_read``)."""
        ...

    def rows_record(  # noqa: PLR0917  (one flat call per rows event)
        self,
        id: int,
        database: str,
        table: str,
        kind: int,
        event_type: str,
        es: int,
        ts: int,
        sql: str,
        gtid: str,
        rows: Sequence[object],
    ) -> tuple[bytes, bytes] | None:
        """``(FlatMessage JSON, record key)`` of a rows event of ``DecodedRow``s (kind 0
        insert, 1 update, 2 delete), or None where the pure-Python path must decide."""
        ...

    def read_end(
        self, events: list[bytes], checksum: bool, journal: str, position: int
    ) -> tuple[str, int]:
        """Where a read of ``events`` leaves the binlog
        (``bridge.parse.binlog.framing.read_end``)."""
        ...

    def apply_json_diffs(self, doc: bytes, data: bytes, start: int, end: int) -> bytes | None:
        """The binary JSON ``doc`` after the diff list ``data[start:end]``, or None where the
        Python path must decide (``bridge.parse.binlog.json_diff.applied_document``)."""
        ...

    def binlog_events(self, buffer: bytes, at: int, events: list[bytes]) -> int:
        """Appends the event of each whole packet of ``buffer`` from ``at`` on that carries
        one (continuation packets joined) to ``events``; returns where the first packet it did
        not take starts (``bridge.parse.binlog.framing.EventReader``)."""
        ...

    def rows_event_parts(  # noqa: PLR0917  (one flat call per rows event)
        self,
        database: str,
        table: str,
        kind: int,
        event_type: str,
        es: int,
        gtid: str,
        before: object,
        after: object,
        body: bytes,
        pos: int,
        limit: int,
    ) -> tuple[int, bytes, bytes, bytes, bytes] | None:
        """``rows_record_parts`` of a rows event written from its undecoded images (from
        ``pos`` of ``body``, read with the plans ``before`` / ``after``), or None where the
        Python path must decide (``bridge.mq.rendering.EventRenderer``)."""
        ...

    def rows_record_parts(  # noqa: PLR0917  (one flat call per rows event)
        self,
        database: str,
        table: str,
        kind: int,
        event_type: str,
        es: int,
        sql: str,
        gtid: str,
        rows: tuple[object, ...],
        limit: int,
    ) -> tuple[int, bytes, bytes, bytes, bytes] | None:
        """``rows_record`` without the id and ts: ``(rows, head, middle, tail, key)``, the
        value being ``head + id + middle + ts + tail``; None also over ``limit`` bytes."""
        ...

    def row_records_parts(  # noqa: PLR0917  (one flat call per snapshot chunk)
        self,
        database: str,
        table: str,
        kind: int,
        event_type: str,
        es: int,
        sql: str,
        gtid: str,
        rows: tuple[object, ...],
        limit: int,
    ) -> tuple[list[bytes], bytes, bytes, list[bytes]] | None:
        """Each row as a record of its own: ``(heads, middle, tail, keys)``, row ``i``'s
        value being ``heads[i] + id + middle + ts + tail``; None where ``rows_record_parts``
        of any one row would be, or where rows differ after the head."""
        ...

    def text_rows(
        self, buffer: bytes, kinds: bytes, converters: tuple[Any, ...], rows: list[Any]
    ) -> tuple[int, int]:
        """Appends the rows of the text-protocol row packets at the start of ``buffer`` to
        ``rows`` (``bridge.snapshot.result``); ``(offset, state)``: 1 past the result's EOF
        packet, 2 an error packet at ``offset``, 0 the packet at ``offset`` incomplete."""
        ...


# What the module must offer: every name of ``Compiled``.
OFFERED = tuple(sorted(name for name in vars(Compiled) if not name.startswith("_")))


def _load() -> Compiled | None:
    """The compiled module, unless switched off or absent; a build older than this code (it
    lacks a function the code calls) is left out, loudly, rather than failing on first use."""
    if os.environ.get("CANAL_BRIDGE_NATIVE", "1") == "0":
        return None
    try:
        compiled = importlib.import_module("canal_bridge_native")
    except ImportError:
        return None
    missing = [name for name in OFFERED if not hasattr(compiled, name)]
    if missing:
        logging.getLogger(__name__).warning(
            "canal-bridge-native is older than this code (it lacks %s): running the pure-Python "
            "path; rebuild it with deploy/local/install.sh native",
            ", ".join(missing),
        )
        return None
    return cast(Compiled, compiled)


# Read at each call site (``native.module``), so a test can switch paths by setting it.
module: Compiled | None = _load()


def describe() -> str:
    """For the start-up log line: which path runs."""
    return "compiled (canal-bridge-native)" if module is not None else "pure Python"
