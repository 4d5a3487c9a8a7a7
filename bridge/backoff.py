"""One back-off for every retry loop: exponential with jitter, capped.

Used by the MQ worker between failed sends and by the binlog parser between lost connections,
so that a source or broker outage costs a handful of attempts a minute, not a busy loop, and
many destinations retrying at once spread out instead of arriving together.
"""

from __future__ import annotations

import random


class Backoff:
    """``initial * 2**n`` capped at ``maximum``, each delay drawn in ``[ceiling / 2, ceiling]``;
    ``reset()`` after a success."""

    def __init__(self, initial_s: float, maximum_s: float, rng: random.Random | None = None):
        self.initial_s = initial_s
        self.maximum_s = maximum_s
        self.failures = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        ceiling = min(self.maximum_s, self.initial_s * 2 ** min(self.failures, 32))
        self.failures += 1
        return self._rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.failures = 0
