"""The snapshot plan: the destination's filter narrowed by snapshot.tables, sorted."""

from __future__ import annotations

from typing import Any

from bridge.config import DestinationConfig
from bridge.snapshot.planner import fresh_plan, selected_tables


def destination(**extra: Any) -> DestinationConfig:
    return DestinationConfig.model_validate(
        {
            "name": "shop",
            "source": {"address": "db:3306", "username": "canal", "slave_id": 9},
            "mq": {"topic": "shop"},
            **extra,
        }
    )


NAMES = [("shop", "orders"), ("shop", "lines"), ("crm", "users"), ("shop", "audit_log")]


def test_every_table_the_filter_keeps_sorted() -> None:
    config = destination(filter={"regex": "shop\\..*", "black_regex": "shop\\.audit_.*"})
    assert selected_tables(config, NAMES) == ["shop.lines", "shop.orders"]


def test_snapshot_tables_narrows_but_never_widens_the_filter() -> None:
    config = destination(
        filter={"regex": "shop\\..*"}, snapshot={"tables": "shop\\.orders,crm\\.users"}
    )
    assert selected_tables(config, NAMES) == ["shop.orders"]


def test_no_filter_means_every_table() -> None:
    assert selected_tables(destination(), NAMES) == [
        "crm.users",
        "shop.audit_log",
        "shop.lines",
        "shop.orders",
    ]


class _Cursor:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows
        self.executed: list[tuple[str, Any]] = []

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def execute(self, sql: str, params: Any) -> None:
        self.executed.append((sql, params))

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


class _Conn:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.cur = _Cursor(rows)

    def cursor(self) -> _Cursor:
        return self.cur


def test_a_fresh_plan_reads_base_tables_outside_system_schemas() -> None:
    conn = _Conn([(b"shop", b"orders"), ("shop", "lines")])  # binary results give bytes
    plan = fresh_plan(conn, destination())
    assert [(t.table, t.last_key, t.rows, t.done) for t in plan.tables] == [
        ("shop.lines", None, 0, False),
        ("shop.orders", None, 0, False),
    ]
    sql, params = conn.cur.executed[0]
    assert "TABLE_TYPE = 'BASE TABLE'" in sql
    assert "mysql" in params and "sys" in params
