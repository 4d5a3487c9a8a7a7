"""A chunk's rows read by the compiled path (``bridge.snapshot.result.fetch_rows``) are the
rows PyMySQL's cursor reads, value for value and type for type, on MariaDB and MySQL: every
table of the snapshot type corpus (a megabyte BLOB among them, over many socket reads), read
through ``describe_table``'s SELECT list on a prepared connection, which stays usable after."""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from bridge import native
from bridge.parse.binlog.values import DecodeOptions
from bridge.snapshot.result import READ_BYTES, fetch_rows
from bridge.snapshot.rows import describe_table, prepare_connection
from tests.conftest import MysqlEndpoint
from tests.integration.binlog_helpers import Connection
from tests.integration.test_snapshot_rows import _create_and_fill
from tests.native_paths import compiled_module

pytestmark = pytest.mark.both_servers


def _typed(rows: Any) -> list[list[tuple[type, Any]]]:
    return [[(type(value), value) for value in row] for row in rows]


def test_compiled_rows_are_pymysqls_rows(
    mysql: MysqlEndpoint,
    admin_connection: Connection,
    scratch_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled_module()
    tables, _, _ = _create_and_fill(mysql, admin_connection, scratch_schema)
    prepare_connection(admin_connection, DecodeOptions())
    compared = largest = 0
    for name in tables:
        table = describe_table(admin_connection, scratch_schema, name, DecodeOptions())
        assert table is not None
        statement = f"SELECT {table.select_list} FROM `{scratch_schema}`.`{name}` WHERE 1 = %s"
        got = fetch_rows(admin_connection, statement, (1,))
        with monkeypatch.context() as patch:
            patch.setattr(native, "module", None)  # the twin: PyMySQL's cursor
            expected = fetch_rows(admin_connection, statement, (1,))
        assert _typed(got) == _typed(expected), name
        compared += sum(len(row) for row in got)
        largest = max([largest, *(len(v) for row in got for v in row if isinstance(v, bytes))])
    assert compared > 300
    assert largest > 4 * READ_BYTES  # a row over many reads of the socket
    # The connection carries on: the result was read to its end.
    with admin_connection.cursor() as cur:
        cur.execute("SELECT 41 + 1")
        assert cur.fetchone() == (42,)


def test_an_empty_result_and_a_failing_select_are_pymysqls(
    admin_connection: Connection, scratch_schema: str
) -> None:
    compiled_module()
    prepare_connection(admin_connection, DecodeOptions())
    assert list(fetch_rows(admin_connection, "SELECT 1 FROM DUAL WHERE 1 = %s", (0,))) == []
    with pytest.raises(pymysql.err.ProgrammingError) as raised:
        fetch_rows(admin_connection, f"SELECT * FROM `{scratch_schema}`.nowhere WHERE 1 = %s", (1,))
    assert raised.value.args[0] == 1146
    assert list(fetch_rows(admin_connection, "SELECT %s + 1", (1,))) == [(2,)]
