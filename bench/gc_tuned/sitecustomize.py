"""Experiment only (``python -m bench.run --gc-tuned``): the bridge process with the garbage
collector's young generation threshold raised from 700 to 100,000 allocations, to measure
what collection costs while the store holds many entries. Not part of canal-bridge."""

import gc

gc.set_threshold(100_000, 50, 100)
