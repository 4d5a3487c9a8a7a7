"""Routing must match canal exactly; expected hashes were computed with Java's String.hashCode."""

from __future__ import annotations

from typing import ClassVar

import pytest

from bridge.config.rules import RuleSyntaxError
from bridge.mq.routing import (
    CanalPartitionRouter,
    CanalTopicRouter,
    TopicPartitions,
    java_string_hash,
    partition_of,
    record_key,
)

INT_MIN = -(2**31)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("polygenelubricants", INT_MIN),
        ("orders", -1008770331),
        ("Aa", 2112),
        ("BB", 2112),
        ("\U0001f600", 1772899),  # one astral char = two UTF-16 surrogates
        ("a\U0001f600b", 57849694),
        ("订单", 1129459),
        ("héllo wörld ✓ \U0001d11e", -1593959810),
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_string_hash_accepts_lone_surrogates() -> None:
    assert java_string_hash("\ud83d") == 0xD83D


@pytest.mark.parametrize(
    ("h", "n", "expected"),
    [
        (INT_MIN, 3, 2),
        (INT_MIN, 7, 2),
        (-1008770331, 3, 0),
        (-1008770331, 7, 2),
        (97, 7, 6),
        (0, 5, 0),
    ],
)
def test_partition_of_matches_canal_double_abs(h: int, n: int, expected: int) -> None:
    # Java: Math.abs(Math.abs(h) % n); Math.abs(MIN_VALUE) stays negative, the second abs fixes it.
    assert partition_of(h, n) == expected


class TestTopicRouter:
    DOC_RULES = r"mytest1.user,topic2:mytest2\..*,.*\..*"

    def test_static_topic_without_rules(self) -> None:
        router = CanalTopicRouter("my.topic")
        assert router.topic_for("shop", "orders") == "my.topic"
        assert not router.dynamic

    @pytest.mark.parametrize(
        ("schema", "table", "topic"),
        [
            ("mytest1", "user", "mytest1_user"),
            ("MyTest1", "User", "mytest1_user"),
            ("mytest2", "orders", "topic2"),
            ("other", "T1", "other_t1"),
        ],
    )
    def test_design_doc_example(self, schema: str, table: str, topic: str) -> None:
        assert CanalTopicRouter("example", self.DOC_RULES).topic_for(schema, table) == topic

    def test_schema_patterns_are_tried_against_the_schema(self) -> None:
        router = CanalTopicRouter("example", "mytest1;topic3:shop.*")
        assert router.topic_for("mytest1", "x") == "mytest1"
        assert router.topic_for("shop_eu", "x") == "topic3"
        assert router.topic_for("other", "x") == "example"

    def test_full_name_pass_beats_earlier_schema_item(self) -> None:
        # canal tries every item against schema.table before trying any against the schema.
        router = CanalTopicRouter("example", "by_schema:shop,shop.orders")
        assert router.topic_for("shop", "orders") == "shop_orders"
        assert router.topic_for("shop", "users") == "by_schema"

    def test_table_regex_is_not_tried_against_the_schema(self) -> None:
        router = CanalTopicRouter("example", r"t:shop\..*")
        assert router.topic_for("shop", "") == "example"
        assert router.topic_for("shop", "a") == "t"

    def test_schema_regex_is_not_tried_against_schema_table(self) -> None:
        router = CanalTopicRouter("example", "t:shop.orders.*")
        # "shop.orders.*" has no "\." so canal only tests it against the schema name.
        assert router.topic_for("shop", "orders") == "example"
        assert router.topic_for("shop.ordersx", "a") == "example"  # a dotted name never
        assert router.topic_for("shopxordersy", "a") == "t"

    def test_missing_schema_or_table_goes_to_static_topic_with_dots_replaced(self) -> None:
        router = CanalTopicRouter("my.topic", ".*")
        assert router.topic_for("", "orders") == "my_topic"
        assert router.topic_for("shop", "") == "my_topic"
        # `.*` holds no literal dot escape, so it is a schema pattern: it routes by the schema name.
        assert router.topic_for("shop", "orders") == "shop"

    def test_explicit_topic_dots_replaced_and_blanks_trimmed(self) -> None:
        router = CanalTopicRouter("example", " a.b : shop ; c:d ")
        assert router.topic_for("shop", "t") == "a_b"
        assert router.topic_for("d", "t") == "c"

    def test_first_match_wins(self) -> None:
        router = CanalTopicRouter("example", r"first:shop\..*,second:shop\.orders")
        assert router.topic_for("shop", "orders") == "first"

    def test_results_are_cached(self) -> None:
        router = CanalTopicRouter("example", self.DOC_RULES)
        assert router.topic_for("mytest1", "user") is router.topic_for("mytest1", "user")

    @pytest.mark.parametrize("rules", [":shop", "t:(", "t:", "[a"])
    def test_bad_rules_raise(self, rules: str) -> None:
        with pytest.raises(RuleSyntaxError):
            CanalTopicRouter("example", rules)


class TestPartitionRouter:
    ROW: ClassVar[dict[str, str | None]] = {"id": "42", "region": "eu", "note": None}

    def test_without_rules_everything_goes_to_the_fixed_partition(self) -> None:
        router = CanalPartitionRouter("", fixed_partition=2)
        assert not router.hashing
        assert router.partition_for("shop", "orders", self.ROW, ["id"], 5) == 2
        assert router.partition_for("shop", "orders", None, [], 5) == 2

    def test_table_rule_hashes_the_table_name(self) -> None:
        router = CanalPartitionRouter(r".*\..*")
        assert router.partition_for("shop", "orders", self.ROW, ["id"], 3) == 0
        assert router.partition_for("shop", "orders", self.ROW, ["id"], 7) == 2

    def test_key_rule_xors_database_and_values(self) -> None:
        router = CanalPartitionRouter(r"shop\.orders:id")
        # Java: "shop".hashCode() ^ "42".hashCode() = 3529864, % 5 = 4
        assert router.partition_for("shop", "orders", self.ROW, [], 5) == 4

    def test_composite_key_rule(self) -> None:
        router = CanalPartitionRouter("shop.orders:id^region")
        row = {"id": "1", "region": "eu"}
        # Java: "shop" ^ "1" ^ "eu" = 3528311, % 4 = 3
        assert router.partition_for("shop", "orders", row, [], 4) == 3

    def test_database_hash_can_be_turned_off(self) -> None:
        router = CanalPartitionRouter("shop.orders:id", database_hash=False)
        assert router.partition_for("shop", "orders", self.ROW, [], 5) == 1662 % 5

    def test_pk_rule_uses_the_primary_key_names(self) -> None:
        router = CanalPartitionRouter(r".*\..*:$PK$")
        assert router.partition_for("shop", "orders", self.ROW, ["id"], 5) == 4
        # a table without a primary key hashes the database alone
        no_pk = router.partition_for("shop", "orders", self.ROW, [], 5)
        assert no_pk == partition_of(java_string_hash("shop"), 5)

    def test_null_and_missing_values_hash_as_empty_string(self) -> None:
        router = CanalPartitionRouter("shop.orders:note^absent")
        expected = partition_of(java_string_hash("shop"), 5)
        assert router.partition_for("shop", "orders", self.ROW, [], 5) == expected

    def test_columns_match_case_insensitively_and_count_once(self) -> None:
        for rules in ("shop.orders:ID", "shop.orders:id^Id"):
            router = CanalPartitionRouter(rules)
            assert router.partition_for("shop", "orders", self.ROW, [], 5) == 4

    def test_unmatched_table_and_row_less_messages_go_to_partition_zero(self) -> None:
        router = CanalPartitionRouter(r"shop\.orders:id", fixed_partition=3)
        assert router.partition_for("shop", "users", self.ROW, ["id"], 5) == 0
        assert router.partition_for("shop", "orders", None, ["id"], 5) == 0

    def test_first_matching_rule_wins_and_names_are_case_insensitive(self) -> None:
        router = CanalPartitionRouter(r"SHOP.ORDERS:id;.*\..*")
        assert router.rule_for("shop", "orders") is not None
        assert router.rule_for("shop", "orders").columns == ("id",)  # type: ignore[union-attr]
        assert router.rule_for("x", "y").by_table  # type: ignore[union-attr]

    @pytest.mark.parametrize("rules", [":id", "shop.orders:", "shop.orders:^", "(:id"])
    def test_bad_rules_raise(self, rules: str) -> None:
        with pytest.raises(RuleSyntaxError):
            CanalPartitionRouter(rules)


class TestTopicPartitions:
    def test_rules_override_the_default(self) -> None:
        counts = TopicPartitions(1, "test.*:4,mycanal:6")
        assert counts.count_for("test_orders") == 4
        assert counts.count_for("MyCanal") == 6
        assert counts.count_for("other") == 1

    @pytest.mark.parametrize("rules", ["x", "x:abc", "x:0", ":3", "(:3"])
    def test_bad_rules_raise(self, rules: str) -> None:
        with pytest.raises(RuleSyntaxError):
            TopicPartitions(1, rules)

    def test_default_must_be_positive(self) -> None:
        with pytest.raises(RuleSyntaxError):
            TopicPartitions(0)


@pytest.mark.parametrize(
    ("pk", "key"),
    [
        ((), b"shop.orders"),
        (("42",), b"shop.orders:42"),
        (("1", "eu"), b'shop.orders:["1","eu"]'),
        ((None,), b"shop.orders:[null]"),
        (("1", None), b'shop.orders:["1",null]'),
        (('a"b',), b'shop.orders:a"b'),
    ],
)
def test_record_key(pk: tuple[str | None, ...], key: bytes) -> None:
    assert record_key("shop", "orders", pk) == key


def test_record_key_without_table() -> None:
    assert record_key("shop", "") == b"shop"
