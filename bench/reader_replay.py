"""The binlog reader process's work per row, without the network: replayed binlog bytes.

    var/venv/bin/python -m bench.reader_replay --workload d --scale 1 --rounds 5 [--source mysql]

Loads a workload, reads its binlog range once from the source server (``--source``, MariaDB
by default) keeping each event's bytes as the framing hands them out, then replays those
bytes ``--rounds`` times through what the child process of ``parser_process`` runs:
``BinlogParser.flat_batches`` (table maps, GTIDs, rows events written as FlatMessage records
by the compiled path) and ``EntryEncoder`` batches of 1,024 entries, with the garbage
collector tuned as the child tunes it. Prints the CPU microseconds per row of the fastest and
the median round.

Without the socket, TLS and the other processes of a full run (``bench.run``), a round's
figure moves by a few percent at most, so a change of a tenth of a microsecond per row shows;
``bench.run`` remains the measure of record.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

from bench.pipeline import source
from bench.source import SourceServer, add_source_argument, source_server
from bench.workloads import WORKLOADS, load_fresh, refusals
from bridge.collector import tune_garbage_collector
from bridge.config import DEFAULT_MAX_RECORD_BYTES
from bridge.mq.flat_encoder import RENDER_HEADROOM
from bridge.mq.records import RECORD_OVERHEAD
from bridge.mq.rendering import EventRenderer, render_rows
from bridge.parse.binlog.framing import EventReader
from bridge.parse.child import full_frames
from bridge.parse.entry_codec import EntryEncoder, binlog_end
from bridge.parse.parser import BinlogParser
from bridge.position import EntryPosition

LIMIT = DEFAULT_MAX_RECORD_BYTES - RECORD_OVERHEAD - RENDER_HEADROOM  # as the encoder's ahead()


def read_range(
    start: EntryPosition,
    end: tuple[str, int],
    sent: Callable[[bytes], None] | None = None,
    server: SourceServer | None = None,
) -> float:
    """Reads from ``start`` to the event that ends at ``end`` as the child of a FlatMessage
    destination does (without the BEGINs: ``runner.build_instance``); its CPU s
    (from the first entry on: connecting and preflight are left out). ``sent`` is given each
    batch's data as the child would send it; ``server`` is where it reads (MariaDB by
    default)."""
    parser = BinlogParser(source(server), encode_event=EventRenderer(LIMIT), begins=False)
    encoder = EntryEncoder(functools.partial(render_rows, limit=LIMIT))
    send = sent or _ignore
    batch: list[Any] = []
    began = None
    for group in parser.flat_batches(start):
        if began is None:
            began = time.process_time()
        batch += group
        for frame in full_frames(batch):
            send(encoder.encode(frame))
        if binlog_end(group[-1]) >= end:
            break
    send(encoder.encode(batch))
    parser.stop()
    return time.process_time() - (began or 0.0)


def _ignore(_data: bytes) -> None:
    pass


def replaying(reads: list[list[bytes]]) -> Callable[[EventReader], list[bytes] | None]:
    """``EventReader.next_events`` serving the events of ``reads`` as they were read."""
    served = iter(reads)
    return lambda _reader: next(served)


@dataclass(frozen=True)
class Replay:
    """What a replay bench was asked (``--workload``, ``--scale``, ``--rounds``) and the
    workload it loaded: the binlog range and its row changes."""

    workload: str
    scale: float
    rounds: int
    start: EntryPosition
    end: tuple[str, int]
    rows: int
    server: SourceServer

    @classmethod
    def from_command_line(cls, schema_prefix: str) -> Replay:
        args = argparse.ArgumentParser()
        args.add_argument("--workload", default="d", choices=sorted(WORKLOADS))
        args.add_argument("--scale", type=float, default=1.0)
        args.add_argument("--rounds", type=int, default=5)
        add_source_argument(args)
        opts = args.parse_args()
        if refused := refusals([opts.workload], opts.source):
            raise SystemExit("\n".join(refused))
        server = source_server(opts.source)
        workload = WORKLOADS[opts.workload]
        schema = f"{schema_prefix}{opts.workload.replace('-', '_')}"
        (journal, position), end = load_fresh(workload, schema, opts.scale, server)
        start = EntryPosition(journal_name=journal, position=position)
        rows = workload.row_changes(opts.scale)
        return cls(opts.workload, opts.scale, opts.rounds, start, end, rows, server)

    def per_row(self, seconds: list[float]) -> str:
        """The fastest and the median of the rounds' ``seconds``, in us per row."""
        best, median = min(seconds) / self.rows * 1e6, statistics.median(seconds) / self.rows * 1e6
        return f"{best:.2f} us (fastest of {self.rounds}), {median:.2f} us (median)"


def main() -> int:
    replay = Replay.from_command_line("bench_rr")
    start, end = replay.start, replay.end
    reads: list[list[bytes]] = []
    read = EventReader.next_events

    def keep(reader: EventReader) -> list[bytes] | None:
        events = read(reader)
        if events is not None:
            reads.append(events)
        return events

    with mock.patch.object(EventReader, "next_events", keep):
        read_range(start, end, server=replay.server)
    tune_garbage_collector()  # as the child does
    seconds = []
    for _ in range(replay.rounds):
        with mock.patch.object(EventReader, "next_events", replaying(list(reads))):
            seconds.append(read_range(start, end, server=replay.server))
    print(
        f"{replay.workload} x{replay.scale}: {replay.rows:,} row changes, "
        f"{sum(len(events) for events in reads):,} events; "
        f"reader CPU per row {replay.per_row(seconds)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
