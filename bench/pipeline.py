"""The bridge's CPU path without Kafka or threads, for quick iterations on the hot path.

    var/venv/bin/python -m bench.pipeline --workload a --scale 0.2 [--profile out.prof]

Loads a workload (``bench.workloads``), then in this process: the parser reads it from the
binlog into Entries (stage 1), and ``RecordBuilder`` turns batches of 1,000 entries into
Kafka records (stage 2). Prints rows/s and CPU microseconds per row of each stage.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time

from bench.source import SourceServer, source_server
from bench.workloads import WORKLOADS, load_fresh
from bridge.config import MqConfig, SourceConfig
from bridge.entry import Entry
from bridge.mq.formats import record_builder
from bridge.parse.parser import BinlogParser
from bridge.position import EntryPosition


def source(server: SourceServer | None = None) -> SourceConfig:
    """A reader's configuration for ``server`` (the local MariaDB by default)."""
    server = server or source_server()
    return SourceConfig(
        address=f"{server.host}:{server.port}",
        username=server.user,
        password=server.password,
        slave_id=50000 + os.getpid() % 10000,
    )


def run(schema: str, start: tuple[str, int], expected: int) -> tuple[float, float, int]:
    """Parse and build in batches of 1,000 entries (the store and worker's default), as the
    bridge does; returns the CPU seconds of each stage and the record count."""
    parser = BinlogParser(source())
    builder = record_builder(MqConfig(topic="bench"))
    entries = parser.entries(EntryPosition(journal_name=start[0], position=start[1]))
    next(entries)  # connect (and preflight) outside the timing
    parse_cpu = build_cpu = 0.0
    rows = records = 0
    batch: list[Entry] = []
    while rows < expected:
        began = time.process_time()
        while len(batch) < 1000 and rows < expected:
            entry = next(entries)
            if entry.header.schema_name == schema and entry.row_change is not None:
                rows += len(entry.row_change.row_datas)
            batch.append(entry)
        built = time.process_time()
        records += len(builder.build(batch, records, 0))
        batch = []
        parse_cpu += built - began
        build_cpu += time.process_time() - built
    parser.stop()
    return parse_cpu, build_cpu, records


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--workload", default="a", choices=sorted(WORKLOADS))
    args.add_argument("--scale", type=float, default=0.2)
    args.add_argument("--profile")
    opts = args.parse_args()
    workload = WORKLOADS[opts.workload]
    schema = f"bench_p{opts.workload}"
    start, _ = load_fresh(workload, schema, opts.scale)
    expected = workload.row_changes(opts.scale)
    profiler = cProfile.Profile() if opts.profile else None
    if profiler:
        profiler.enable()
    parse_cpu, build_cpu, records = run(schema, start, expected)
    if profiler:
        profiler.disable()
        profiler.dump_stats(opts.profile)
    print(
        f"{opts.workload} x{opts.scale}: {expected} rows, {records} records"
        f"\n  parse: {parse_cpu / expected * 1e6:.1f} us CPU/row"
        f"\n  build: {build_cpu / expected * 1e6:.1f} us CPU/row"
        f"\n  both:  {expected / (parse_cpu + build_cpu):,.0f} rows per CPU second"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
