"""Rows written as FlatMessage records by compiled code where they are read: in the binlog
reader's process (``EventRenderer`` from a rows event's bytes, else ``render_rows`` from its
decoded rows: the event's record) and in a snapshot reader's process
(``render_rows_apart``, a record per row). Those processes import this module, through the
pickled ``AheadEncoding`` of their spec, and nothing of the MQ side: no Kafka client, no
configuration models (a process's 20 MB). ``bridge.mq.flat_encoder`` revives what they wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge import native
from bridge.entry import EventType, Header, RowChange, RowData
from bridge.position import SnapshotHeader

# Row change kinds as the compiled path numbers and names them.
NATIVE_KINDS = {
    EventType.INSERT: (0, EventType.INSERT.value),
    EventType.UPDATE: (1, EventType.UPDATE.value),
    EventType.DELETE: (2, EventType.DELETE.value),
}


def native_rows(change: RowChange) -> tuple[tuple[int, str], tuple[RowData, ...]] | None:
    """The compiled kind and rows of a change the compiled path can write: DML rows straight
    from the parser (``DecodedRow``s, all of one kind); None for anything else."""
    kind = NATIVE_KINDS.get(change.event_type)
    rows = change.row_datas
    if kind is None or change.is_ddl or not rows or type(rows) is not tuple:
        return None
    first = type(rows[0])
    if not hasattr(first, "new_plan"):
        return None
    if len(rows) > 1 and any(type(row) is not first for row in rows):
        return None
    return kind, rows


def render_rows(
    header: Header, change: RowChange, limit: int
) -> tuple[int, bytes, bytes, bytes, bytes] | None:
    """A rows event's record rendered ahead of its batch, as ``RenderedRows``' fields, with the
    compiled path (in the binlog reader's process, which loads it itself); None where it
    cannot, or where value and key would be over ``limit`` bytes (such records keep their
    rows, for the oversize policy)."""
    parts: tuple[int, bytes, bytes, bytes, bytes] | None = _compiled_parts(
        header, change, limit, apart=False
    )
    return parts


@dataclass(frozen=True, slots=True)
class EventRenderer:
    """A rows event's record written by the compiled path straight from its undecoded images,
    as ``render_rows`` writes it from the decoded rows, up to ``limit`` bytes: the FlatMessage
    encoder's ``AheadEncoding.encode_event`` (it pickles, for the binlog reader's process).
    ``compiled_limit`` tells the reader's converter that whole reads may go through the
    compiled loop, which writes the same records (``EventConverter.flat_read``)."""

    limit: int

    def __call__(  # noqa: PLR0917  (AheadEncoding.encode_event's fields, in its order)
        self,
        schema_name: str,
        table_name: str,
        event_type: EventType,
        execute_time: int,
        gtid: str,
        before: object,
        after: object,
        body: bytes,
        pos: int,
    ) -> tuple[Any, ...] | None:
        """The record's parts (``RenderedRows``' fields); None where the compiled path is
        not loaded, a column of the event needs a Python decoder, the compiled reader declines
        an image (the rows are then decoded, and rendered or refused as ever), or the record
        would be over ``limit``: no value or row object is made."""
        compiled = native.module
        kind = NATIVE_KINDS.get(event_type)
        if compiled is None or kind is None:
            return None
        parts: tuple[Any, ...] | None = compiled.rows_event_parts(
            schema_name,
            table_name,
            kind[0],
            kind[1],
            execute_time,
            gtid,
            before,
            after,
            body,
            pos,
            self.limit,
        )
        return parts

    @property
    def compiled_limit(self) -> int:
        """The limit the compiled read loop writes records with (where the compiled module
        is loaded: ``EventConverter.reads_compiled``)."""
        return self.limit


def render_rows_apart(
    header: Header, change: RowChange, limit: int
) -> tuple[list[bytes], bytes, bytes, list[bytes]] | None:
    """Each row of a change as a record of its own, as ``RenderedRecords``' fields, with the
    compiled path in one call (in a snapshot reader's process); None where it cannot, or
    where a row's record would be over ``limit`` bytes (the rows then cross as rows)."""
    parts: tuple[list[bytes], bytes, bytes, list[bytes]] | None = _compiled_parts(
        header, change, limit, apart=True
    )
    return parts


def _compiled_parts(header: Header, change: RowChange, limit: int, *, apart: bool) -> Any:
    """``row_records_parts`` (``apart``) or ``rows_record_parts`` of a change's rows; None
    where the compiled path is not loaded or cannot write them."""
    compiled = native.module
    if compiled is None:
        return None
    found = native_rows(change)
    if found is None:
        return None
    (kind, event_type), rows = found
    write = compiled.row_records_parts if apart else compiled.rows_record_parts
    return write(
        header.schema_name,
        header.table_name,
        kind,
        event_type,
        header.execute_time,
        change.sql,
        message_gtid(header),
        rows,
        limit,
    )


def message_gtid(header: Header) -> str:
    """The GTID a record's message carries: its binlog transaction's, and none for a snapshot
    row, which comes from no transaction (Debezium's snapshot reads carry none either). The
    record's Kafka headers still name the stream position where its chunk went in
    (``binlog_headers``, the ``binlog.gtid`` header included)."""
    return "" if isinstance(header, SnapshotHeader) else header.gtid
