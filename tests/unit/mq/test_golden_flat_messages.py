"""Every FlatMessage writer gives exactly the golden records (``tests/golden``): the
pure-Python encoder, the compiled one, and rows rendered by the binlog reader's process."""

from __future__ import annotations

import pytest

from bridge.mq.formats import record_builder
from tests.golden.flat_messages import (
    BATCH_ID,
    BUILD_TS,
    MQ,
    VARIANTS,
    GoldenRecord,
    canonical_entries,
    golden_records,
    read_golden,
    render,
    variant_entries,
)
from tests.native_paths import compiled_module, records_rendered


def golden(variant: str = "") -> list[GoldenRecord]:
    """The golden file's records of ``MQ`` ('') or of one of ``VARIANTS``."""
    return [record for record in read_golden() if record.variant == variant]


def test_the_golden_file_covers_every_kind_of_message() -> None:
    base = golden()
    texts = [record.value.decode() for record in base if record.value is not None]
    assert len(base) == len(texts) == 8
    for needle in ('"type":"INSERT"', '"type":"UPDATE"', '"type":"DELETE"', '"isDdl":true'):
        assert any(needle in text for text in texts), needle
    assert render(read_golden()) == render(golden_records())  # written as the encoder writes
    assert {record.variant for record in read_golden()} == {"", *VARIANTS}


def test_the_pure_python_encoder_writes_the_golden_records() -> None:
    records = record_builder(MQ, compiled=None).build(canonical_entries(), BATCH_ID, BUILD_TS)
    assert [GoldenRecord.of(r) for r in records] == golden()


def test_the_compiled_encoder_writes_the_golden_records() -> None:
    builder = record_builder(MQ, compiled=compiled_module())
    records = builder.build(canonical_entries(), BATCH_ID, BUILD_TS)
    assert [GoldenRecord.of(r) for r in records] == golden()


def test_rows_rendered_by_the_reader_process_give_the_golden_records() -> None:
    records, rendered = records_rendered(canonical_entries(), MQ, batch_id=BATCH_ID, ts=BUILD_TS)
    assert rendered == 7  # every rows event; the DDL and the markers travel as they are
    assert [GoldenRecord.of(r) for r in records] == golden()


def test_a_writer_that_differs_by_one_value_is_caught() -> None:
    records = record_builder(MQ, compiled=None).build(canonical_entries(), BATCH_ID + 1, BUILD_TS)
    differing = [
        a for a, b in zip([GoldenRecord.of(r) for r in records], golden(), strict=True) if a != b
    ]
    assert len(differing) == len(records)  # every record carries the batch id


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_writer_writes_the_golden_records_of_a_variant(variant: str) -> None:
    mq = VARIANTS[variant].mq
    expected = golden(variant)
    assert expected, variant
    for compiled in (None, compiled_module()):
        records = record_builder(mq, compiled=compiled).build(
            variant_entries(variant), BATCH_ID, BUILD_TS
        )
        assert [GoldenRecord.of(r, variant) for r in records] == expected


def test_the_tombstones_variant_holds_a_null_value_after_its_delete() -> None:
    (delete, tombstone) = golden("tombstones")
    assert delete.value is not None and b'"type":"DELETE"' in delete.value
    assert tombstone.value is None
    assert (tombstone.topic, tombstone.partition, tombstone.key) == (
        delete.topic,
        delete.partition,
        delete.key,
    )
