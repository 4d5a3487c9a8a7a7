"""Pure pieces without Spark: ALTER TABLE clauses and reconcile's canonical values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from spark_jobs.ddl import (
    AddColumn,
    ChangeColumn,
    DropColumn,
    OtherClause,
    RenameColumn,
    parse_alter,
)
from spark_jobs.reconcile import canonical


def test_alter_clauses_are_read_as_column_changes_and_others() -> None:
    sql = (
        "/* by hand */ ALTER TABLE `shop`.`orders` ADD COLUMN extra INT DEFAULT 7, "
        "add (x decimal(10,2) unsigned not null, y enum('p,q','r') NOT NULL), "
        "DROP COLUMN IF EXISTS `old col`, add index i (x), modify y int, "
        "ADD c DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) COMMENT 'default 5', "
        "ADD n varchar(10) default 'it''s' after id, ADD b BIT(4) DEFAULT b'101', "
        "ADD g INT AS (extra + 1) VIRTUAL, ADD d DATE NOT NULL, ADD z TEXT, DROP PRIMARY KEY"
    )
    assert parse_alter(sql) == [
        AddColumn("extra", "int", "7"),
        AddColumn("x", "decimal(10,2) unsigned", "0"),
        AddColumn("y", "enum('p,q','r')", "p,q"),
        DropColumn("old col"),
        OtherClause("add index i (x)"),
        ChangeColumn("y", "y", "int"),
        AddColumn("c", "datetime(3)", None, fill_known=False),
        AddColumn("n", "varchar(10)", "it's", position="id"),
        AddColumn("b", "bit(4)", "5"),
        AddColumn("g", "int", None, fill_known=False),
        AddColumn("d", "date", "0000-00-00"),
        AddColumn("z", "text", None),
        OtherClause("DROP PRIMARY KEY"),
    ]


def test_renames_changes_and_modifies_say_the_new_name_type_and_place() -> None:
    sql = (
        "ALTER TABLE t RENAME COLUMN `b` TO `b b`, CHANGE COLUMN bb b2 BIGINT NOT NULL, "
        "MODIFY c VARCHAR(20) FIRST, CHANGE IF EXISTS x y DECIMAL(10, 2) AFTER `id`, "
        "MODIFY COLUMN z TEXT COMMENT 'after all', ADD e INT FIRST, RENAME INDEX i TO j, "
        "RENAME TO u, CHANGE"
    )
    assert parse_alter(sql) == [
        RenameColumn("b", "b b"),
        ChangeColumn("bb", "b2", "bigint"),
        ChangeColumn("c", "c", "varchar(20)", position=""),
        ChangeColumn("x", "y", "decimal(10, 2)", position="id"),
        ChangeColumn("z", "z", "text"),
        AddColumn("e", "int", None, position=""),
        OtherClause("RENAME INDEX i TO j"),
        OtherClause("RENAME TO u"),
        OtherClause("CHANGE"),
    ]


@pytest.mark.parametrize(
    "sql", ["CREATE TABLE t (a INT)", "TRUNCATE t", "RENAME TABLE a TO b", "", "ALTER TABLE"]
)
def test_statements_other_than_alter_table_are_not_parsed(sql: str) -> None:
    assert parse_alter(sql) is None


@pytest.mark.parametrize(
    ("data_type", "source", "mirror"),
    [
        ("bigint", 18446744073709551615, Decimal("18446744073709551615")),
        ("bit", b"\x02\x81", 641),
        ("decimal", Decimal("1.50"), Decimal("1.50")),
        ("float", 1.1, 1.100000023841858),
        ("date", "0000-00-00", "0000-00-00"),
        ("datetime", "0000-00-00 00:00:00.000", "0000-00-00 00:00:00.000"),
        ("datetime", dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(2024, 1, 2, 3, 4, 5)),
        ("timestamp", dt.datetime(2024, 1, 2, 3, 4, 5, 120000), "2024-01-02 03:04:05.120000"),
        ("time", dt.timedelta(days=-35, seconds=3600, microseconds=877000), "-838:59:59.123"),
        ("binary", b"\x01\x02\x00\x00", bytearray(b"\x01\x02\x00\x00")),
        ("varchar", "ünï😀", "ünï😀"),
    ],
)
def test_canonical_values_agree_between_pymysql_and_spark(
    data_type: str, source: object, mirror: object
) -> None:
    assert canonical(data_type, source) == canonical(data_type, mirror)


def test_canonical_values_tell_real_differences_apart() -> None:
    assert canonical("decimal", Decimal("1.50")) != canonical("decimal", Decimal("1.5"))
    assert canonical("binary", b"\x01") != canonical("binary", b"\x01\x00")
    assert canonical("time", "00:00:01") != canonical("time", "-00:00:01")
    assert canonical("date", "0000-00-00") != canonical("date", None)
