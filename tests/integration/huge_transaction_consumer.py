"""Child process of test_huge_transaction: run one instance with a small store, consume and ack
until a transaction end has passed ``rows`` rows, then print the row count and peak RSS."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bridge.config import DestinationConfig
from bridge.entry import EntryType
from bridge.instance import EmbeddedServer, Instance, mq_client
from bridge.meta import MemoryMetaManager


def main() -> None:
    destination = DestinationConfig.model_validate_json(sys.argv[1])
    expected_rows = int(sys.argv[2])
    server = EmbeddedServer()
    server.start(Instance(destination, MemoryMetaManager()))
    client = mq_client(destination.name)
    server.subscribe(client)
    rows = 0
    entries_per_batch = 0
    try:
        while True:
            message = server.get_without_ack(client, destination.batch_size, 1.0)
            entries_per_batch = max(entries_per_batch, len(message.entries))
            done = False
            for entry in message.entries:
                if entry.row_change is not None and not entry.is_ddl:
                    rows += len(entry.row_change.row_datas)
                done |= entry.entry_type is EntryType.TRANSACTIONEND and rows >= expected_rows
            if not message.empty:
                server.ack(client, message.batch_id)
            if done:
                break
    finally:
        server.stop_all()
    print(
        json.dumps(
            {"rows": rows, "peak_rss_mb": peak_rss_kb() / 1024, "max_batch": entries_per_batch}
        )
    )


def peak_rss_kb() -> int:
    """This process's own peak (VmHWM). Not ``ru_maxrss``: Linux carries that across exec,
    so it would report the parent's size at fork (pytest's, near 1 GB late in a full run)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    main()
