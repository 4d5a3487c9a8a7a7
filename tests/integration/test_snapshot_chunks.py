"""The chunk query reads a range of the key's index on both servers (EXPLAIN), where a
row-value comparison scans the index from its start (bridge/snapshot/chunks.py)."""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from bridge.snapshot.chunks import chunk_query
from tests.conftest import MysqlEndpoint

pytestmark = [pytest.mark.services, pytest.mark.both_servers]


def _explain(conn: Any, mysql: MysqlEndpoint, sql: str, params: tuple[Any, ...]) -> dict[str, Any]:
    # MySQL 9's EXPLAIN may default to the tree format; MariaDB knows no FORMAT=TRADITIONAL.
    explain = "EXPLAIN " if mysql.flavor == "mariadb" else "EXPLAIN FORMAT=TRADITIONAL "
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(explain + sql, params)
        (plan,) = cur.fetchall()
        return dict(plan)


def test_the_expanded_keyset_condition_is_a_range_on_the_primary_key(
    admin_connection: Any, scratch_schema: str, mysql: MysqlEndpoint
) -> None:
    with admin_connection.cursor() as cur:
        cur.execute(
            f"CREATE TABLE `{scratch_schema}`.pairs (region VARCHAR(8) NOT NULL, n INT NOT NULL, "
            "v INT, PRIMARY KEY (region, n))"
        )
        cur.executemany(
            f"INSERT INTO `{scratch_schema}`.pairs VALUES (%s, %s, 0)",
            [(r, n) for r in ("ap", "eu", "sa", "us") for n in range(500)],
        )
        cur.execute(f"ANALYZE TABLE `{scratch_schema}`.pairs")
    query = chunk_query(scratch_schema, "pairs", "`region`, `n`, `v`", ["region", "n"], 100)
    plan = _explain(admin_connection, mysql, *query.statement(("eu", 250)))
    assert (plan["type"], plan["key"]) == ("range", "PRIMARY"), plan
    # The row-value form scans the index from its start on both servers (the reason for the
    # expanded form; the check would see it).
    row_value = query.after.replace(
        "`region` > %s OR (`region` = %s AND `n` > %s)", "(`region`, `n`) > (%s, %s)"
    )
    assert row_value != query.after
    assert _explain(admin_connection, mysql, row_value, ("eu", 250))["type"] == "index"
