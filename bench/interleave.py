"""Two or more versions of the bridge on the same binlog range, round after round, in steady
state: for before/after figures on a box whose speed moves between runs.

    var/venv/bin/python -m bench.interleave --workload d --scale 3 --rounds 5 \\
        --root /tmp/wt-old --root . [--source mysql]

Loads the workload once, then, ``--rounds`` times, runs ``canal-bridge run`` from each
``--root`` in turn (its ``bridge`` package; e.g. ``git worktree add /tmp/wt-old <commit>``)
from the workload's first position to a fresh topic, in ``bench.measure.round_order``'s
order (two roots: A B, B A, B A, A B, ...): on a box that slows down or speeds up through a
round, a fixed order favoured the same root every time (run first while the box slowed
round by round, from 106k to 76k rows/s, 7f7fe8c used less CPU per row than the next commit
in four rounds of five; run second, it used more or the same). Each run is
timed between 20 % and 90 % of its rows acked, which leaves out the start-up (the binlog
reader's process finishing its start, connecting, the first batch) that ``bench.run``'s
"from dump start" includes: rows per second, and CPU microseconds per row of the bridge and
its binlog reader process over that window. Prints every run and the medians per root.

The metrics endpoint is asked every 10 ms (``bench.run`` asks rarely), which costs the bridge
a little CPU, the same for every root. The figures are for comparing roots in one invocation,
not the record: ``bench.run`` stays the measure of record.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.measure import BridgeRun, create_topic, delete_topic, round_order, usage_of
from bench.source import SourceServer, add_source_argument, source_server
from bench.workloads import WORKLOADS, load_fresh, refusals

# The steady-state window: from this share of the rows acked to that one.
WINDOW = (0.2, 0.9)
POLL_S = 0.01


@dataclass(frozen=True)
class Steady:
    """One run's window: rows per second, and CPU microseconds per row (all its processes)."""

    rows_per_s: float
    cpu_us_per_row: float


def steady_run(  # noqa: PLR0917 (one run's settings)
    workdir: Path,
    schema: str,
    start: tuple[str, int],
    expected: int,
    root: Path,
    source: SourceServer,
) -> Steady:
    """One run of the bridge from ``root`` on ``source``, measured over ``WINDOW``."""
    topic = f"interleave-{uuid.uuid4().hex[:8]}"
    create_topic(topic)
    bridge = BridgeRun(workdir, schema, topic, start, root=root, source=source)
    marks: list[tuple[float, int, float]] = []  # (time, rows acked, CPU s) at each edge
    try:
        bridge.start_process()
        bridge.wait_for_log("reading")
        deadline = time.monotonic() + 600 + expected / 1000
        while len(marks) < len(WINDOW):
            bridge.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{root}: {expected} rows not acked in time")
            acked = bridge.rows_acked()
            if acked >= WINDOW[len(marks)] * expected:
                marks.append((time.monotonic(), acked, usage_of(bridge.pid).cpu_s))
                continue
            time.sleep(POLL_S)
    finally:
        bridge.stop()
        delete_topic(topic)
    (t0, rows0, cpu0), (t1, rows1, cpu1) = marks
    rows = rows1 - rows0
    return Steady(rows / (t1 - t0), (cpu1 - cpu0) / rows * 1e6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    parser.add_argument("--scale", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--root", type=Path, action="append", required=True, help="a bridge checkout (twice+)"
    )
    add_source_argument(parser)
    args = parser.parse_args(argv)
    if refused := refusals([args.workload], args.source):
        raise SystemExit("\n".join(refused))
    source = source_server(args.source)
    workload = WORKLOADS[args.workload]
    schema = f"bench_{args.workload.replace('-', '_')}"
    start, _ = load_fresh(workload, schema, args.scale, source)
    expected = workload.row_changes(args.scale)
    runs: dict[Path, list[Steady]] = {root: [] for root in args.root}
    with tempfile.TemporaryDirectory(prefix="interleave-") as tmp:
        for round_number in range(1, args.rounds + 1):
            for root in round_order(args.root, round_number):
                run = steady_run(Path(tmp), schema, start, expected, root, source)
                runs[root].append(run)
                print(
                    f"round {round_number} {root}: {run.rows_per_s:,.0f} rows/s, "
                    f"{run.cpu_us_per_row:.1f} CPU us per row",
                    flush=True,
                )
    for root, steady in runs.items():
        rate = statistics.median(run.rows_per_s for run in steady)
        cpu = statistics.median(run.cpu_us_per_row for run in steady)
        print(f"median {root}: {rate:,.0f} rows/s, {cpu:.1f} CPU us per row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
