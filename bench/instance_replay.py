"""The instance's process's work per row, without Kafka or threads: replayed reader batches.

    var/venv/bin/python -m bench.instance_replay --workload d --scale 1 --rounds 5 [--source mysql]

Loads a workload and reads its binlog range once as the binlog reader's process does
(``bench.reader_replay.read_range``: rows events written as FlatMessage records ahead),
keeping the data of each batch the child would send. Then, ``--rounds`` times, runs those
batches through what the instance's process does with them, in one thread: rebuilding the
entries (``EntryDecoder``), the transaction buffer, the sink and the store's put, the MQ
worker's get of batches of ``batch_size`` entries, their records (``RecordBuilder``) and the
ack. Prints the CPU microseconds per row of the fastest and the median round.

Kafka's produce and delivery, the threads' hand-overs and the pipe are left out: what is
measured is the Python work per entry that ``bench.run`` cannot tell apart from them, to a
few percent from round to round.
"""

from __future__ import annotations

import time

from bench.reader_replay import Replay, read_range
from bridge.collector import tune_garbage_collector
from bridge.config import DEFAULT_MAX_RECORD_BYTES, MqConfig
from bridge.config.models import DestinationConfig
from bridge.mq.formats import record_builder
from bridge.parse.entry_codec import EntryDecoder
from bridge.position import LogIdentity
from bridge.sink.filters import TableFilter
from bridge.sink.sink import EntrySink
from bridge.sink.transaction_buffer import TransactionBuffer
from bridge.store.memory import MemoryEventStore, MemoryStoreConfig

# The destination defaults the instance runs with.
_DEFAULTS = DestinationConfig.model_fields
BATCH_SIZE: int = _DEFAULTS["batch_size"].default
TRANSACTION_SIZE: int = _DEFAULTS["transaction_size"].default


def replay(frames: list[bytes]) -> tuple[float, int]:
    """The instance's work on ``frames``: CPU seconds and records built."""
    builder = record_builder(MqConfig(topic="bench"), DEFAULT_MAX_RECORD_BYTES)
    ahead = builder.encoder.ahead()
    assert ahead is not None, "the FlatMessage encoder renders ahead"
    decoder = EntryDecoder(ahead.revive)
    store = MemoryEventStore(MemoryStoreConfig())
    store.start()
    sink = EntrySink(store, TableFilter(r".*\..*", ""), None)
    sink.start()
    identity = LogIdentity("127.0.0.1:3306", 1)
    buffer = TransactionBuffer(lambda entries: sink.sink(entries, identity), TRANSACTION_SIZE)
    records = batch_id = 0
    began = time.process_time()
    for frame in frames:
        buffer.add_batch(decoder.decode(frame))
        while events := store.get(BATCH_SIZE):
            batch_id += 1
            records += len(builder.build(events.entries, batch_id, 0))
            store.ack(events.last_sequence)
    return time.process_time() - began, records


def main() -> int:
    asked = Replay.from_command_line("bench_ir")
    frames: list[bytes] = []
    read_range(asked.start, asked.end, frames.append, asked.server)
    tune_garbage_collector()  # as canal-bridge run does
    seconds = []
    for _ in range(asked.rounds):
        spent, records = replay(frames)
        seconds.append(spent)
    print(
        f"{asked.workload} x{asked.scale}: {asked.rows:,} row changes, {len(frames):,} batches, "
        f"{records:,} records; instance CPU per row {asked.per_row(seconds)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
