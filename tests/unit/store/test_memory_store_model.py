"""MemoryEventStore against a model that takes a batch one entry at a time, the rules as
canal states them: random puts, gets, acks and rollbacks, both batch modes, DDL isolation,
around the ring many times. The store finds a batch's end by bisecting its put totals and
acks by reading them; the model adds up every entry."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from bridge.entry import Entry
from bridge.position import LogIdentity, is_ack_point
from bridge.store import BatchMode, MemoryEventStore, MemoryStoreConfig
from tests.unit.store.factories import IDENTITY, ddl, end, row

BUFFER = 16


# Puts alternate between two sources at random: each position the store reports must carry
# its own entry's.
SOURCES = (IDENTITY, LogIdentity("10.0.0.2:3306", 99))


@dataclass
class Model:
    config: MemoryStoreConfig
    held: list[Entry] = field(default_factory=list)  # put, not acked, oldest first
    sources: list[LogIdentity] = field(default_factory=list)  # each held entry's
    got: int = 0  # how many of ``held`` a get handed out

    def batch(self, batch_size: int) -> list[Entry]:
        limit = batch_size * self.config.mem_unit
        by_items = self.config.batch_mode is BatchMode.ITEMSIZE
        taken: list[Entry] = []
        mem = 0
        for entry in self.held[self.got :]:
            if by_items and (len(taken) >= batch_size or mem >= limit):
                break
            if not by_items and mem > limit:
                break
            if self.config.ddl_isolation and entry.is_ddl:
                if not taken:
                    taken.append(entry)
                break
            taken.append(entry)
            mem += entry.mem_size
        self.got += len(taken)
        return taken


def _entry(rng: random.Random, offset: int) -> Entry:
    size = rng.choice((1, 50, 100, 700, 3000))
    kind = rng.random()
    if kind < 0.1:
        return ddl(offset, size=size)
    if kind < 0.3:
        return end(offset, size=size)
    return row(offset, size=size)


@pytest.mark.parametrize("mode", [BatchMode.ITEMSIZE, BatchMode.MEMSIZE])
@pytest.mark.parametrize("ddl_isolation", [False, True])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("buffer", [BUFFER, 512])  # 512: the ring grows (from 256 slots)
def test_batches_and_accounting_match_the_model(
    mode: BatchMode, ddl_isolation: bool, seed: int, buffer: int
) -> None:
    rng = random.Random(seed)
    config = MemoryStoreConfig(buffer, mem_unit=100, batch_mode=mode, ddl_isolation=ddl_isolation)
    store, model = MemoryEventStore(config), Model(config)
    store.start()
    offset = 4
    for _ in range(2000):
        action = rng.random()
        room = buffer - len(model.held)
        if action < 0.4 and room:
            entries = [_entry(rng, offset + i * 5000) for i in range(rng.randint(1, room))]
            offset += len(entries) * 5000
            # MEMSIZE also needs the held bytes under capacity before the put (canal's check).
            fits = mode is BatchMode.ITEMSIZE or store.used_memory < buffer * config.mem_unit
            source = rng.choice(SOURCES)
            assert store.put(source, entries, timeout=0) is fits
            if fits:
                model.held += entries
                model.sources += [source] * len(entries)
        elif action < 0.75:
            batch_size = rng.randint(1, 12)
            first = model.got
            got = store.get(batch_size)  # no wait: what is there
            taken = model.batch(batch_size)
            assert list(got.entries) == taken
            if taken:
                sources = model.sources[first : first + len(taken)]
                assert got.range is not None
                assert (got.range.start.identity, got.range.end.identity) == (
                    sources[0],
                    sources[-1],
                )
                acks = [i for i, entry in enumerate(taken) if is_ack_point(entry)]
                assert (got.range.ack is None) == (not acks)
                if got.range.ack is not None:
                    assert got.range.ack.identity == sources[acks[-1]]
        elif action < 0.95 and model.got:
            count = rng.randint(1, model.got)
            store.ack(store.ack_sequence + count)
            del model.held[:count], model.sources[:count]
            model.got -= count
        else:
            store.rollback()
            model.got = 0
        assert store.used_memory == sum(e.mem_size for e in model.held)
        assert store.unacked_items == len(model.held)
        assert store.get_sequence - store.ack_sequence == model.got
    store.stop()
