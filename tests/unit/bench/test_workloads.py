"""The workloads' pure parts: MySQL-only workloads refused on MariaDB in one line (before any
service is touched), the realistic rows repeatable, the report's line beside (a)."""

from __future__ import annotations

import json
import random
import re

import pytest

from bench import realistic
from bench import run as bench_run
from bench.compare import cli as compare_cli
from bench.measure import SharedCpu
from bench.workloads import CORE, WORKLOADS, json_update, json_values, refusal, refusals


def test_mysql_only_workloads_are_refused_on_mariadb_with_the_fix() -> None:
    line = refusal(WORKLOADS["json-partial"], "mariadb")

    assert line is not None and "\n" not in line
    assert "json-partial" in line and "--source mysql" in line
    assert refusal(WORKLOADS["json-partial"], "mysql") is None
    assert refusals(["a", "a-compressed", "a-realistic", "json-partial"], "mariadb") == [
        refusal(WORKLOADS["a-compressed"], "mariadb"),
        refusal(WORKLOADS["json-partial"], "mariadb"),
    ]
    assert refusals([*CORE, "a-realistic"], "mariadb") == []


@pytest.mark.parametrize(
    "main",
    [bench_run.main, compare_cli.main],
    ids=["bench.run", "bench.compare"],
)
def test_the_commands_refuse_before_loading_anything(main: object) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--workload", "a-compressed", "--source", "mariadb"])  # type: ignore[operator]

    assert refused.value.code == refusal(WORKLOADS["a-compressed"], "mariadb")


def test_realistic_rows_repeat_with_the_seed_and_vary_within_a_run() -> None:
    first = [realistic.row_values(random.Random(realistic.SEED), i) for i in range(1, 4)]
    again = [realistic.row_values(random.Random(realistic.SEED), i) for i in range(1, 4)]
    rng = random.Random(realistic.SEED)

    assert first == again
    assert realistic.row_values(rng, 1) != realistic.row_values(rng, 1)


def test_realistic_text_stays_within_the_column_and_uses_every_script() -> None:
    rng = random.Random(1)
    texts = [realistic.text(rng) for _ in range(400)]

    assert max(map(len, texts)) <= 200
    assert min(map(len, texts)) == 0 or any(len(t) < 5 for t in texts)
    joined = "".join(texts)
    assert any(ord(c) < 0x80 for c in joined)
    assert any(0x4E00 <= ord(c) <= 0x9FFF for c in joined)
    assert any(ord(c) >= 0x1F300 for c in joined)


def _result(name: str, cpu_s: float) -> dict[str, object]:
    shared = SharedCpu(0.0, 0.0, 1.0)
    one = bench_run.Round(
        rows=1000,
        total_s=2.0,
        stream_s=1.0,
        cpu_s=2.5,
        stream_cpu_s=cpu_s,
        peak_rss_mb=100.0,
        binlog_floor_s=0.5,
        binlog_bytes=1000,
        replication_floor_s=0.0,
        replication_floor_cpu_s=0.0,
        shared=shared,
    )
    return {"workload": name, "rounds": [one]}


def test_a_variant_is_reported_beside_its_baseline_when_both_ran() -> None:
    lines = bench_run.beside_lines([_result("a", 0.01), _result("a-realistic", 0.02)])

    assert lines[1].startswith("a-realistic beside a: 20.0 against 10.0 CPU s / M rows (x2.00)")
    assert bench_run.beside_lines([_result("a-realistic", 0.02)]) == []


def test_every_json_partial_update_changes_its_row() -> None:
    """The server logs no row for an UPDATE that changes nothing, so a no-op among the
    workload's updates leaves the run waiting for a row that never comes."""
    docs = {}
    for i in range(1, 100_001):
        text = re.search(r"'(\{.*\})'", json_values(i))
        assert text is not None
        docs[i] = json.loads(text.group(1))
    unchanged = 0
    for k in range(200_000):
        doc = docs[(k * 7919) % 100_000 + 1]
        before = json.dumps(doc, sort_keys=True)
        update = json_update(k)
        if n := re.search(r"'\$\.n', (\d+)", update):
            doc["n"], doc["status"] = int(n.group(1)), "paid"
        else:
            zip_code = re.search(r"'(Z-\d+)'", update)
            assert zip_code is not None
            doc["address"]["zip"] = zip_code.group(1)
        unchanged += json.dumps(doc, sort_keys=True) == before
    assert unchanged == 0
