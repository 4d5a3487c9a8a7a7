"""From a batch of Entries to the Kafka records to produce: pure, no client involved.

The MQ worker calls ``RecordBuilder.build`` for each batch and hands the records to the
producer; everything canal decides (topic, partition, JSON) happens here, plus what canal
lacks: a record key, binlog headers, a DDL policy and an oversize policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson

from bridge import native
from bridge.config import DEFAULT_MAX_RECORD_BYTES, MqConfig
from bridge.config.rules import DdlPolicy, OversizePolicy
from bridge.construct import slotted_constructor
from bridge.entry import (
    Entry,
    EventType,
    Header,
    RenderedParts,
    RenderedRows,
    RowChange,
    RowData,
)
from bridge.mq.exceptions import RecordTooLarge, RenderedRowsMisfit
from bridge.mq.flat_message import (
    SKIPPED_ENTRY_TYPES,
    FlatMessage,
    SourcedMessage,
    flat_message_of,
    partition_message,
    split_rows,
)
from bridge.mq.routing import (
    CanalPartitionRouter,
    CanalTopicRouter,
    PartitionRouter,
    TopicPartitions,
    TopicRouter,
    record_key,
)

# Headers every record carries: where the change comes from in the source's binlog.
HEADER_FILE = "binlog.file"
HEADER_POSITION = "binlog.position"
HEADER_SERVER_ID = "binlog.server_id"
HEADER_GTID = "binlog.gtid"

# Room left in a record for Kafka's own framing (record batch header, varints, ...).
RECORD_OVERHEAD = 256

# Row change kinds as the compiled path numbers and names them.
_NATIVE_KINDS = {
    EventType.INSERT: (0, EventType.INSERT.value),
    EventType.UPDATE: (1, EventType.UPDATE.value),
    EventType.DELETE: (2, EventType.DELETE.value),
}
# The compiled path's routes are cached per table, up to this many tables.
_MAX_ROUTES = 4096
# Header names, plus the longest decimal position (20 digits) and server id (10).
_FIXED_HEADER_BYTES = (
    len(HEADER_FILE) + len(HEADER_POSITION) + len(HEADER_SERVER_ID) + len(HEADER_GTID) + 30
)


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    topic: str
    partition: int
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


# Positional, without the frozen dataclass __init__: one record per rows event.
_new_record = slotted_constructor(OutgoingRecord)


def message_key(message: FlatMessage) -> bytes:
    """The record key of a message: its rows' primary key when they all share one.

    A multi-row message whose rows have different keys (or a DDL) gets the table key
    ``database.table``. The key follows ``data``: the after-image, the before-image for DELETE.
    """
    if message.is_ddl or not message.data or not message.pk_names:
        return record_key(message.database, message.table)
    pk_names, data = message.pk_names, message.data
    if len(data) == 1:  # most rows events carry one row
        return record_key(message.database, message.table, [data[0].get(n) for n in pk_names])
    keys = {tuple(row.get(name) for name in pk_names) for row in data}
    if len(keys) != 1:
        return record_key(message.database, message.table)
    return record_key(message.database, message.table, next(iter(keys)))


def binlog_headers(header: Header) -> tuple[tuple[str, bytes], ...]:
    """Binlog coordinates of the entry a message was built from (gtid only when known)."""
    headers = [
        (HEADER_FILE, header.logfile_name.encode()),
        (HEADER_POSITION, str(header.logfile_offset).encode()),
        (HEADER_SERVER_ID, str(header.server_id).encode()),
    ]
    if header.gtid:
        headers.append((HEADER_GTID, header.gtid.encode()))
    return tuple(headers)


@dataclass(frozen=True, slots=True)
class RecordBuilder:
    """Turns a batch into records: FlatMessages, routed, partitioned, keyed, size-checked."""

    topics: TopicRouter
    partitions: PartitionRouter
    partition_counts: TopicPartitions
    ddl: DdlPolicy = field(default_factory=DdlPolicy)
    oversize: OversizePolicy = field(default_factory=OversizePolicy)
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    _routes: dict[tuple[str, str], tuple[str, int] | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_config(
        cls, mq: MqConfig, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    ) -> RecordBuilder:
        """Everything a destination's MQ worker needs to turn batches into records."""
        return cls(
            CanalTopicRouter(mq.topic, mq.dynamic_topic),
            CanalPartitionRouter(
                mq.partition_hash, database_hash=mq.database_hash, fixed_partition=mq.partition
            ),
            TopicPartitions(mq.partitions, mq.dynamic_topic_partitions),
            DdlPolicy.parse(mq.ddl),
            OversizePolicy.parse(mq.oversize),
            max_record_bytes,
        )

    def build(self, entries: Iterable[Entry], batch_id: int, ts: int) -> list[OutgoingRecord]:
        """All records of one batch, in batch order (then ascending partition per message).

        Raises RecordTooLarge when a record is over the limit and the policy cannot help.
        """
        records: list[OutgoingRecord] = []
        compiled = native.module
        id_text, ts_text = str(batch_id).encode(), str(ts).encode()
        for entry in entries:
            change = entry.row_change
            if entry.entry_type in SKIPPED_ENTRY_TYPES or change is None:
                continue
            if type(change.row_datas) is RenderedRows:
                records.append(
                    self._rendered_record(entry.header, change.row_datas, id_text, ts_text)
                )
                continue
            if compiled is not None:
                record = self._compiled_record(compiled, entry.header, change, batch_id, ts)
                if record is not None:
                    records.append(record)
                    continue
            message = flat_message_of(entry, change, batch_id, ts)
            records.extend(self._records_of(SourcedMessage(message, entry.header)))
        return records

    def _compiled_record(
        self, compiled: native.Compiled, header: Header, change: RowChange, batch_id: int, ts: int
    ) -> OutgoingRecord | None:
        """The record of a rows event written by the compiled path (same bytes as the
        FlatMessage path), or None where that path is needed: rows not straight from the
        parser, a message that hashing may split over partitions, one over the size limit."""
        native_rows = _native_rows(change)
        if native_rows is None:
            return None
        kind, rows = native_rows
        database, table = header.schema_name, header.table_name
        route = self._route(database, table)
        if route is None:
            return None
        built = compiled.rows_record(
            batch_id,
            database,
            table,
            kind[0],
            kind[1],
            header.execute_time,
            ts,
            change.sql,
            header.gtid,
            rows,
        )
        if built is None:
            return None
        value, key = built
        headers = binlog_headers(header)
        if not self._fits(value, key, header, headers):
            return None
        return _new_record(route[0], route[1], key, value, headers)

    def _rendered_record(
        self, header: Header, rows: RenderedRows, id_text: bytes, ts_text: bytes
    ) -> OutgoingRecord:
        """The record of rows the binlog reader process rendered (``render_rows``): only the
        batch id and build time are put in. The reader renders only where the partition does
        not depend on the rows and far below the size limit, so neither can fail here."""
        database, table = header.schema_name, header.table_name
        route = self._route(database, table)
        value = rows.finish(id_text, ts_text)
        headers = binlog_headers(header)
        if route is None or not self._fits(value, rows.key, header, headers):
            raise RenderedRowsMisfit(
                f"{database}.{table} at {header.logfile_name}:{header.logfile_offset}: rows "
                f"rendered by the binlog reader process do not fit this destination "
                f"({'hashed over partitions' if route is None else 'over the size limit'})"
            )
        return _new_record(route[0], route[1], rows.key, value, headers)

    def _route(self, database: str, table: str) -> tuple[str, int] | None:
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

    def _fits(
        self, value: bytes, key: bytes, header: Header, headers: tuple[tuple[str, bytes], ...]
    ) -> bool:
        """Whether a record is within the size limit. Headers are counted only when key and
        value come near it: below the limit less the headers at their longest UTF-8 length,
        any record of ``header`` fits."""
        longest = 4 * (len(header.logfile_name) + len(header.gtid)) + _FIXED_HEADER_BYTES
        if len(value) + len(key) <= self.max_record_bytes - RECORD_OVERHEAD - longest:
            return True
        return len(value) <= self._value_budget(key, headers)

    def _records_of(self, sourced: SourcedMessage) -> list[OutgoingRecord]:
        message, header = sourced.message, sourced.header
        if message.is_ddl and self.ddl.mode == "skip":
            return []
        headers = binlog_headers(header)
        if message.is_ddl and self.ddl.mode == "topic":
            return self._sized(self.ddl.topic, 0, message, headers, header)
        topic = self.topics.topic_for(message.database, message.table)
        count = self.partition_counts.count_for(topic)
        records: list[OutgoingRecord] = []
        for partition, part in partition_message(message, self.partitions, count):
            records.extend(self._sized(topic, partition, part, headers, header))
        return records

    def _sized(
        self,
        topic: str,
        partition: int,
        message: FlatMessage,
        headers: tuple[tuple[str, bytes], ...],
        header: Header,
    ) -> list[OutgoingRecord]:
        key = message_key(message)
        value = message.to_json()
        budget = self._value_budget(key, headers)
        if len(value) <= budget:
            return [_new_record(topic, partition, key, value, headers)]
        where = (
            f"{message.database}.{message.table} {message.type} in batch {message.id} "
            f"at {header.logfile_name}:{header.logfile_offset}"
        )
        if self.oversize.mode == "dead_letter":
            notice = _dead_letter_notice(
                message, header, topic=topic, partition=partition, size=len(value), limit=budget
            )
            return [OutgoingRecord(self.oversize.topic, 0, key, notice, headers)]
        if self.oversize.mode == "fail":
            raise RecordTooLarge(topic, partition, len(value), budget, where)
        records = []
        for chunk in split_rows(message, budget):
            chunk_key = message_key(chunk)
            chunk_value = chunk.to_json()
            if len(chunk_value) > self._value_budget(chunk_key, headers):
                raise RecordTooLarge(topic, partition, len(chunk_value), budget, where)
            records.append(OutgoingRecord(topic, partition, chunk_key, chunk_value, headers))
        return records

    def _value_budget(self, key: bytes, headers: tuple[tuple[str, bytes], ...]) -> int:
        header_bytes = sum(len(name) + len(value) for name, value in headers)
        return self.max_record_bytes - len(key) - header_bytes - RECORD_OVERHEAD


def _native_rows(change: RowChange) -> tuple[tuple[int, str], tuple[RowData, ...]] | None:
    """The compiled kind and rows of a change the compiled path can write: DML rows straight
    from the parser (``DecodedRow``s, all of one kind); None for anything else."""
    kind = _NATIVE_KINDS.get(change.event_type)
    rows = change.row_datas
    if kind is None or change.is_ddl or not rows or type(rows) is not tuple:
        return None
    first = type(rows[0])
    if not hasattr(first, "new_plan"):
        return None
    if len(rows) > 1 and any(type(row) is not first for row in rows):
        return None
    return kind, rows


def render_rows(header: Header, change: RowChange, limit: int) -> RenderedParts | None:
    """A rows event's record rendered ahead of its batch, as ``RenderedRows``' fields (rows,
    head, middle, tail, key), with the compiled path; None where it cannot, or where value
    and key would be over ``limit`` bytes (such records keep their rows, for the oversize
    policy)."""
    compiled = native.module
    if compiled is None:
        return None
    native_rows = _native_rows(change)
    if native_rows is None:
        return None
    (kind, event_type), rows = native_rows
    return compiled.rows_record_parts(
        header.schema_name,
        header.table_name,
        kind,
        event_type,
        header.execute_time,
        change.sql,
        header.gtid,
        rows,
        limit,
    )


def _dead_letter_notice(
    message: FlatMessage, header: Header, *, topic: str, partition: int, size: int, limit: int
) -> bytes:
    """A small JSON saying what was too large and where it is in the binlog (rows left out)."""
    return orjson.dumps(
        {
            "reason": "oversize",
            "topic": topic,
            "partition": partition,
            "size": size,
            "limit": limit,
            "id": message.id,
            "database": message.database,
            "table": message.table,
            "type": message.type,
            "es": message.es,
            "rows": len(message.data or ()),
            "binlogFile": header.logfile_name,
            "binlogPosition": header.logfile_offset,
            "gtid": header.gtid,
        }
    )
