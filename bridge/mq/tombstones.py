"""``mq.tombstones: true``: after each DELETE record, a record with the same topic, partition
and key and a null value, so a compacted topic forgets the deleted key (Debezium's
``tombstones.on.delete``).

What gets one: a DELETE record on its table's topic whose key names a row
(``database.table:<key>``). A record keyed by its table alone (a table without a primary key,
unless ``mq.key_columns`` gives it one) gets none: under compaction it would erase every other
record keyed so. A dead-letter notice gets none either (its row stays on no topic).

A DELETE of several rows is written as one message per row, each followed by its tombstone,
so every deleted key gets its own (the message of several rows would be keyed by the table).
That needs the rows: ``ahead`` is declined, as ``mq.key_change: split`` does.

Why here, once: ``TombstoneWriter`` wraps the format's encoder in
``bridge.mq.formats.rows_encoder`` (inside the key-change split, so the DELETE half of a
key-changing UPDATE gets its tombstone too). It works on the records the encoder wrote, so
the pure-Python and the compiled FlatMessage encoders give the same tombstones, and in
exactly-once delivery a tombstone is in its DELETE's batch, hence its Kafka transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.entry import Entry, EntryType, EventType
from bridge.mq.records import (
    OutgoingRecord,
    Placement,
    RowsEncoder,
    RowsEncoderStep,
    rows_apart,
)
from bridge.mq.routing import record_key


class TombstoneWriter(RowsEncoderStep):
    """A destination's encoder with a tombstone after each DELETE record keyed by its row
    (it declines ``ahead``: a DELETE of several rows is written row by row)."""

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        change = entry.row_change
        encode = self.encoder.encode
        if (
            change is None
            or change.is_ddl
            or change.event_type is not EventType.DELETE
            or entry.entry_type is not EntryType.ROWDATA
        ):
            return encode(entry, batch_id, ts)
        header = entry.header
        database, table = header.schema_name, header.table_name
        topic = self.placement.topics.topic_for(database, table)
        table_key = record_key(database, table)
        records: list[OutgoingRecord] = []
        for row in rows_apart(entry):
            for record in encode(row, batch_id, ts):
                records.append(record)
                if record.topic == topic and record.key != table_key:
                    records.append(tombstone_of(record))
        return records


def tombstone_of(record: OutgoingRecord) -> OutgoingRecord:
    """The null-value record after ``record``: same topic, partition, key and headers."""
    return OutgoingRecord(record.topic, record.partition, record.key, None, record.headers)


def with_tombstones(enabled: bool, encoder: RowsEncoder, placement: Placement) -> RowsEncoder:
    """``encoder`` as ``mq.tombstones`` wants it: wrapped when enabled, else unchanged."""
    return TombstoneWriter(encoder, placement) if enabled else encoder
