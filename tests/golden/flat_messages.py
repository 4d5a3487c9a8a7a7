"""Canonical FlatMessage records: a fixed set of entries and, in ``flat_messages.golden``, the
exact records canal's ``canal-json`` format makes of them, written down once and reviewed by
hand. Every writer (the pure-Python encoder, the compiled one, rows rendered by the binlog
reader's process) is held to these bytes, and the Spark tests read them as their input, so a
change of the wire format shows up as a diff of this file, never silently in one writer.

After the records of ``MQ`` come those of each of ``VARIANTS``: a setting that changes the
wire (tombstones, column shaping, key columns, ...) applied to the entries it acts on, each
record marked with the variant's name.

Regenerate (then read the diff!): ``var/venv/bin/python -m tests.golden.flat_messages``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from bridge.config import MqConfig
from bridge.entry import Entry, EntryType, EventType, Header, RowChange
from bridge.mq.formats import record_builder
from bridge.mq.records import OutgoingRecord
from bridge.parse.binlog.rows import Plan, decoded_row
from bridge.sink import ColumnShaper, KeyColumns

GOLDEN_FILE = Path(__file__).with_name("flat_messages.golden")
BATCH_ID, BUILD_TS = 42, 1_764_000_000_123
# One destination: dynamic topic per schema, so routing shows in the golden records too.
MQ = MqConfig(topic="cdc", dynamic_topic="shop", partitions=1)


@dataclass(frozen=True)
class Variant:
    """Settings that change the wire: the destination's mq settings, the event types of the
    canonical entries they are shown on, and what the sink does to those entries first
    (column shaping, key columns)."""

    mq: MqConfig
    kinds: frozenset[EventType]
    sink: Callable[[Entry], Entry] | None = None


KEY_COLUMNS = MQ.model_copy(update={"key_columns": "shop.audit:what/at,shop.order_lines:qty"})


VARIANTS: dict[str, Variant] = {
    "tombstones": Variant(
        MQ.model_copy(update={"tombstones": True}), frozenset({EventType.DELETE})
    ),
    "columns": Variant(
        MQ,
        frozenset({EventType.INSERT, EventType.UPDATE}),
        ColumnShaper(
            mask="shop.orders:note",
            hash_columns=r"shop\.order.*:price/qty",
            truncate="shop.orders:doc=4,shop.audit:what=3",
            mask_length=5,
            salt="golden-salt",
        ).apply,
    ),
    "key_columns": Variant(
        KEY_COLUMNS,
        frozenset({EventType.INSERT, EventType.UPDATE}),
        KeyColumns(KEY_COLUMNS.key_columns).apply,
    ),
}

ORDERS = Plan.described(
    [
        (0, "id", True, "bigint(20) unsigned", -5),
        (1, "note", False, "varchar(40)", 12),
        (2, "price", False, "decimal(10,2)", 3),
        (3, "created", False, "datetime(3)", 93),
        (4, "doc", False, "json", 12),
        (5, "flags", False, "bit(3)", -7),
    ]
)
ORDER_TYPES = (-5, 12, 3, 93, 12, -7)
LINES = Plan.described(
    [
        (0, "order_id", True, "int(11)", 4),
        (1, "region", True, "char(2)", 1),
        (2, "qty", False, "int(11)", 4),
    ]
)
LINE_TYPES = (4, 1, 4)
AUDIT = Plan.described([(0, "at", False, "timestamp", 93), (1, "what", False, "text", 2005)])


def _header(table: str, event_type: EventType, offset: int, gtid: str = "") -> Header:
    return Header(
        "mysql-bin.000007", offset, 11, 1_764_000_000_000, "shop", table, event_type, gtid, 120
    )


def _rows(event_type: EventType, table: str, offset: int, *rows: object, gtid: str = "") -> Entry:
    change = RowChange(event_type, row_datas=tuple(rows))  # type: ignore[arg-type]
    return Entry(_header(table, event_type, offset, gtid), EntryType.ROWDATA, change)


def canonical_entries() -> list[Entry]:
    """One batch covering what the format distinguishes: each DML kind, ``old`` with only the
    changed columns, NULLs, escapes and non-ASCII text, composite and null keys, several rows
    with one key or different keys, a table without a key, DDL, transaction markers."""
    begin = Entry(_header("", EventType.INSERT, 100), EntryType.TRANSACTIONBEGIN)
    first = ("1", 'say "hi"\\\n\té😀', "12.50", "2026-11-25 08:00:00.123", '{"a": [1, 2.5]}', "5")
    second = ("2", None, "0.00", "0000-00-00 00:00:00.000", None, "0")
    changed = ("1", "edited", "12.50", "2026-11-25 08:00:00.123", '{"a": []}', "5")
    entries = [
        begin,
        _rows(
            EventType.INSERT,
            "orders",
            200,
            decoded_row(None, (), (), ORDERS, first, ORDER_TYPES),
            gtid="3e11fa47-71ca-11e1-9e33-c80aa9429562:23",
        ),
        _rows(
            EventType.INSERT,
            "orders",
            400,
            decoded_row(None, (), (), ORDERS, second, ORDER_TYPES),
            decoded_row(
                None,
                (),
                (),
                ORDERS,
                ("3", "x", "1.00", "2026-01-01 00:00:00.000", "null", "7"),
                ORDER_TYPES,
            ),
        ),
        _rows(
            EventType.UPDATE,
            "orders",
            600,
            decoded_row(ORDERS, first, ORDER_TYPES, ORDERS, changed, ORDER_TYPES),
        ),
        _rows(
            EventType.DELETE, "orders", 800, decoded_row(ORDERS, second, ORDER_TYPES, None, (), ())
        ),
        _rows(
            EventType.UPDATE,
            "order_lines",
            1000,
            decoded_row(LINES, ("1", "eu", "2"), LINE_TYPES, LINES, ("1", "eu", "3"), LINE_TYPES),
            decoded_row(LINES, ("1", "eu", "5"), LINE_TYPES, LINES, ("1", "eu", "6"), LINE_TYPES),
        ),
        _rows(
            EventType.INSERT,
            "order_lines",
            1200,
            decoded_row(None, (), (), LINES, ("2", None, "1"), LINE_TYPES),
        ),
        _rows(
            EventType.INSERT,
            "audit",
            1400,
            decoded_row(None, (), (), AUDIT, ("2026-11-25 08:00:01", "ünïcödé"), (93, 2005)),
        ),
        Entry(
            _header("orders", EventType.ALTER, 1600),
            EntryType.ROWDATA,
            RowChange(
                EventType.ALTER,
                is_ddl=True,
                sql="ALTER TABLE orders ADD COLUMN x INT",
                ddl_schema_name="shop",
            ),
        ),
        Entry(_header("", EventType.INSERT, 1800), EntryType.TRANSACTIONEND, transaction_id="991"),
    ]
    return entries


def variant_entries(name: str) -> list[Entry]:
    """The canonical entries a variant is shown on (rows events of its event types), shaped
    as its sink shapes them."""
    variant = VARIANTS[name]
    shape = variant.sink or (lambda entry: entry)
    return [
        shape(entry)
        for entry in canonical_entries()
        if entry.row_change is not None and entry.row_change.event_type in variant.kinds
    ]


@dataclass(frozen=True)
class GoldenRecord:
    """One record as the golden file holds it: where it goes, then its value, exactly (None:
    a null value, a tombstone); ``variant`` names the setting it shows ('' for ``MQ``)."""

    topic: str
    partition: int
    key: str
    headers: list[list[str]]
    value: bytes | None
    variant: str = ""

    @classmethod
    def of(cls, record: OutgoingRecord, variant: str = "") -> GoldenRecord:
        headers = [[name, value.decode()] for name, value in record.headers]
        key = record.key.decode()
        return cls(record.topic, record.partition, key, headers, record.value, variant)


def render(records: list[GoldenRecord]) -> str:
    """The golden file's text: per record, a line of routing JSON and a line of value bytes
    (empty for a null value, which the routing line then marks ``"value": null``)."""
    lines = []
    for record in records:
        where: dict[str, object] = {
            "topic": record.topic,
            "partition": record.partition,
            "key": record.key,
            "headers": record.headers,
        }
        if record.variant:
            where["variant"] = record.variant
        if record.value is None:
            where["value"] = None
        value = b"" if record.value is None else record.value
        lines += [orjson.dumps(where).decode(), value.decode()]
    return "\n".join(lines) + "\n"


def read_golden() -> list[GoldenRecord]:
    # Split on newlines only: values hold U+2028 and other characters splitlines() cuts at.
    lines = GOLDEN_FILE.read_text().split("\n")[:-1]
    records = []
    for where_line, value_line in zip(lines[::2], lines[1::2], strict=True):
        where = orjson.loads(where_line)
        records.append(
            GoldenRecord(
                where["topic"],
                where["partition"],
                where["key"],
                where["headers"],
                None if "value" in where else value_line.encode(),
                where.get("variant", ""),
            )
        )
    return records


def golden_records() -> list[GoldenRecord]:
    """What the golden file holds, as the pure-Python encoder writes it."""
    records = record_builder(MQ, compiled=None).build(canonical_entries(), BATCH_ID, BUILD_TS)
    golden = [GoldenRecord.of(r) for r in records]
    for name, variant in VARIANTS.items():
        builder = record_builder(variant.mq, compiled=None)
        built = builder.build(variant_entries(name), BATCH_ID, BUILD_TS)
        golden += [GoldenRecord.of(r, name) for r in built]
    return golden


def main() -> None:
    golden = golden_records()
    GOLDEN_FILE.write_text(render(golden))
    print(f"wrote {len(golden)} records to {GOLDEN_FILE}")


if __name__ == "__main__":
    main()
