"""``binlog_row_metadata=MINIMAL``: the TABLE_MAP carries no column names, so they come from the
live schema, as canal takes them from its table-meta cache — on both servers."""

from __future__ import annotations

import pymysql
import pytest

from bridge.entry import EntryType, row_images
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import execute, master_position, read_entries, source_config

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

Connection = pymysql.connections.Connection  # type: ignore[type-arg]


def test_minimal_metadata_takes_names_and_keys_from_the_live_schema(
    mysql: MysqlEndpoint, admin_connection: Connection, scratch_schema: str
) -> None:
    table = f"`{scratch_schema}`.minimal"
    execute(
        admin_connection,
        f"CREATE TABLE {table} (id INT PRIMARY KEY, label VARCHAR(20), amount DECIMAL(8,2))",
    )
    start = master_position(admin_connection)
    try:
        # Global only on both servers; new sessions (and their TABLE_MAPs) see it.
        execute(admin_connection, "SET GLOBAL binlog_row_metadata = MINIMAL")
        writer = pymysql.connect(
            host=mysql.host,
            port=mysql.port,
            user=mysql.admin_user,
            password=mysql.admin_password,
            autocommit=True,
        )
        try:
            execute(
                writer,
                f"INSERT INTO {table} VALUES (1, 'ünï', 12.50)",
                f"UPDATE {table} SET amount = 13.75 WHERE id = 1",
            )
        finally:
            writer.close()
    finally:
        execute(admin_connection, "SET GLOBAL binlog_row_metadata = FULL")
    end = master_position(admin_connection)
    rows = [
        entry
        for entry in read_entries(source_config(mysql), start, end)
        if entry.entry_type is EntryType.ROWDATA
        and entry.row_change is not None
        and not entry.row_change.is_ddl
        and entry.header.table_name == "minimal"
    ]
    assert len(rows) == 2
    inserted, updated = (row_images(entry.row_change)[0].after for entry in rows)  # type: ignore[arg-type]
    assert [(c.name, c.value, c.is_key) for c in inserted] == [
        ("id", "1", True),
        ("label", "ünï", False),
        ("amount", "12.50", False),
    ]
    assert [c.name for c in updated if c.updated] == ["amount"]
