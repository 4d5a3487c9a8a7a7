"""Result medians, the ratio columns and the --systems parsing."""

from __future__ import annotations

import argparse

import pytest

from bench.compare.cli import one_line, parse_systems
from bench.compare.results import Round, Summary, cannot_run, summarize, table
from bench.compare.tally import Tally, debezium_rows, flat_message_rows


def test_summary_takes_medians_per_row() -> None:
    rounds = [
        Round(rows=1000, span_s=span, cpu_s=cpu, stream_cpu_s=cpu / 2, peak_rss_mb=rss)
        for span, cpu, rss in [(1.0, 4.0, 100.0), (2.0, 2.0, 300.0), (0.5, 3.0, 200.0)]
    ]

    summary = summarize("x", rounds)

    assert summary.rows_per_s == 1000  # the medians of 1000, 500 and 2000
    assert summary.cpu_per_m == 3000  # 3 s for 1000 rows
    assert summary.stream_cpu_per_m == 1500
    assert summary.peak_rss_mb == 200


def test_ratio_columns_are_the_bridge_over_each_system() -> None:
    bridge = Summary("canal-bridge", 10, 40_000.0, 10.0, 8.0, 100.0)
    other = Summary("canal 1.1.7", 10, 10_000.0, 50.0, 40.0, 400.0)

    lines = table([bridge, other])

    cells = [cell.strip() for cell in lines[3].strip("|").split("|")]
    assert cells[0] == "canal 1.1.7"
    assert cells[5:] == ["4.00", "0.20", "0.25"]
    assert [c.strip() for c in lines[2].strip("|").split("|")][5:] == ["1.00", "1.00", "1.00"]


def test_without_the_bridge_the_ratio_columns_are_empty() -> None:
    lines = table([Summary("canal 1.1.7", 10, 10_000.0, 50.0, 40.0, 400.0)])
    assert lines[2].endswith("| - | - | - |")


def test_systems_are_put_in_run_order_and_bad_names_named() -> None:
    assert parse_systems("canal, bridge") == ["bridge", "canal"]
    with pytest.raises(argparse.ArgumentTypeError, match="'flink'"):
        parse_systems("bridge,flink")


def test_rows_per_record_by_format() -> None:
    assert flat_message_rows(b'{"type":"INSERT","data":[{"id":"1"},{"id":"2"}]}') == 2
    assert flat_message_rows(b'{"type":"QUERY","isDdl":true,"data":null}') == 0
    assert debezium_rows(b'{"op":"d","before":{"id":1},"after":null}') == 1
    assert debezium_rows(b'{"op":"r","after":{"id":1}}') == 0  # a snapshot read
    assert debezium_rows(None) == 0  # the tombstone after a delete


def test_the_span_is_first_to_last_append_of_records_with_rows() -> None:
    tally = Tally()
    for append_ms, rows in [(1000, 0), (1500, 2), (1700, 1), (2500, 3), (9000, 0)]:
        tally.add(append_ms, rows)
    assert (tally.rows, tally.records, tally.span_s) == (6, 5, 1.0)


def test_a_system_that_cannot_run_gets_its_reason_in_one_cell_instead_of_figures() -> None:
    bridge = Summary("canal-bridge", 10, 40_000.0, 10.0, 8.0, 100.0)
    why = one_line("Producer failure:\n  NumberFormatException | at GtidSet")

    lines = table([bridge, cannot_run("Debezium Server 3.0", why)])

    assert lines[-1] == (
        "| Debezium Server 3.0 | cannot run: Producer failure: NumberFormatException / at "
        "GtidSet | - | - | - | - | - | - |"
    )
    assert len(one_line("x " * 500)) == 240
