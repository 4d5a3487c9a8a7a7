"""The chunk query: expanded keyset pagination, quoted names."""

from __future__ import annotations

from bridge.snapshot.chunks import after_key_condition, after_key_params, chunk_query, quote_name


def test_one_key_column() -> None:
    assert after_key_condition(["id"]) == "`id` > %s"
    assert after_key_params([7]) == (7,)


def test_a_composite_key_is_expanded_column_by_column() -> None:
    assert after_key_condition(["a", "b", "c"]) == (
        "`a` > %s OR (`a` = %s AND `b` > %s) OR (`a` = %s AND `b` = %s AND `c` > %s)"
    )
    assert after_key_params([1, "x", b"\x00"]) == (1, 1, "x", 1, "x", b"\x00")


def test_names_are_quoted_with_backquotes_doubled() -> None:
    assert quote_name("we`ird") == "`we``ird`"
    query = chunk_query("my db", "t`1", "`id`, `v`", ["id"], 500)
    assert query.first == "SELECT `id`, `v` FROM `my db`.`t``1` ORDER BY `id` LIMIT 500"
    assert query.after == (
        "SELECT `id`, `v` FROM `my db`.`t``1` WHERE `id` > %s ORDER BY `id` LIMIT 500"
    )


def test_the_statement_for_the_first_chunk_and_the_next() -> None:
    query = chunk_query("s", "t", "*", ["a", "b"], 10)
    assert query.statement(None) == (query.first, ())
    statement, params = query.statement((3, "k"))
    assert "ORDER BY `a`, `b` LIMIT 10" in statement
    assert params == (3, 3, "k")
