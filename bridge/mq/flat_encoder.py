"""The FlatMessage encoders: canal's ``canal-json`` records, written in pure Python or by the
compiled path (``canal_bridge_native``), byte for byte the same.

``FlatMessageEncoder`` does everything canal decides (topic, partition, JSON) plus what canal
lacks: a record key, binlog headers, a DDL policy and an oversize policy.
``CompiledFlatMessageEncoder`` writes a rows event's record in one compiled call where that
record cannot depend on the rows' partitions or on the oversize policy, and leaves everything
else to the pure-Python encoder; it also lets the binlog reader's process write records
ahead of their batch (``ahead``), less the batch id and build time, which ``RenderedRows``
puts in.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from bridge import native
from bridge.config.rules import DdlPolicy, OversizePolicy
from bridge.entry import AheadEncoding, Entry, Header, RowChange
from bridge.model import value_class
from bridge.mq.dead_letter import log_dead_letter
from bridge.mq.exceptions import RecordTooLarge, RenderedRowsMisfit
from bridge.mq.flat_message import (
    SKIPPED_ENTRY_TYPES,
    FlatMessage,
    dead_letter_notice,
    flat_message_of,
    message_key,
    partition_message,
    split_rows,
)
from bridge.mq.records import (
    RECORD_OVERHEAD,
    OutgoingRecord,
    Placement,
    binlog_headers,
)
from bridge.mq.rendering import (
    EventRenderer,
    message_gtid,
    native_rows,
    render_rows,
    render_rows_apart,
)

# Bytes of a record kept free of rendered rows: headers (file name, GTID), batch id, build time.
RENDER_HEADROOM = 16 * 1024


class FlatMessageEncoder:
    """canal's FlatMessage records in pure Python: one message per rows event or DDL, split by
    partition (partition hash) and, by the oversize policy, by size."""

    rows_only = True  # transaction markers and heartbeats make no FlatMessage

    def __init__(
        self,
        placement: Placement,
        ddl: DdlPolicy | None = None,
        oversize: OversizePolicy | None = None,
    ) -> None:
        self.placement = placement
        self.ddl = ddl or DdlPolicy()
        self.oversize = oversize or OversizePolicy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ddl={self.ddl.mode}, oversize={self.oversize.mode})"

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        change = entry.row_change
        if change is None or entry.entry_type in SKIPPED_ENTRY_TYPES:
            return ()
        message = flat_message_of(entry, change, batch_id, ts)
        return self._records_of(message, entry.header)

    def finish(self, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        return ()  # one record per entry: nothing waits for the batch's end

    def ahead(self) -> AheadEncoding | None:
        return None  # the pure-Python records are written with their batch

    def _records_of(self, message: FlatMessage, header: Header) -> list[OutgoingRecord]:
        if message.is_ddl and self.ddl.mode == "skip":
            return []
        headers = binlog_headers(header)
        if message.is_ddl and self.ddl.mode == "topic":
            return self._sized(self.ddl.topic, 0, message, headers, header)
        placement = self.placement
        topic = placement.topics.topic_for(message.database, message.table)
        count = placement.partition_counts.count_for(topic)
        records: list[OutgoingRecord] = []
        for partition, part in partition_message(message, placement.partitions, count):
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
        budget = self.placement.value_budget(key, headers)
        if len(value) <= budget:
            return [OutgoingRecord(topic, partition, key, value, headers)]
        where = (
            f"{message.database}.{message.table} {message.type} in batch {message.id} "
            f"at {header.logfile_name}:{header.logfile_offset}"
        )
        if self.oversize.mode == "dead_letter":
            notice = dead_letter_notice(
                message, header, topic=topic, partition=partition, size=len(value), limit=budget
            )
            log_dead_letter(
                table=f"{message.database}.{message.table}",
                change=message.type,
                size=len(value),
                limit=budget,
                topic=topic,
                partition=partition,
                key=key,
                dead_letter_topic=self.oversize.topic,
                binlog=f"{header.logfile_name}:{header.logfile_offset}",
            )
            return [OutgoingRecord(self.oversize.topic, 0, key, notice, headers)]
        if self.oversize.mode == "fail":
            raise RecordTooLarge(topic, partition, len(value), budget, where)
        records = []
        for chunk in split_rows(message, budget):
            chunk_key = message_key(chunk)
            chunk_value = chunk.to_json()
            if len(chunk_value) > self.placement.value_budget(chunk_key, headers):
                raise RecordTooLarge(topic, partition, len(chunk_value), budget, where)
            records.append(OutgoingRecord(topic, partition, chunk_key, chunk_value, headers))
        return records


@value_class
class RenderedRows:
    """The rows of one rows event written as FlatMessage JSON and record key by the binlog
    reader's process (``render_rows``); an ``EncodedRows``. The JSON lacks the batch ``id``
    and build ``ts``, known only when a batch is built: the record's value is then ``head +
    id + middle + ts + tail``. Fields in the order ``rows_record_parts`` returns them."""

    count: int
    head: bytes
    middle: bytes
    tail: bytes
    key: bytes

    def __len__(self) -> int:
        return self.count


@value_class
class RenderedRecords:
    """Rows each written as a FlatMessage record of its own, with its record key, by a
    snapshot reader's process (``render_rows_apart``); an ``EncodedRowsApart``. Row ``i``'s
    value is ``heads[i] + id + middle + ts + tail``: one row's message differs from another's
    only in its head (``data``), since all share the chunk's table, plan and read time."""

    heads: list[bytes]
    middle: bytes
    tail: bytes
    keys: list[bytes]

    def __len__(self) -> int:
        return len(self.heads)

    def pick(self, indexes: Sequence[int]) -> RenderedRecords:
        heads, keys = self.heads, self.keys
        return RenderedRecords(
            [heads[i] for i in indexes], self.middle, self.tail, [keys[i] for i in indexes]
        )


class CompiledFlatMessageEncoder(FlatMessageEncoder):
    """The same records, rows events written by the compiled path where it can."""

    def __init__(
        self,
        placement: Placement,
        ddl: DdlPolicy | None = None,
        oversize: OversizePolicy | None = None,
        *,
        compiled: native.Compiled,
    ) -> None:
        super().__init__(placement, ddl, oversize)
        self._compiled = compiled
        self._fit_bytes = placement.fit_bytes()
        # The batch id and build time of the last rendered record, and their JSON.
        self._batch_id, self._ts, self._id_text, self._ts_text = -1, -1, b"", b""

    def encode(self, entry: Entry, batch_id: int, ts: int) -> Sequence[OutgoingRecord]:
        change = entry.row_change
        if change is None:  # transaction markers, heartbeats: most entries of small txns
            return ()
        rows = change.row_datas
        if type(rows) is RenderedRows:
            return (self._rendered_record(entry.header, rows, batch_id, ts),)
        if type(rows) is RenderedRecords:
            return self._rendered_records(entry.header, rows, batch_id, ts)
        if entry.entry_type not in SKIPPED_ENTRY_TYPES:
            record = self._compiled_record(entry.header, change, batch_id, ts)
            if record is not None:
                return (record,)
        return super().encode(entry, batch_id, ts)

    def ahead(self) -> AheadEncoding | None:
        """The binlog reader's process renders rows events' records where nothing after it
        reads row images (no partition hash: the partition would depend on them) and up to a
        limit that leaves room for headers, the batch id and the build time, so a rendered
        record always fits and a larger one keeps its rows for the oversize policy."""
        limit = self.placement.max_record_bytes - RECORD_OVERHEAD - RENDER_HEADROOM
        if self.placement.partitions.hashing or limit <= 0:
            return None
        return AheadEncoding(
            functools.partial(render_rows, limit=limit),
            RenderedRows,
            functools.partial(render_rows_apart, limit=limit),
            RenderedRecords,
            EventRenderer(limit),
        )

    def _compiled_record(
        self, header: Header, change: RowChange, batch_id: int, ts: int
    ) -> OutgoingRecord | None:
        """The record of a rows event written by the compiled path, or None where the
        pure-Python path is needed: rows not straight from the parser, a message that hashing
        may split over partitions, one over the size limit."""
        found = native_rows(change)
        if found is None:
            return None
        (kind, event_type), rows = found
        database, table = header.schema_name, header.table_name
        route = self.placement.route(database, table)
        if route is None:
            return None
        built = self._compiled.rows_record(
            batch_id,
            database,
            table,
            kind,
            event_type,
            header.execute_time,
            ts,
            change.sql,
            message_gtid(header),
            rows,
        )
        if built is None:
            return None
        value, key = built
        headers = binlog_headers(header)
        if not self.placement.fits(value, key, header, headers):
            return None
        return OutgoingRecord(route[0], route[1], key, value, headers)

    def _rendered_records(
        self, header: Header, rows: RenderedRecords, batch_id: int, ts: int
    ) -> list[OutgoingRecord]:
        """A record per row a snapshot reader process rendered: the batch id and build time
        put in after each row's head. Rendered, like ``_rendered_record``'s, only where the
        partition does not depend on the rows and far below the size limit."""
        heads, keys = rows.heads, rows.keys
        if not heads:
            return []
        id_text, ts_text = self._texts(batch_id, ts)
        route = self.placement.route(header.schema_name, header.table_name)
        after_head = b"".join((id_text, rows.middle, ts_text, rows.tail))
        headers = binlog_headers(header)
        if route is None or not self._all_fit(heads, keys, after_head, header, headers):
            raise _misfit(header, route is None)
        topic, partition = route
        return [
            OutgoingRecord(topic, partition, key, head + after_head, headers)
            for head, key in zip(heads, keys, strict=True)
        ]

    def _all_fit(
        self,
        heads: list[bytes],
        keys: list[bytes],
        after_head: bytes,
        header: Header,
        headers: tuple[tuple[str, bytes], ...],
    ) -> bool:
        """Whether every record ``heads[i] + after_head`` with key ``keys[i]`` is within the
        size limit: at once when the longest head with the longest key fits (they may be
        different rows'), else row by row."""
        fits = self.placement.fits
        if fits(max(heads, key=len) + after_head, max(keys, key=len), header, headers):
            return True
        return all(
            fits(head + after_head, key, header, headers)
            for head, key in zip(heads, keys, strict=True)
        )

    def _texts(self, batch_id: int, ts: int) -> tuple[bytes, bytes]:
        """The batch id and build time as JSON numbers, made once per batch."""
        if batch_id != self._batch_id or ts != self._ts:
            self._batch_id, self._ts = batch_id, ts
            self._id_text, self._ts_text = str(batch_id).encode(), str(ts).encode()
        return self._id_text, self._ts_text

    def _rendered_record(
        self, header: Header, rows: RenderedRows, batch_id: int, ts: int
    ) -> OutgoingRecord:
        """The record of rows the binlog reader process rendered: only the batch id and build
        time are put in. It renders only where the partition does not depend on the rows and
        far below the size limit, so neither can fail here (but for a bug: checked all the
        same). The size is tested inline (``Placement.fit_bytes``); only a record that
        fails that test, or a snapshot's, is given to ``Placement.fits``."""
        placement = self.placement
        route = placement.route(header.schema_name, header.table_name)
        id_text, ts_text = self._texts(batch_id, ts)
        value = b"".join((rows.head, id_text, rows.middle, ts_text, rows.tail))
        key = rows.key
        headers = binlog_headers(header)
        if route is None or (
            (
                type(header) is not Header
                or len(value) + len(key) + 4 * (len(header.logfile_name) + len(header.gtid))
                > self._fit_bytes
            )
            and not placement.fits(value, key, header, headers)
        ):
            raise _misfit(header, route is None)
        return OutgoingRecord(route[0], route[1], key, value, headers)


def _misfit(header: Header, hashed: bool) -> RenderedRowsMisfit:
    return RenderedRowsMisfit(
        f"{header.schema_name}.{header.table_name} at {header.logfile_name}:"
        f"{header.logfile_offset}: rows rendered by the binlog reader process do not fit this "
        f"destination ({'hashed over partitions' if hashed else 'over the size limit'})"
    )
