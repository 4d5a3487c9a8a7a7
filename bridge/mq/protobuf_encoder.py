"""canal's protobuf (non-flat) records: ``mq.flat_message: false``.

Verified against canal 1.1.8's ``CanalKafkaProducer.send``, ``MQMessageUtils.messageTopics`` /
``messagePartition`` and ``CanalMessageSerializerUtil.serializer``. Unlike the FlatMessage,
a record carries a whole batch, per topic and partition:

* no dynamic topic and no partition hash: one record per batch on the topic's fixed
  partition, every entry in batch order, transaction begin/end entries included (HEARTBEATs
  never reach canal's MQ layer);
* dynamic topic and/or partition hash ("routed"): transaction begin/end entries are dropped,
  entries go to their table's topic; with a partition hash a DDL, a row-less entry or a
  table no rule matches goes to partition 0, a table-hash rule sends the whole entry to its
  table's partition, and a key rule makes one entry per row (header unchanged), each on its
  row's partition, in batch order within each partition.

The record value is ``bridge.mq.canal_protocol.envelope.packet``; the routing rules are
``Placement``'s, shared with the FlatMessage. What canal lacks is kept from the FlatMessage
encoder: the binlog headers (of the record's last entry), ``mq.ddl`` and ``mq.oversize``. An
oversize record is split between entries, an entry too large alone into row pieces
(``split``), noted per entry on the dead-letter topic (``dead_letter``) or refused
(``fail``). The record key is empty: a record holds many tables' rows (canal sends none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from bridge.config.rules import DdlPolicy, OversizePolicy
from bridge.entry import AheadEncoding, Entry, EntryType, EventType, Header
from bridge.mq.canal_protocol import (
    canal_entry,
    entry_cost,
    entry_with_rows,
    packet,
    packet_size,
    with_rows,
)
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.dead_letter import log_dead_letter
from bridge.mq.exceptions import RecordTooLarge
from bridge.mq.records import OutgoingRecord, Placement, binlog_headers
from bridge.mq.routing import CanalPartitionRouter

_MARKERS = (EntryType.TRANSACTIONBEGIN, EntryType.TRANSACTIONEND)
_NO_KEY = b""


@dataclass(frozen=True, slots=True)
class _Part:
    """One serialized canal Entry bound for a record, with what splitting it needs."""

    data: bytes
    header: Header
    entry: pb.Entry
    change: pb.RowChange | None  # a ROWDATA entry's row change (its rows can be split)


class ProtobufMessageEncoder:
    """canal's protobuf records: entries are gathered per topic and partition as the batch is
    encoded (``encode`` returns nothing) and written when it ends (``finish``)."""

    rows_only = False  # canal's Message carries the transaction markers too

    def __init__(
        self,
        placement: Placement,
        ddl: DdlPolicy | None = None,
        oversize: OversizePolicy | None = None,
        *,
        dynamic_topic: bool = False,
    ) -> None:
        self.placement = placement
        self.ddl = ddl or DdlPolicy()
        self.oversize = oversize or OversizePolicy()
        # canal routes entry by entry (and drops transaction markers) when either is set.
        self.routed = dynamic_topic or placement.partitions.hashing
        self._pending: dict[str, dict[int, list[_Part]]] = {}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(routed={self.routed}, ddl={self.ddl.mode}, "
            f"oversize={self.oversize.mode})"
        )

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        kind = entry.entry_type
        if kind is EntryType.HEARTBEAT or (kind in _MARKERS and self.routed):
            return ()
        change = entry.row_change
        if kind is EntryType.ROWDATA and change is None:
            return ()
        if change is not None and change.is_ddl and self.ddl.mode != "inline":
            if self.ddl.mode == "topic":
                self._add(self.ddl.topic, 0, _whole(entry))
            return ()
        header = entry.header
        database, table = header.schema_name, header.table_name
        placement = self.placement
        topic = placement.topics.topic_for(database, table)
        count = placement.partition_counts.count_for(topic)
        router = placement.partitions
        if change is None or change.is_ddl or not router.hashing or not change.row_datas:
            self._add(topic, router.partition_for(database, table, None, (), count), _whole(entry))
            return ()
        self._add_hashed(entry, topic, count)
        return ()

    def finish(self, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        """The batch's records: per topic (in the order the batch first meets them), one per
        partition in ascending order (more when the oversize policy splits one)."""
        pending, self._pending = self._pending, {}
        records: list[OutgoingRecord] = []
        for topic, partitions in pending.items():
            for partition in sorted(partitions):
                records.extend(self._records(topic, partition, partitions[partition], batch_id))
        return records

    def ahead(self) -> AheadEncoding | None:
        return None  # records are written per batch, from the rows

    def _add(self, topic: str, partition: int, part: _Part) -> None:
        self._pending.setdefault(topic, {}).setdefault(partition, []).append(part)

    def _add_hashed(self, entry: Entry, topic: str, count: int) -> None:
        """canal's ``messagePartition`` for an entry with rows."""
        header, change = entry.header, entry.row_change
        assert change is not None
        database, table = header.schema_name, header.table_name
        router = self.placement.partitions
        rows = change.row_datas
        assert isinstance(rows, tuple)  # never encoded ahead: ahead() is None
        delete = change.event_type is EventType.DELETE
        whole_entry = not _splits_rows(router, database, table)
        partitions = []
        for row in rows[:1] if whole_entry else rows:
            image = row.before if delete else row.after
            values = {c.name: (None if c.is_null else c.value) for c in image}
            keys = [c.name for c in image if c.is_key]
            partitions.append(router.partition_for(database, table, values, keys, count))
        if whole_entry:
            self._add(topic, partitions[0], _whole(entry))
            return
        whole = canal_entry(entry)
        canal_change = pb.RowChange.FromString(whole.storeValue)
        for partition, row in zip(partitions, canal_change.rowDatas, strict=True):
            piece = with_rows(canal_change, [row])
            self._add(topic, partition, _Part(entry_with_rows(whole, piece), header, whole, piece))

    def _records(
        self, topic: str, partition: int, parts: list[_Part], batch_id: int
    ) -> list[OutgoingRecord]:
        raw = not self.routed
        headers = binlog_headers(parts[-1].header)
        budget = self.placement.value_budget(_NO_KEY, headers)
        total = sum(entry_cost(len(p.data)) for p in parts)
        if packet_size(total, batch_id, raw=raw) <= budget:
            value = packet([p.data for p in parts], batch_id, raw=raw)
            return [OutgoingRecord(topic, partition, _NO_KEY, value, headers)]
        if self.oversize.mode == "fail":
            size = packet_size(total, batch_id, raw=raw)
            raise RecordTooLarge(topic, partition, size, budget, _where(parts, batch_id))
        records: list[OutgoingRecord] = []
        for chunk in self._chunks(topic, partition, parts, batch_id, records):
            chunk_headers = binlog_headers(chunk[-1].header)
            value = packet([p.data for p in chunk], batch_id, raw=raw)
            if len(value) > self.placement.value_budget(_NO_KEY, chunk_headers):
                raise RecordTooLarge(topic, partition, len(value), budget, _where(chunk, batch_id))
            records.append(OutgoingRecord(topic, partition, _NO_KEY, value, chunk_headers))
        return records

    def _chunks(
        self,
        topic: str,
        partition: int,
        parts: list[_Part],
        batch_id: int,
        notices: list[OutgoingRecord],
    ) -> list[list[_Part]]:
        """Consecutive runs of entries that fit a record (greedy, by exact sizes). An entry
        too large alone is split into row pieces (``split``) or replaced by a notice appended
        to ``notices`` (``dead_letter``)."""
        raw = not self.routed
        value_budget = self.placement.value_budget
        budget = min(value_budget(_NO_KEY, binlog_headers(p.header)) for p in parts)
        chunks: list[list[_Part]] = []
        run: list[_Part] = []
        total = 0
        for part in parts:
            for piece in self._fitting(topic, partition, part, batch_id, budget, notices):
                cost = entry_cost(len(piece.data))
                if run and packet_size(total + cost, batch_id, raw=raw) > budget:
                    chunks.append(run)
                    run, total = [], 0
                run.append(piece)
                total += cost
        if run:
            chunks.append(run)
        return chunks

    def _fitting(  # noqa: PLR0917  (recursive helper of _chunks, one call site)
        self,
        topic: str,
        partition: int,
        part: _Part,
        batch_id: int,
        budget: int,
        notices: list[OutgoingRecord],
    ) -> list[_Part]:
        """``part`` as pieces that each fit a record alone: itself, its rows halved until
        they fit (``split``; a single row too large stays whole and fails later), or none
        and a dead-letter notice."""
        raw = not self.routed
        size = packet_size(entry_cost(len(part.data)), batch_id, raw=raw)
        if size <= budget:
            return [part]
        if self.oversize.mode == "dead_letter":
            notice = _dead_letter_notice(part, batch_id, topic, partition, size=size, limit=budget)
            header = part.header
            log_dead_letter(
                table=f"{header.schema_name}.{header.table_name}",
                change=header.event_type.value if header.event_type is not None else "",
                size=size,
                limit=budget,
                topic=topic,
                partition=partition,
                key=_NO_KEY,
                dead_letter_topic=self.oversize.topic,
                binlog=f"{header.logfile_name}:{header.logfile_offset}",
            )
            notices.append(
                OutgoingRecord(self.oversize.topic, 0, _NO_KEY, notice, binlog_headers(part.header))
            )
            return []
        change = part.change
        if change is None or len(change.rowDatas) < 2:
            return [part]
        rows = list(change.rowDatas)
        middle = len(rows) // 2
        pieces = []
        for half in (rows[:middle], rows[middle:]):
            rows_half = with_rows(change, half)
            data = entry_with_rows(part.entry, rows_half)
            piece = _Part(data, part.header, part.entry, rows_half)
            pieces.extend(self._fitting(topic, partition, piece, batch_id, budget, notices))
        return pieces


def _whole(entry: Entry) -> _Part:
    canal = canal_entry(entry)
    change = None
    if entry.entry_type is EntryType.ROWDATA:
        change = pb.RowChange.FromString(canal.storeValue)
    return _Part(canal.SerializeToString(), entry.header, canal, change)


def _splits_rows(router: object, database: str, table: str) -> bool:
    """Whether canal writes one entry per row for this table: under a key rule (a table-hash
    rule, or no rule, keeps the entry whole). Routers other than canal's split always."""
    if not isinstance(router, CanalPartitionRouter):
        return True
    rule = router.rule_for(database, table)
    return rule is not None and not rule.by_table


def _where(parts: Sequence[_Part], batch_id: int) -> str:
    first, last = parts[0].header, parts[-1].header
    return (
        f"{len(parts)} entries of batch {batch_id} from {first.logfile_name}:"
        f"{first.logfile_offset} to {last.logfile_name}:{last.logfile_offset}"
    )


def _dead_letter_notice(
    part: _Part, batch_id: int, topic: str, partition: int, *, size: int, limit: int
) -> bytes:
    """The FlatMessage path's notice (``dead_letter_notice``), for one canal entry."""
    header = part.header
    event = header.event_type.value if header.event_type is not None else ""
    return orjson.dumps(
        {
            "reason": "oversize",
            "topic": topic,
            "partition": partition,
            "size": size,
            "limit": limit,
            "id": batch_id,
            "database": header.schema_name,
            "table": header.table_name,
            "type": event,
            "es": header.execute_time,
            "rows": len(part.change.rowDatas) if part.change is not None else 0,
            "binlogFile": header.logfile_name,
            "binlogPosition": header.logfile_offset,
            "gtid": header.gtid,
        }
    )
