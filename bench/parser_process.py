"""The parser alone, in this process and as a child process, on the same binlog.

    var/venv/bin/python -m bench.parser_process --workload a --scale 0.5

Loads a workload, then reads it to the end twice: with ``BinlogParser`` in this process, and
with ``ParserProcess`` (a child process reading and decoding, this process rebuilding the
entries from ``marshal`` data). Prints rows/s and the CPU microseconds per row of each
process, so the cost of the child's encoding and the parent's rebuilding can be read off.
"""

from __future__ import annotations

import argparse
import resource
import time

from bench.pipeline import source
from bench.workloads import WORKLOADS, load_fresh
from bridge.collector import tune_garbage_collector
from bridge.parse.child import ParserProcess
from bridge.parse.parser import BinlogParser, EntryReader
from bridge.position import EntryPosition


def read_all(reader: EntryReader, schema: str, start: EntryPosition, expected: int) -> str:
    entries = reader.entries(start)
    next(entries)  # connected (and, for the child, started)
    children_before = _children_cpu()
    began, cpu_began = time.monotonic(), time.process_time()
    rows = 0
    while rows < expected:
        entry = next(entries)
        if entry.header.schema_name == schema and entry.row_change is not None:
            rows += len(entry.row_change.row_datas)
    wall, cpu = time.monotonic() - began, time.process_time() - cpu_began
    reader.stop()
    for _ in entries:  # ends once stopped; the child is reaped, its CPU counted
        pass
    child = _children_cpu() - children_before
    line = (
        f"{type(reader).__name__}: {rows / wall:,.0f} rows/s, this process {cpu / rows * 1e6:.1f}"
    )
    if child:
        line += f" us/row, child {child / rows * 1e6:.1f}"
    return line + " us CPU/row"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--workload", default="a", choices=sorted(WORKLOADS))
    args.add_argument("--scale", type=float, default=0.5)
    opts = args.parse_args()
    workload = WORKLOADS[opts.workload]
    schema = f"bench_pp{opts.workload}"
    (journal, position), _ = load_fresh(workload, schema, opts.scale)
    tune_garbage_collector()  # as canal-bridge run does (the child does the same)
    start = EntryPosition(journal_name=journal, position=position)
    expected = workload.row_changes(opts.scale)
    print(f"{opts.workload} x{opts.scale}: {expected} row changes")
    for reader in (BinlogParser(source()), ParserProcess(source())):
        print(read_all(reader, schema, start, expected), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
