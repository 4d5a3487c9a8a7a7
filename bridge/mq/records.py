"""From a batch of Entries to the Kafka records to produce: pure, no client involved.

The MQ worker calls ``RecordBuilder.build`` for each batch and hands the records to the
producer. What a record holds is the destination's format, written by its ``RowsEncoder``
(chosen once, when the destination is built: ``bridge.mq.formats``); where a record goes and
how large it may be (``Placement``), and the binlog coordinates every record carries as
headers, are the same for every format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bridge.config import DEFAULT_MAX_RECORD_BYTES
from bridge.entry import AheadEncoding, Entry, Header, RowChange
from bridge.model import value_class
from bridge.mq.routing import PartitionRouter, TopicPartitions, TopicRouter
from bridge.position import SnapshotHeader

# Headers every record carries: where the change comes from in the source's binlog.
HEADER_FILE = "binlog.file"
HEADER_POSITION = "binlog.position"
HEADER_SERVER_ID = "binlog.server_id"
HEADER_GTID = "binlog.gtid"
# On a record a snapshot read (not the binlog): ``schema.table;chunk`` (docs/snapshots.md).
HEADER_SNAPSHOT = "canal-bridge-snapshot"

# Room left in a record for Kafka's own framing (record batch header, varints, ...).
RECORD_OVERHEAD = 256

# Routes are cached per table, up to this many tables.
_MAX_ROUTES = 4096
# Header names, plus the longest decimal position (20 digits) and server id (10).
_FIXED_HEADER_BYTES = (
    len(HEADER_FILE) + len(HEADER_POSITION) + len(HEADER_SERVER_ID) + len(HEADER_GTID) + 30
)


@value_class
class OutgoingRecord:
    topic: str
    partition: int
    key: bytes
    value: bytes | None  # None: a tombstone (``mq.tombstones``)
    headers: tuple[tuple[str, bytes], ...]


# Per (binlog file, server id): the file and server id headers, made once (every record of a
# file has the same two); cleared when it holds this many.
_SOURCE_HEADERS: dict[tuple[str, int], tuple[tuple[str, bytes], tuple[str, bytes]]] = {}
_MAX_SOURCE_HEADERS = 64


def binlog_headers(header: Header) -> tuple[tuple[str, bytes], ...]:
    """Binlog coordinates of the entry a record was built from (gtid only when known). Built
    for every record: the two headers a file shares come from a cache, looked up inline."""
    source = _SOURCE_HEADERS.get((header.logfile_name, header.server_id))
    if source is None:
        source = _source_headers(header.logfile_name, header.server_id)
    file_header, server_header = source
    position = (HEADER_POSITION, b"%d" % header.logfile_offset)
    if type(header) is SnapshotHeader:
        return _snapshot_headers(header, file_header, position, server_header)
    if header.gtid:
        return file_header, position, server_header, (HEADER_GTID, header.gtid.encode())
    return file_header, position, server_header


def _source_headers(
    logfile_name: str, server_id: int
) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    if len(_SOURCE_HEADERS) >= _MAX_SOURCE_HEADERS:
        _SOURCE_HEADERS.clear()
    made = (HEADER_FILE, logfile_name.encode()), (HEADER_SERVER_ID, str(server_id).encode())
    _SOURCE_HEADERS[logfile_name, server_id] = made
    return made


def _snapshot_headers(
    header: SnapshotHeader, *coordinates: tuple[str, bytes]
) -> tuple[tuple[str, bytes], ...]:
    gtid = ((HEADER_GTID, header.gtid.encode()),) if header.gtid else ()
    return (*coordinates, *gtid, (HEADER_SNAPSHOT, header.chunk.encode()))


class RowsEncoder(Protocol):
    """Writes a destination's entries as Kafka records, in one output format.

    Adding a format is: implement this protocol, register a factory under the format's name in
    ``bridge.mq.formats.ENCODERS`` and add the name to ``MqConfig.format``'s ``Literal`` (a
    test pins one to the other). For example, a format writing each row as a JSON record,
    placed and keyed as canal places a row (DDL left out)::

        class RowJsonEncoder:
            def __init__(self, placement: Placement) -> None:
                self.placement = placement

            def encode(self, entry: Entry, batch_id: int, ts: int) -> list[OutgoingRecord]:
                h, change = entry.header, entry.row_change
                if change is None or change.is_ddl:
                    return []
                db, table, where = h.schema_name, h.table_name, self.placement
                topic = where.topics.topic_for(db, table)
                count = where.partition_counts.count_for(topic)
                records = []
                for row in change.row_datas:
                    image = row.before if change.event_type is EventType.DELETE else row.after
                    values = {c.name: None if c.is_null else c.value for c in image}
                    keys = [c.name for c in image if c.is_key]
                    partition = where.partitions.partition_for(db, table, values, keys, count)
                    key = record_key(db, table, [values[k] for k in keys])
                    value = orjson.dumps({"type": change.event_type.name, "row": values})
                    records.append(OutgoingRecord(topic, partition, key, value, binlog_headers(h)))
                return records

            def finish(self, batch_id: int, ts: int) -> list[OutgoingRecord]:
                return []

            def ahead(self) -> AheadEncoding | None:
                return None

            rows_only = True  # encode makes nothing of an entry without a row change

        ENCODERS["row_json"] = lambda mq, placement, compiled: RowJsonEncoder(placement)

    Every registered format, and this example, passes one contract
    (tests/unit/mq/test_encoder_contract.py): each row on its table's topic and its row's
    partition, in batch order per partition, under a key that is empty or names its table.
    """

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        """The records of one entry of a batch (none for an entry the format leaves out), in
        order; raises ``RecordTooLarge`` when one is over the limit and its policy cannot
        help. ``batch_id`` and ``ts`` (ms) are the batch's id and build time."""
        ...

    def finish(self, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        """The records held back until the batch's last entry was encoded (formats whose
        record carries a whole batch: canal's protobuf messages); none for per-entry formats.
        Called once per batch, after ``encode``; may raise ``RecordTooLarge`` too."""
        ...

    def ahead(self) -> AheadEncoding | None:
        """How the binlog reader's process may encode rows events ahead of their batch, or
        None when it must send rows (the instance may still decline: a field filter)."""
        ...

    @property
    def rows_only(self) -> bool:
        """Whether ``encode`` makes nothing of an entry without a row change (transaction
        markers, heartbeats): the builder then never hands one over. They are two thirds of
        the entries of one-row transactions."""
        ...


class RowsEncoderStep:
    """A step that rewrites what a destination's encoder writes (``mq.key_change: split``,
    ``mq.tombstones``): a subclass defines ``encode`` around ``self.encoder``; finishing a
    batch and ``rows_only`` are the wrapped encoder's. ``ahead`` declines: a step reads row
    images, so rows must reach the instance's process."""

    def __init__(self, encoder: RowsEncoder, placement: Placement) -> None:
        self.encoder = encoder
        self.placement = placement

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.encoder!r})"

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        raise NotImplementedError

    def finish(self, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        return self.encoder.finish(batch_id, ts)

    @property
    def rows_only(self) -> bool:
        return self.encoder.rows_only

    def ahead(self) -> AheadEncoding | None:
        return None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a destination's records go and how large they may be, the same for every format:
    canal's topic and partition routing, partition counts, and the producer's size limit."""

    topics: TopicRouter
    partitions: PartitionRouter
    partition_counts: TopicPartitions
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    _routes: dict[tuple[str, str], tuple[str, int] | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def route(self, database: str, table: str) -> tuple[str, int] | None:
        """Topic and partition of a table's rows events, or None when hashing spreads its rows
        over several partitions (the partition then depends on the row). Cached per table:
        routing depends only on the names (and the partition counts, fixed in the config)."""
        routes = self._routes
        try:
            return routes[database, table]
        except KeyError:
            pass
        topic = self.topics.topic_for(database, table)
        count = self.partition_counts.count_for(topic)
        route = None
        if not self.partitions.hashing or count == 1:
            route = (topic, self.partitions.partition_for(database, table, None, (), count))
        if len(routes) >= _MAX_ROUTES:
            routes.clear()
        routes[database, table] = route
        return route

    def fits(
        self, value: bytes, key: bytes, header: Header, headers: tuple[tuple[str, bytes], ...]
    ) -> bool:
        """Whether a record is within the size limit. Headers are counted only when key and
        value come near it: below the limit less the headers at their longest UTF-8 length,
        any record of ``header`` fits."""
        longest = 4 * (len(header.logfile_name) + len(header.gtid))
        if isinstance(header, SnapshotHeader):
            longest += len(HEADER_SNAPSHOT) + 4 * len(header.chunk)
        if len(value) + len(key) + longest <= self.fit_bytes():
            return True
        return len(value) <= self.value_budget(key, headers)

    def fit_bytes(self) -> int:
        """``fits``'s first test as one bound: a record fits when its value and key, plus
        four bytes a character of its header's file name and GTID (and a snapshot's chunk
        header), come to at most this. For a caller testing many records inline, where a call
        to ``fits`` would cost a quarter of a microsecond each."""
        return self.max_record_bytes - RECORD_OVERHEAD - _FIXED_HEADER_BYTES

    def value_budget(self, key: bytes, headers: tuple[tuple[str, bytes], ...]) -> int:
        """The most bytes a record's value may have, given its key and headers."""
        header_bytes = sum(len(name) + len(value) for name, value in headers)
        return self.max_record_bytes - len(key) - header_bytes - RECORD_OVERHEAD


class BatchCursor(Protocol):
    """The cursor committed with each batch's records in exactly-once delivery
    (``bridge.mq.exactly_once.CursorLedger``), told which batches were acked or rolled back."""

    def batch(self, batch_id: int, entries: Sequence[Entry]) -> tuple[list[Entry], OutgoingRecord]:
        """The entries still to send (rows a previous process committed are left out) and
        the cursor record that goes with them."""
        ...

    def acked(self, batch_id: int) -> None: ...

    def rolled_back(self) -> None: ...


def rows_apart(entry: Entry) -> Sequence[Entry]:
    """A snapshot entry's rows as one-row entries: a snapshot row is a message of its own,
    keyed and placed as a streamed change of that row alone (docs/snapshots.md). Rows
    rendered ahead as a record each (``EncodedRowsApart``) stay together: the encoder that
    wrote them writes a record per row."""
    change = entry.row_change
    if change is None or type(change.row_datas) is not tuple or len(change.row_datas) < 2:
        return (entry,)
    header, kind, event_type = entry.header, entry.entry_type, change.event_type
    return [
        Entry(header, kind, RowChange(event_type, row_datas=(row,))) for row in change.row_datas
    ]


@dataclass(frozen=True, slots=True)
class RecordBuilder:
    """Turns a batch into records: every entry through the destination's encoder, in order,
    and in exactly-once delivery the batch's cursor record last."""

    encoder: RowsEncoder
    cursor: BatchCursor | None = None

    def build(self, entries: Sequence[Entry], batch_id: int, ts: int) -> list[OutgoingRecord]:
        """All records of one batch, in batch order (then ascending partition per message).

        Raises RecordTooLarge when a record is over the limit and the policy cannot help.
        """
        records: list[OutgoingRecord] = []
        encode = self.encoder.encode
        cursor_record = None
        if self.cursor is not None:
            entries, cursor_record = self.cursor.batch(batch_id, entries)
        if self.encoder.rows_only:
            entries = [entry for entry in entries if entry.row_change is not None]
        for entry in entries:
            if type(entry.header) is SnapshotHeader:
                for row in rows_apart(entry):
                    records.extend(encode(row, batch_id, ts))
            else:
                records.extend(encode(entry, batch_id, ts))
        records.extend(self.encoder.finish(batch_id, ts))
        if cursor_record is not None:
            records.append(cursor_record)
        return records

    def acked(self, batch_id: int) -> None:
        """The worker acked ``batch_id``: its records (and cursor) are in Kafka."""
        if self.cursor is not None:
            self.cursor.acked(batch_id)

    def rolled_back(self) -> None:
        """The worker rolled back every outstanding batch."""
        if self.cursor is not None:
            self.cursor.rolled_back()
