"""Builders for Entries, shared by the mq tests through the ``make`` fixture, and readers of
canal's protobuf records."""

from __future__ import annotations

import pytest

from bridge.entry import Column, Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.mq.canal_protocol import canal_packet_pb2 as packets
from bridge.mq.canal_protocol import entry_protocol_pb2 as pb
from bridge.mq.records import OutgoingRecord
from bridge.types import JdbcType


class EntryMaker:
    """Short-hand constructors so that tests read like the change they describe."""

    def __init__(self) -> None:
        self.offset = 4

    def col(
        self,
        name: str,
        value: str | None,
        *,
        key: bool = False,
        updated: bool = False,
        sql_type: int = JdbcType.VARCHAR,
        mysql_type: str = "varchar(64)",
        index: int = 0,
    ) -> Column:
        return Column(
            index=index,
            sql_type=int(sql_type),
            name=name,
            is_key=key,
            updated=updated,
            is_null=value is None,
            value=value or "",
            mysql_type=mysql_type,
        )

    def header(self, schema: str = "", table: str = "", gtid: str = "") -> Header:
        self.offset += 100
        return Header(
            logfile_name="mysql-bin.000003",
            logfile_offset=self.offset,
            server_id=1,
            execute_time=1_700_000_000_000,
            schema_name=schema,
            table_name=table,
            gtid=gtid,
            event_length=100,
        )

    def begin(self) -> Entry:
        return Entry(self.header(), EntryType.TRANSACTIONBEGIN)

    def end(self) -> Entry:
        return Entry(self.header(), EntryType.TRANSACTIONEND, transaction_id="77")

    def heartbeat(self) -> Entry:
        return Entry(self.header(), EntryType.HEARTBEAT)

    def rows(
        self,
        event: EventType,
        rows: list[RowData],
        schema: str = "shop",
        table: str = "orders",
        gtid: str = "",
    ) -> Entry:
        change = RowChange(event_type=event, row_datas=tuple(rows))
        return Entry(self.header(schema, table, gtid), EntryType.ROWDATA, change)

    def ddl(
        self,
        sql: str,
        event: EventType = EventType.ALTER,
        schema: str = "shop",
        table: str = "orders",
    ) -> Entry:
        change = RowChange(event_type=event, is_ddl=True, sql=sql, ddl_schema_name=schema)
        return Entry(self.header(schema, table), EntryType.ROWDATA, change)

    def order(
        self, order_id: str, note: str | None = "n", region: str = "eu"
    ) -> tuple[Column, ...]:
        """An ``orders`` row image: id (bigint, key), region, note."""
        return (
            self.col("id", order_id, key=True, sql_type=JdbcType.BIGINT, mysql_type="bigint(20)"),
            self.col("region", region, mysql_type="char(2)", sql_type=JdbcType.CHAR),
            self.col("note", note),
        )

    def insert(self, *ids: str, schema: str = "shop", table: str = "orders") -> Entry:
        return self.rows(
            EventType.INSERT, [RowData(after=self.order(i)) for i in ids], schema, table
        )


@pytest.fixture
def make() -> EntryMaker:
    return EntryMaker()


def decode(record: OutgoingRecord) -> tuple[packets.Packet, int, list[pb.Entry]]:
    """A protobuf record read as canal's ``CanalMessageDeserializer`` reads it: its packet,
    batch id and entries."""
    packet = packets.Packet.FromString(record.value)
    assert packet.type == packets.MESSAGES
    messages = packets.Messages.FromString(packet.body)
    return packet, messages.batch_id, [pb.Entry.FromString(m) for m in messages.messages]


def change_of(entry: pb.Entry) -> pb.RowChange:
    assert entry.entryType == pb.ROWDATA
    return pb.RowChange.FromString(entry.storeValue)
