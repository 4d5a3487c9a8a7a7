"""MySQL's compressed transactions (``binlog_transaction_compression=ON``) through the real
parser: one transaction of 120,000 rows whose TRANSACTION_PAYLOAD (about 24 MB of random,
incompressible bytes) spans several 16 MiB protocol packets, every row arrives once."""

from __future__ import annotations

import pymysql
import pytest

from bridge.entry import EntryType, row_images
from bridge.parse.parser import BinlogParser
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import execute, master_position, source_config, stop_after

pytestmark = [
    pytest.mark.services,
    pytest.mark.only_on("mysql", reason="binlog_transaction_compression is MySQL's"),
]

Connection = pymysql.connections.Connection  # type: ignore[type-arg]
ROWS = 120_000
MAX_PACKET = 1 << 24


def test_a_compressed_transaction_larger_than_a_packet_gives_every_row(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    table = f"`{scratch_schema}`.big"
    execute(admin_connection, f"CREATE TABLE {table} (id INT PRIMARY KEY, pad VARBINARY(255))")
    start = master_position(admin_connection)
    execute(
        admin_connection,
        "SET SESSION binlog_transaction_compression = ON",
        f"SET SESSION cte_max_recursion_depth = {ROWS + 1}",
        "BEGIN",
        f"INSERT INTO {table} WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
        f"WHERE n < {ROWS}) SELECT n, RANDOM_BYTES(200) FROM s",
        "COMMIT",
    )
    end = master_position(admin_connection)
    assert end.journal_name == start.journal_name
    assert end.position is not None and start.position is not None
    assert end.position - start.position > MAX_PACKET, "the payload fits one packet"

    parser = BinlogParser(source_config(mysql), heartbeat_period_s=1)
    ids: list[str] = []
    kinds: list[EntryType] = []
    with stop_after(parser, 120):
        for entry in parser.entries(start):
            header = entry.header
            if entry.row_change is not None and header.table_name == "big":
                ids += [row.after[0].value for row in row_images(entry.row_change)]
                kinds.append(entry.entry_type)
            elif entry.entry_type in (EntryType.TRANSACTIONBEGIN, EntryType.TRANSACTIONEND):
                kinds.append(entry.entry_type)
            if (
                entry.entry_type is EntryType.TRANSACTIONEND
                and header.logfile_offset + header.event_length >= end.position
            ):
                break
    assert len(ids) == ROWS and set(ids) == {str(n) for n in range(1, ROWS + 1)}
    assert kinds[0] is EntryType.TRANSACTIONBEGIN and kinds[-1] is EntryType.TRANSACTIONEND
