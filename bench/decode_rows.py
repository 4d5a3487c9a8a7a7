"""Micro-benchmark of the row decoder: 200k INSERT rows of a realistic 6-column table.

    python bench/decode_rows.py [rows]

Columns: BIGINT pk, INT, VARCHAR(64) utf8mb4, DECIMAL(12,2), DATETIME(6), JSON as LONGTEXT
(MariaDB). Rows are decoded in events of 100 rows, as a bulk insert would be logged.
"""

from __future__ import annotations

import struct
import sys
import time
from datetime import UTC

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.rows import RowDecoder
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta

TABLE = TableMeta(
    "bench",
    "orders",
    (
        ColumnMeta(0, "id", T.LONGLONG, "bigint(20)", is_key=True, nullable=False),
        ColumnMeta(1, "qty", T.LONG, "int(11)"),
        ColumnMeta(2, "note", T.VARCHAR, "varchar(64)", charset="utf-8", max_length=256),
        ColumnMeta(3, "price", T.NEWDECIMAL, "decimal(12,2)", precision=12, scale=2),
        ColumnMeta(4, "at", T.DATETIME2, "datetime(6)", fsp=6),
        ColumnMeta(5, "doc", T.BLOB, "longtext", charset="utf-8", max_length=4, is_text=True),
    ),
)
ROWS_PER_EVENT = 100


def _row(i: int) -> bytes:
    note = f"order note {i} ✓".encode()
    doc = f'{{"sku": "A-{i}", "tags": ["x", "y"], "n": {i % 97}}}'.encode()
    cents = 1000 + i % 100000
    price = bytes([0x80 | (cents // 100 // 10**9 % 10)]) + struct.pack(">I", cents // 100 % 10**9)
    price += bytes([cents % 100])
    intpart = ((2024 * 13 + 5) << 22) | (17 << 17) | (12 << 12) | (30 << 6) | (i % 60)
    at = (intpart + 0x8000000000).to_bytes(5, "big") + (i % 1000000).to_bytes(3, "big")
    return (
        b"\x00"
        + struct.pack("<qi", i, i * 3)
        + len(note).to_bytes(2, "little")
        + note
        + price
        + at
        + struct.pack("<I", len(doc))
        + doc
    )


def main(total: int = 200_000) -> None:
    bitmap = b"\x3f"
    events = [
        bitmap + b"".join(_row(start + j) for j in range(ROWS_PER_EVENT))
        for start in range(0, total, ROWS_PER_EVENT)
    ]
    decoder = RowDecoder(TABLE, UTC)
    decoded = 0
    started = time.perf_counter()
    for body in events:
        decoded += len(decoder.decode("insert", body))
    elapsed = time.perf_counter() - started
    sample = decoder.decode("insert", events[-1])[-1]
    print({c.name: c.value for c in sample.after})
    print(f"{decoded} rows in {elapsed:.2f}s: {decoded / elapsed:,.0f} rows/s (one core)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
