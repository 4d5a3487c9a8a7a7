"""Where a profiled bench run's CPU went, per process, by pipeline stage.

    var/venv/bin/python -m bench.run --workload d --repeat 1 --profile /tmp/prof
    var/venv/bin/python -m bench.profile_shares /tmp/prof/d.txt

Reads py-spy's raw stacks (``bench.run --profile``: the bridge process, its threads and its
child processes, sampled with ``--gil``: only the thread holding the GIL, so a thread waiting
for it does not count as busy; ``BENCH_PY_SPY_FLAGS=--idle`` samples every thread instead)
and counts, per process, the samples in which a thread was busy: not waiting in a lock,
queue, pipe, socket read or Kafka flush (a flush waits for the broker with the GIL released).
Each busy sample goes to the stage named by its innermost frame that names one. A flame graph
shows the same stacks one at a time; this is the table docs/benchmarks.md and bench/results quote.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# Leaf frames where a thread waits rather than works.
WAITING = re.compile(
    r"Condition\.wait|Event\.wait|_wait_for_tstate_lock|_read_exactly|select|poll|"
    r"SSLSocket\.read|read1|recv|sleep|Queue\.get|concurrent/futures/thread\.py|"
    # the confirm's own line is its flush, waiting for Kafka
    r"KafkaProducer\._confirm \("
)
# Stages, innermost first wins; a frame matching none leaves the sample to the next one out.
STAGES = (
    ("Kafka produce calls", r"KafkaProducer"),
    ("compiled rendering", r"_compiled_parts|render_rows|EventRenderer|flat_read"),
    ("pipe writes", r"write_frame"),
    ("wire encoding", r"EntryEncoder"),
    ("wire decoding (entries rebuilt)", r"EntryDecoder"),
    ("rows decoded in Python", r"RowDecoder|decoded_row"),
    ("event conversion (entries, headers)", r"EventConverter"),
    ("framing", r"EventReader|RawEvent"),
    ("start-position search", r"StartPositionFinder"),
    ("record build", r"RecordBuilder|FlatMessageEncoder"),
    ("sink", r"EntrySink"),
    ("store", r"EventStore"),
    ("transaction buffer", r"TransactionBuffer"),
    ("start-up imports", r"_find_and_load"),
)


def stage_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for stage, pattern in STAGES:
            if re.search(pattern, frame):
                return stage
    return "other"


def busy_samples(path: Path) -> dict[str, Counter[str]]:
    """Busy samples per process ("bridge", or "child" for a child process) and stage."""
    shares: dict[str, Counter[str]] = {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not stack or WAITING.search(frames[-1]):
            continue
        process = "child" if len(frames) > 1 and frames[1].startswith("process ") else "bridge"
        shares.setdefault(process, Counter())[stage_of(frames)] += int(count)
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stacks", type=Path, help="py-spy raw output (bench.run --profile)")
    args = parser.parse_args()
    print("| process | busy samples | stages (share of the process's busy samples) |")
    print("|---|---|---|")
    for process, stages in sorted(busy_samples(args.stacks).items()):
        total = sum(stages.values())
        parts = ", ".join(f"{stage} {n / total:.0%}" for stage, n in stages.most_common())
        print(f"| {process} | {total} | {parts} |")


if __name__ == "__main__":
    main()
