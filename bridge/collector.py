"""Garbage collector settings for the bridge's long-running processes."""

from __future__ import annotations

import gc

# The store holds thousands of entries, each a small tree of objects: with the default young
# generation threshold (700 allocations) the collector's passes over them cost about a third
# of the CPU (docs/benchmarks.md). The pipeline creates few reference cycles, so collecting
# rarely costs little memory.
GC_THRESHOLDS = (100_000, 50, 100)


def tune_garbage_collector() -> None:
    """Collect rarely, and keep start-up objects (modules, config) out of every pass."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
