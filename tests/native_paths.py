"""Builds records with both FlatMessage encoders, pure Python and compiled
(``canal_bridge_native``), so a test can require the same bytes from each, and that the
compiled path really ran."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest

from bridge import native
from bridge.config import DEFAULT_MAX_RECORD_BYTES, MqConfig
from bridge.entry import EncodedAhead, Entry
from bridge.mq.flat_encoder import RenderedRows
from bridge.mq.formats import record_builder
from bridge.mq.records import OutgoingRecord
from bridge.mq.rendering import render_rows
from bridge.parse.entry_codec import EntryDecoder, EntryEncoder


def compiled_module() -> native.Compiled:
    """The compiled module, or a skip saying how to build it (install.sh does when cargo is
    on the machine, and fails loudly if that build fails). Where the build exists
    (``CANAL_BRIDGE_REQUIRE_NATIVE=1``, set by deploy/local/test.sh), a module that does not
    import fails the test instead: the twin comparisons must not skip silently in CI."""
    try:
        import canal_bridge_native
    except ImportError as exc:
        how = "install Rust, then deploy/local/install.sh"
        if os.environ.get("CANAL_BRIDGE_REQUIRE_NATIVE") == "1":
            pytest.fail(f"canal-bridge-native was built but does not import ({exc}): {how}")
        pytest.skip(f"canal-bridge-native is not built: {how}")
    module: native.Compiled = canal_bridge_native
    return module


class CountingCompiled:
    """The compiled module, counting the rows events it wrote (None: left to Python)."""

    def __init__(self, module: native.Compiled) -> None:
        self.module = module
        self.written = 0
        self.declined = 0

    def rows_record(self, *args: Any) -> tuple[bytes, bytes] | None:
        built = self.module.rows_record(*args)
        if built is None:
            self.declined += 1
        else:
            self.written += 1
        return built


BATCH_ID, BUILD_TS = 7, 1_700_000_000_000
DEFAULT_MQ = MqConfig(topic="t")


def records_both_ways(
    entries: Sequence[Entry],
    mq: MqConfig = DEFAULT_MQ,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> tuple[list[OutgoingRecord], list[OutgoingRecord], CountingCompiled]:
    """``(pure-Python records, compiled records, what the compiled path did)`` of a batch."""
    counting = CountingCompiled(compiled_module())
    python = record_builder(mq, max_record_bytes, compiled=None)
    compiled = record_builder(mq, max_record_bytes, compiled=counting)
    return (
        python.build(entries, BATCH_ID, BUILD_TS),
        compiled.build(entries, BATCH_ID, BUILD_TS),
        counting,
    )


def records_rendered(
    entries: Sequence[Entry],
    mq: MqConfig = DEFAULT_MQ,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    limit: int = 1 << 30,
    *,
    batch_id: int = BATCH_ID,
    ts: int = BUILD_TS,
) -> tuple[list[OutgoingRecord], int]:
    """The records of a batch as the binlog reader process delivers it: rows events rendered
    up to ``limit`` bytes (``render_rows``), sent through the wire and decoded; and how many
    entries arrived rendered."""
    module = compiled_module()
    encoder = EntryEncoder(lambda header, change: render_rows(header, change, limit))
    arrived = EntryDecoder(RenderedRows).decode(encoder.encode(entries))
    rendered = sum(
        1 for e in arrived if e.row_change and type(e.row_change.row_datas) is RenderedRows
    )
    builder = record_builder(mq, max_record_bytes, compiled=module)
    return builder.build(arrived, batch_id, ts), rendered


def assert_compiled_records_match(entries: Sequence[Entry]) -> None:
    """Where the compiled module is built, its records for ``entries`` (rows events, every
    one of which it must write) equal the pure-Python ones. Without it there is nothing to
    compare; ``tests/unit/mq/test_native_records.py`` then reports it as skipped."""
    if native.module is None:
        return
    roomy = 1 << 30  # megabyte blobs
    python, compiled, counting = records_both_ways(entries, max_record_bytes=roomy)
    assert compiled == python
    assert counting.written == len(entries) and counting.declined == 0
    rendered, count = records_rendered(entries, max_record_bytes=roomy)
    assert rendered == python and count == len(entries)


def assert_event_records_match(decoded: Sequence[Entry], ahead: Sequence[Entry]) -> int:
    """The records of rows events the parser wrote from their bytes (``ahead``: read with
    ``EventRenderer`` as its ``encode_event``; those it declined carry their rows) equal the
    pure-Python records of the same events decoded (``decoded``); how many were written."""
    roomy = 1 << 30
    python, _, _ = records_both_ways(decoded, max_record_bytes=roomy)
    arrived = EntryDecoder(RenderedRows).decode(EntryEncoder().encode(ahead))
    builder = record_builder(DEFAULT_MQ, roomy, compiled=compiled_module())
    assert builder.build(arrived, BATCH_ID, BUILD_TS) == python
    return sum(1 for e in ahead if e.row_change and type(e.row_change.row_datas) is EncodedAhead)


def read_by_compiled_reader(entries: Sequence[Entry]) -> bool:
    """Whether every row image of ``entries`` was read by the compiled reader, none of them
    handed back to the Python reader."""
    module = native.module
    if module is None:
        return False
    reader_type: Any = module.ImageReader
    plans = [
        plan
        for entry in entries
        for row in (entry.row_change.row_datas if entry.row_change else ())
        for plan in (getattr(row, "old_plan", None), getattr(row, "new_plan", None))
        if plan is not None
    ]
    return bool(plans) and all(
        isinstance(plan.read, reader_type) and plan.read.declined == 0 for plan in plans
    )
