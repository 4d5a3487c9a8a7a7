"""Table and field filters, with canal's documented examples."""

from __future__ import annotations

import pytest

from bridge.entry import EntryType, EventType, RowData
from bridge.sink import FieldFilter, InvalidFilter, TableFilter
from tests.unit.store.factories import col, ddl, end, row

# -- table filter --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("regex", "name", "expected"),
    [
        (r".*\..*", "canal.test1", True),
        (r".*\..*", "other.x", True),
        (r"canal\..*", "canal.test1", True),
        (r"canal\..*", "canal.anything_else", True),
        (r"canal\..*", "canalx.test1", False),
        (r"canal\..*", "other.canal", False),
        (r"canal\.canal.*", "canal.canal", True),
        (r"canal\.canal.*", "canal.canal_2", True),
        (r"canal\.canal.*", "canal.test1", False),
        (r"canal\.test1", "canal.test1", True),
        (r"canal\.test1", "canal.test10", False),  # anchored at the end
        (r"canal\.test1", "xcanal.test1", False),  # anchored at the start
        (r"canal\.test1,canal\.test2", "canal.test2", True),
        (r"canal\.test1,canal\.test2", "canal.test3", False),
        (r"canal\..*,mysql\.test1", "mysql.test1", True),
        (r"canal\..*,mysql\.test1", "mysql.test2", False),
        (r"canal\..*, mysql\.test1 ", "mysql.test1", True),  # spaces around items
        (r"CANAL\.Test1", "canal.TEST1", True),  # case-insensitive
        (r"canal\.test1", "CANAL.test1", True),
        ("", "anything.at_all", True),  # empty white list accepts all
        (" , ", "anything.at_all", True),
        (r"shop\.order_\d+", "shop.order_2024", True),
        (r"shop\.order_\d+", "shop.order_x", False),
    ],
)
def test_white_regex(regex: str, name: str, expected: bool) -> None:
    schema, table = name.split(".")
    f = TableFilter(regex)
    assert f.accepts(schema, table) is expected
    assert f.accepts_name(name) is expected


@pytest.mark.parametrize(
    ("regex", "black", "name", "expected"),
    [
        ("", r"mysql\..*", "mysql.user", False),
        ("", r"mysql\..*", "shop.user", True),
        (r".*\..*", r"mysql\..*", "mysql.db", False),
        (r".*\..*", r"mysql\..*,shop\.tmp_.*", "shop.tmp_1", False),
        (r".*\..*", r"mysql\..*,shop\.tmp_.*", "shop.orders", True),
        (r"shop\..*", r"shop\.audit", "shop.audit", False),
        (r"shop\..*", r"SHOP\.AUDIT", "shop.audit", False),
        (r"shop\..*", r"shop\.audit", "shop.audit_log", True),  # black is anchored too
        (r"shop\..*", "", "shop.audit", True),  # empty black excludes none
        (r"shop\.orders", r"other\..*", "other.x", False),  # white must still match
    ],
)
def test_black_regex(regex: str, black: str, name: str, expected: bool) -> None:
    schema, table = name.split(".")
    assert TableFilter(regex, black).accepts(schema, table) is expected


def test_alternation_inside_an_item_stays_anchored() -> None:
    f = TableFilter(r"a\.b|c\.d")
    assert f.accepts("a", "b")
    assert f.accepts("c", "d")
    assert not f.accepts("a", "bx")
    assert not f.accepts("xc", "d")


def test_verdicts_are_cached() -> None:
    f = TableFilter(r"shop\..*")
    for _ in range(3):
        assert f.accepts("shop", "orders")
    info = f.accepts.cache_info()
    assert (info.hits, info.misses) == (2, 1)


def test_cache_is_per_instance() -> None:
    white = TableFilter(r"shop\..*")
    black = TableFilter("", r"shop\..*")
    assert white.accepts("shop", "a") and not black.accepts("shop", "a")


@pytest.mark.parametrize("bad", [r"shop\.(orders", "[abc", "*x"])
def test_invalid_regex_is_reported_with_the_item(bad: str) -> None:
    with pytest.raises(InvalidFilter) as info:
        TableFilter(rf"ok\.table,{bad}")
    assert info.value.item == bad
    assert "regex" in str(info.value)


def test_invalid_black_regex_is_reported() -> None:
    with pytest.raises(InvalidFilter):
        TableFilter("", "(")


def test_java_style_double_backslash_is_not_rewritten() -> None:
    """``\\\\.`` is a literal backslash plus any char in a regex: the loader must unescape."""
    assert not TableFilter(r"shop\\..*").accepts("shop", "orders")


# -- field filter --------------------------------------------------------------------------

COLUMNS = (col(0, "id", "1", key=True), col(1, "subject", "s"), col(2, "Keywords", "k"))


def _names(columns: tuple[object, ...]) -> list[str]:
    return [c.name for c in columns]  # type: ignore[attr-defined]


def test_white_field_filter_keeps_only_listed_columns() -> None:
    f = FieldFilter("test1.t_product:id/keywords,test2.t_company:id/name")
    entry = row(0, "test1", "t_product", columns=COLUMNS)
    filtered = f.apply(entry)
    assert filtered.row_change is not None
    assert _names(filtered.row_change.row_datas[0].after) == ["id", "Keywords"]
    assert filtered.header == entry.header
    # the original entry is untouched (immutable model)
    assert entry.row_change is not None
    assert len(entry.row_change.row_datas[0].after) == 3


def test_white_field_filter_drops_unlisted_key_columns_like_canal() -> None:
    f = FieldFilter("test1.t_product:subject")
    filtered = f.apply(row(0, "test1", "t_product", columns=COLUMNS))
    assert filtered.row_change is not None
    assert _names(filtered.row_change.row_datas[0].after) == ["subject"]


def test_black_field_filter_drops_listed_columns() -> None:
    f = FieldFilter(black_field="test1.t_product:subject/KEYWORDS")
    filtered = f.apply(row(0, "TEST1", "T_Product", columns=COLUMNS))
    assert filtered.row_change is not None
    assert _names(filtered.row_change.row_datas[0].after) == ["id"]


def test_white_rule_wins_over_black_rule_for_the_same_table() -> None:
    f = FieldFilter("db.t:id/subject", "db.t:subject")
    filtered = f.apply(row(0, "db", "t", columns=COLUMNS))
    assert filtered.row_change is not None
    assert _names(filtered.row_change.row_datas[0].after) == ["id", "subject"]


def test_field_filter_applies_to_before_and_after_images() -> None:
    f = FieldFilter("db.t:id")
    entry = row(0, "db", "t", columns=COLUMNS, event_type=EventType.UPDATE)
    assert entry.row_change is not None
    updated = entry.row_change.__class__(
        EventType.UPDATE, row_datas=(RowData(before=COLUMNS, after=COLUMNS),) * 2
    )
    filtered = f.apply(entry.__class__(entry.header, EntryType.ROWDATA, updated))
    assert filtered.row_change is not None
    for data in filtered.row_change.row_datas:
        assert _names(data.before) == ["id"]
        assert _names(data.after) == ["id"]


def test_field_filter_leaves_other_tables_ddl_and_markers_alone() -> None:
    f = FieldFilter("db.t:id")
    other = row(0, "db", "other", columns=COLUMNS)
    assert f.apply(other) is other
    statement = ddl(0, "db", "t")
    assert f.apply(statement) is statement
    marker = end(0)
    assert f.apply(marker) is marker


def test_columns_for() -> None:
    f = FieldFilter("db.t:a/b", "db.u:c")
    assert f.columns_for("db", "x") is None
    keep_t = f.columns_for("DB", "T")
    assert keep_t is not None and keep_t("A") and not keep_t("c")
    keep_u = f.columns_for("db", "u")
    assert keep_u is not None and keep_u("a") and not keep_u("C")
    assert bool(f) and not FieldFilter()


def test_repeated_table_rules_merge() -> None:
    keep = FieldFilter("db.t:a,db.t:b").columns_for("db", "t")
    assert keep is not None and keep("a") and keep("b") and not keep("c")


@pytest.mark.parametrize(
    "bad", ["db.t", "dbt:a", "db.t:a:b", "db.t:", ".t:a", "db.:a", "db.t:/", ":a", r"db\.(t:a"]
)
def test_invalid_field_rules(bad: str) -> None:
    with pytest.raises(InvalidFilter) as info:
        FieldFilter(f"ok.t:a,{bad}")
    assert info.value.item == bad.strip()


def test_field_rule_with_regex_table_name() -> None:
    f = FieldFilter(r"shop\.order_\d+:id")
    keep = f.columns_for("SHOP", "order_7")
    assert keep is not None and keep("ID") and not keep("note")
    assert f.columns_for("shop", "order_x") is None
    assert f.columns_for("shop", "xorder_7") is None, "anchored"


def test_plain_field_rule_name_is_exact() -> None:
    f = FieldFilter("db.t:id")
    assert f.columns_for("db", "t") is not None
    assert f.columns_for("dbx", "t") is None
    assert f.columns_for("db", "tt") is None


def test_field_filter_verdicts_are_cached() -> None:
    f = FieldFilter("db.t:id")
    first = f.columns_for("db", "t")
    assert f.columns_for("db", "t") is first
    assert f.columns_for.cache_info().hits == 1
