"""Every FlatMessage writer gives exactly the golden records (``tests/golden``): the
pure-Python encoder, the compiled one, and rows rendered by the binlog reader's process."""

from __future__ import annotations

from bridge.mq.formats import record_builder
from tests.golden.flat_messages import (
    BATCH_ID,
    BUILD_TS,
    MQ,
    GoldenRecord,
    canonical_entries,
    read_golden,
    render,
)
from tests.native_paths import compiled_module, records_rendered


def test_the_golden_file_covers_every_kind_of_message() -> None:
    golden = read_golden()
    texts = [record.value.decode() for record in golden]
    assert len(golden) == 8
    for needle in ('"type":"INSERT"', '"type":"UPDATE"', '"type":"DELETE"', '"isDdl":true'):
        assert any(needle in text for text in texts), needle
    assert render(golden) == render(read_golden())  # the file reads back as it was written


def test_the_pure_python_encoder_writes_the_golden_records() -> None:
    records = record_builder(MQ, compiled=None).build(canonical_entries(), BATCH_ID, BUILD_TS)
    assert [GoldenRecord.of(r) for r in records] == read_golden()


def test_the_compiled_encoder_writes_the_golden_records() -> None:
    builder = record_builder(MQ, compiled=compiled_module())
    records = builder.build(canonical_entries(), BATCH_ID, BUILD_TS)
    assert [GoldenRecord.of(r) for r in records] == read_golden()


def test_rows_rendered_by_the_reader_process_give_the_golden_records() -> None:
    records, rendered = records_rendered(canonical_entries(), MQ, batch_id=BATCH_ID, ts=BUILD_TS)
    assert rendered == 7  # every rows event; the DDL and the markers travel as they are
    assert [GoldenRecord.of(r) for r in records] == read_golden()


def test_a_writer_that_differs_by_one_value_is_caught() -> None:
    records = record_builder(MQ, compiled=None).build(canonical_entries(), BATCH_ID + 1, BUILD_TS)
    differing = [
        a
        for a, b in zip([GoldenRecord.of(r) for r in records], read_golden(), strict=True)
        if a != b
    ]
    assert len(differing) == len(records)  # every record carries the batch id
